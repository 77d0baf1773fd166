import type { KnowledgeChunk } from '@agentry/client';
import { expect, test } from 'vitest';
import { answerWith, renderComponent } from '../../test/render-component';
import { PassageView } from './passage';

const chunk: KnowledgeChunk = {
  knowledgeBaseId: 'kb_handbook',
  documentId: 'doc_refunds',
  title: 'Refund policy',
  sourceUrl: 'https://example.com/refunds',
  version: 2,
  position: 0,
  chunkCount: 4,
  headingPath: ['Billing', 'Refunds'],
  text: 'Refunds are paid within 14 days of the request.',
};

const route = { path: '/knowledge/$baseId', url: '/knowledge/kb_handbook?document=doc_refunds&position=0' };

test('a cited passage shows its text, where it is in the document and its version; Next opens the passage after it', async () => {
  const asked: string[] = [];
  const answer: typeof fetch = async (input) => {
    asked.push(new URL(String(input)).pathname);
    return answerWith(200, chunk);
  };
  const screen = await renderComponent(<PassageView baseId="kb_handbook" documentId="doc_refunds" position={0} />, { answer, route });
  const passage = screen.getByTestId('passage');
  await expect.element(passage.getByTestId('passage-text')).toHaveTextContent('Refunds are paid within 14 days of the request.');
  await expect.element(passage.getByText('Refund policy')).toBeVisible();
  await expect.element(passage.getByText(/^Billing › Refunds · position 0 of 4 · version 2/)).toBeVisible();
  await expect.element(passage.getByRole('link', { name: 'source' })).toHaveAttribute('href', 'https://example.com/refunds');
  await expect.element(passage.getByRole('button', { name: '‹ Previous passage' })).toBeDisabled();
  expect(asked).toEqual(['/api/v1/knowledge-bases/kb_handbook/documents/doc_refunds/chunks/0']);

  await passage.getByRole('button', { name: 'Next passage ›' }).click();
  await expect.poll(() => screen.router.state.location.search).toEqual({ document: 'doc_refunds', position: 1 });
});

test('a passage no longer there (the document deleted or changed) says so', async () => {
  const answer: typeof fetch = async () => answerWith(404, { code: 'not_found', detail: 'no chunk 7 in document doc_refunds' });
  const screen = await renderComponent(<PassageView baseId="kb_handbook" documentId="doc_refunds" position={7} />, { answer, route });
  await expect
    .element(screen.getByTestId('passage-gone'))
    .toHaveTextContent(
      'This passage is not in the base any more (the document was deleted or changed): no chunk 7 in document doc_refunds',
    );
  await expect.element(screen.getByTestId('passage-text')).not.toBeInTheDocument();
});
