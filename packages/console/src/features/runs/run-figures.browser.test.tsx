import type { RunDetails } from '@agentry/client';
import { expect, test } from 'vitest';
import { finishedRun } from '../../test/fixtures';
import { renderComponent } from '../../test/render-component';
import { RunFigures } from './run-figures';

test('a run’s figures: its duration, tokens, cost and start in the browser’s locale (here en-US, UTC), and a link to its conversation', async () => {
  const screen = await renderComponent(<RunFigures run={finishedRun} />);
  await expect.element(screen.getByText('1 min 5 s')).toBeVisible();
  await expect.element(screen.getByText('12,345 in / 678 out tokens')).toBeVisible();
  await expect.element(screen.getByTestId('run-cost')).toHaveTextContent('$1,234.50');
  await expect.element(screen.getByText('12/6/2026, 10:00:00 AM')).toBeVisible();
  await expect.element(screen.getByText('finish stop')).toBeVisible();
  await expect
    .element(screen.getByRole('link', { name: 'conversation' }))
    .toHaveAttribute('href', '/playground?agentId=agt_1&conversationId=cnv_1');
});

test('a fraction of a cent keeps the digits that say it, where a sum of a cent or more is in cents', async () => {
  const screen = await renderComponent(<RunFigures run={{ ...finishedRun, cost: 0.000_42 }} />);
  await expect.element(screen.getByTestId('run-cost')).toHaveTextContent('$0.00042');
  await screen.rerender(<RunFigures run={{ ...finishedRun, cost: 0.019 }} />);
  await expect.element(screen.getByTestId('run-cost')).toHaveTextContent('$0.02');
});

test('a step a fallback model answered is named at the top of the run', async () => {
  const step: RunDetails['steps'][number] = {
    index: 0,
    text: '',
    toolCallIds: [],
    injected: [],
    finishReason: 'stop',
    usage: { inputTokens: 1, outputTokens: 1 },
    model: 'anthropic/claude-fallback',
    cost: 0,
    startedAt: null,
    completedAt: null,
    durationMs: null,
  };
  const screen = await renderComponent(<RunFigures run={{ ...finishedRun, steps: [step] }} />);
  await expect.element(screen.getByTestId('run-fallbacks')).toHaveTextContent('answered by fallback anthropic/claude-fallback');
});
