import type { KnowledgeBase } from '@agentry/client';
import { Button } from '@mantine/core';
import { useState } from 'react';
import { expect, test } from 'vitest';
import { answerWith, renderComponent } from '../../test/render-component';
import { DeleteBaseModal } from './delete-base';

const handbook: KnowledgeBase = {
  id: 'kb_handbook',
  name: 'Handbook',
  description: null,
  embeddingModel: 'builtin/hash-embedding',
  rerankModel: null,
  chunking: { maxChars: 1200, overlapChars: 200 },
  documentCount: 3,
  chunkCount: 41,
  createdAt: '2026-12-01T09:00:00.000Z',
  updatedAt: '2026-12-01T09:00:00.000Z',
};

/** The base's menu item, as the knowledge page has it: it opens the dialog (ConfirmRemoval) for the base. */
function BaseWithDelete({ onDeleted }: { onDeleted(): void }) {
  const [target, setTarget] = useState<KnowledgeBase | null>(null);
  return (
    <>
      <Button onClick={() => setTarget(handbook)}>Delete…</Button>
      <DeleteBaseModal
        base={target}
        onClose={() => setTarget(null)}
        onDeleted={() => {
          setTarget(null);
          onDeleted();
        }}
      />
    </>
  );
}

/** The requests the dialog sent, and how the server answers them. */
function server(answers: Response[]) {
  const sent: string[] = [];
  const answer: typeof fetch = async (input, init) => {
    sent.push(`${init?.method ?? 'GET'} ${new URL(String(input)).pathname}`);
    return answers.shift() ?? answerWith(500, { code: 'unexpected', detail: 'no answer left' });
  };
  return { sent, answer };
}

test('the dialog names the base and what goes with it; Cancel closes it and deletes nothing', async () => {
  const { sent, answer } = server([]);
  const screen = await renderComponent(<BaseWithDelete onDeleted={() => {}} />, { answer });
  await screen.getByRole('button', { name: 'Delete…' }).click();
  const dialog = screen.getByRole('dialog', { name: 'Delete knowledge base' });
  await expect.element(dialog).toHaveTextContent('Delete Handbook and its 3 documents?');
  await dialog.getByRole('button', { name: 'Cancel' }).click();
  await expect.element(dialog).not.toBeInTheDocument();
  expect(sent).toEqual([]);
});

test('the red button, naming the base, deletes it and closes the dialog', async () => {
  const { sent, answer } = server([answerWith(204)]);
  let deleted = 0;
  const screen = await renderComponent(<BaseWithDelete onDeleted={() => deleted++} />, { answer });
  await screen.getByRole('button', { name: 'Delete…' }).click();
  await screen.getByRole('button', { name: 'Delete Handbook' }).click();
  await expect.element(screen.getByRole('dialog')).not.toBeInTheDocument();
  expect(sent).toEqual(['DELETE /api/v1/knowledge-bases/kb_handbook']);
  expect(deleted).toBe(1);
});

test('a refusal is said in the dialog, which stays open; opened again, it starts without it', async () => {
  const { answer } = server([answerWith(409, { code: 'knowledge_base_in_use', detail: 'Support bot searches this base' })]);
  const screen = await renderComponent(<BaseWithDelete onDeleted={() => {}} />, { answer });
  await screen.getByRole('button', { name: 'Delete…' }).click();
  const dialog = screen.getByRole('dialog', { name: 'Delete knowledge base' });
  await dialog.getByRole('button', { name: 'Delete Handbook' }).click();
  await expect.element(dialog.getByRole('alert')).toHaveTextContent('Support bot searches this base');
  await dialog.getByRole('button', { name: 'Cancel' }).click();
  await expect.element(dialog).not.toBeInTheDocument();
  await screen.getByRole('button', { name: 'Delete…' }).click();
  await expect.element(dialog).toBeVisible();
  await expect.element(dialog.getByText('Support bot searches this base')).not.toBeInTheDocument();
});
