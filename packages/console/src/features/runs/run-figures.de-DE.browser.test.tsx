import { expect, test } from 'vitest';
import { finishedRun } from '../../test/fixtures';
import { renderComponent } from '../../test/render-component';
import { RunFigures } from './run-figures';

// This file runs in a German Chromium in Berlin (vitest.config.ts): the same run as run-figures.browser.test.tsx.
test('in a German browser the figures are German: comma decimals, dot thousands, the dollar after, Berlin’s time', async () => {
  const screen = await renderComponent(<RunFigures run={finishedRun} />);
  await expect.element(screen.getByTestId('run-cost')).toHaveTextContent('1.234,50 $');
  await expect.element(screen.getByText('12.345 in / 678 out tokens')).toBeVisible();
  await expect.element(screen.getByText('6.12.2026, 11:00:00')).toBeVisible();
});
