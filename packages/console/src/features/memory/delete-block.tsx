import type { MemoryBlock } from '@agentry/client';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useClient } from '../../api';
import { ConfirmRemoval } from '../../confirm-removal';
import { type MemoryScope, scopeName } from './limits';

/** Deleting a block names it and whose it is; its versions stay (its history can bring the text back). */
export function DeleteBlockModal({
  agentId,
  scope,
  block,
  onClose,
}: {
  agentId: string;
  scope: MemoryScope;
  block: MemoryBlock | null;
  onClose(): void;
}) {
  const client = useClient();
  const queryClient = useQueryClient();
  const remove = useMutation({
    mutationFn: (b: MemoryBlock) => client.agents.memory.delete(agentId, b.label, scope),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: ['memory', agentId] });
      onClose();
    },
  });
  return (
    <ConfirmRemoval target={block} title="Delete memory block" confirm={`Delete ${block?.label}`} removal={remove} onClose={onClose}>
      Delete <b>{block?.label}</b> of {scopeName(scope)}? The agent’s next runs no longer see its text. Its versions are kept.
    </ConfirmRemoval>
  );
}
