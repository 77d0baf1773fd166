import type { KnowledgeBase } from '@agentry/client';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useClient } from '../../api';
import { ConfirmRemoval } from '../../confirm-removal';

/** Deleting a base takes its documents and their chunks with it: the dialog names the base and what goes. */
export function DeleteBaseModal({ base, onClose, onDeleted }: { base: KnowledgeBase | null; onClose(): void; onDeleted(): void }) {
  const client = useClient();
  const queryClient = useQueryClient();
  const remove = useMutation({
    mutationFn: (b: KnowledgeBase) => client.knowledge.delete(b.id),
    onSuccess: (_, b) => {
      queryClient.removeQueries({ queryKey: ['knowledge', b.id] });
      void queryClient.invalidateQueries({ queryKey: ['knowledge', 'bases'] });
      onDeleted();
    },
  });
  const documents = base?.documentCount === 1 ? '1 document' : `${base?.documentCount ?? 0} documents`;
  return (
    <ConfirmRemoval target={base} title="Delete knowledge base" confirm={`Delete ${base?.name}`} removal={remove} onClose={onClose}>
      Delete <b>{base?.name}</b> and its {documents}? Agents searching it find nothing there any more, and the run history’s citations of it
      lead nowhere. This cannot be undone.
    </ConfirmRemoval>
  );
}
