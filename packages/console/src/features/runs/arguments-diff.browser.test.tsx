import { expect, test } from 'vitest';
import { renderComponent } from '../../test/render-component';
import { ArgumentsDiff } from './arguments-diff';

test('an edited call shows each argument changed, added and removed, as the model sent it and as approved', async () => {
  const screen = await renderComponent(
    <ArgumentsDiff
      model={{ query: 'refunds', filters: { lang: 'en', year: 2025 }, k: 5 }}
      approved={{ query: 'refund policy', filters: { lang: 'en' }, k: 5, mode: 'lexical' }}
    />,
  );
  await expect.element(screen.getByText('Arguments edited by the approver (3 changes)')).toBeVisible();
  const rows = screen.getByRole('row');
  // The header, then the changes in the model's order, an added one last.
  await expect.element(rows.nth(1)).toHaveTextContent('query"refunds""refund policy"');
  await expect.element(rows.nth(2)).toHaveTextContent('filters.year2025(removed)');
  await expect.element(rows.nth(3)).toHaveTextContent('mode—"lexical"');
  expect(rows.elements()).toHaveLength(4);
  // What the model sent is struck through; both whole argument objects stay readable beside the table.
  await expect.element(rows.nth(1).getByRole('cell').nth(1)).toHaveStyle({ textDecorationLine: 'line-through' });
  await expect.element(screen.getByText('As the model sent them')).toBeVisible();
  await expect.element(screen.getByText('As approved')).toBeVisible();
});
