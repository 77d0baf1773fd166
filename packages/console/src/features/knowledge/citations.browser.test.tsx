import { expect, test } from 'vitest';
import { answerWith, renderComponent } from '../../test/render-component';
import { RunCitations } from './citations';

const passage = (position: number, extra: Record<string, unknown> = {}) => ({
  knowledgeBaseId: 'kb_handbook',
  documentId: 'doc_refunds',
  title: 'Refund policy',
  sourceUrl: null,
  position,
  headingPath: ['Billing'],
  score: 0.5,
  snippet: `passage ${position}`,
  ...extra,
});

test("a chat answer's sources: each passage once, numbered, linking to it; only an http(s) source is a link", async () => {
  const asked: string[] = [];
  const answer: typeof fetch = async (input) => {
    asked.push(new URL(String(input)).pathname);
    return answerWith(200, {
      id: 'run_1',
      citations: [passage(2, { sourceUrl: 'https://example.com/refunds' }), passage(5, { sourceUrl: 'javascript:alert(1)' }), passage(2)],
    });
  };
  const screen = await renderComponent(<RunCitations runId="run_1" />, { answer });
  const sources = screen.getByTestId('citations');
  await expect.element(sources.getByText('Sources', { exact: true })).toBeVisible();
  await expect.element(sources.getByTestId('citation').nth(1)).toBeVisible();
  expect(sources.getByTestId('citation').elements()).toHaveLength(2);
  await expect.element(sources.getByTestId('citation').nth(0)).toHaveTextContent('[1] Refund policy Billing · position 2');
  await expect.element(sources.getByTestId('citation').nth(1)).toHaveTextContent('[2] Refund policy Billing · position 5');
  await expect
    .element(sources.getByRole('link', { name: 'Refund policy' }).nth(1))
    .toHaveAttribute('href', '/knowledge/kb_handbook?document=doc_refunds&position=5');
  await expect.element(sources.getByRole('link', { name: 'https://example.com/refunds' })).toBeVisible();
  await expect.element(sources.getByText('javascript:alert(1)')).not.toBeInTheDocument();
  expect(asked).toEqual(['/api/v1/runs/run_1']);
});
