import { expect, test } from 'vitest';
import { renderComponent } from '../../test/render-component';
import { Citations } from './citations';

const refundPolicy = {
  knowledgeBaseId: 'kb_handbook',
  documentId: 'doc_refunds',
  title: 'Refund policy',
  sourceUrl: null,
  position: 3,
  headingPath: ['Billing', 'Refunds'],
  score: 0.8421,
  snippet: 'Refunds are paid within 14 days.',
};

test("a citation shows its title, heading path, position, score and snippet, and links to the passage on the base's page", async () => {
  const screen = await renderComponent(<Citations citations={[refundPolicy]} />);
  const citation = screen.getByTestId('citation');
  await expect.element(citation.getByText('Billing › Refunds')).toBeVisible();
  await expect.element(citation.getByText('position 3')).toBeVisible();
  await expect.element(citation.getByText('score 0.842')).toBeVisible();
  await expect.element(citation.getByText('Refunds are paid within 14 days.')).toBeVisible();
  await expect
    .element(citation.getByRole('link', { name: 'Refund policy' }))
    .toHaveAttribute('href', '/knowledge/kb_handbook?document=doc_refunds&position=3');
});

test('a citation not shaped as knowledge_search’s is left out; none leaves no section', async () => {
  const screen = await renderComponent(<Citations citations={[{ url: 'https://example.com' }, { ...refundPolicy, title: null }]} />);
  await expect.element(screen.getByRole('heading', { name: 'Citations' })).toBeVisible();
  expect(screen.getByTestId('citation').elements()).toHaveLength(1);
  // Untitled, the link says the document.
  await expect.element(screen.getByRole('link', { name: 'doc_refunds' })).toBeVisible();

  await screen.rerender(<Citations citations={[{ url: 'https://example.com' }]} />);
  await expect.element(screen.getByRole('heading', { name: 'Citations' })).not.toBeInTheDocument();
});
