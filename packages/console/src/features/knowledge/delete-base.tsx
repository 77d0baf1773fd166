import type { KnowledgeBase } from '@agentry/client';
import { Alert, Button, Group, Modal, Stack, Text } from '@mantine/core';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useEffect } from 'react';
import { messageOf, useClient } from '../../api';

/** Deleting a base takes its documents and their chunks with it: the dialog names the base and what goes. */
export function DeleteBaseModal({ base, onClose, onDeleted }: { base: KnowledgeBase | null; onClose(): void; onDeleted(): void }) {
  const client = useClient();
  const queryClient = useQueryClient();
  const remove = useMutation({
    mutationFn: (id: string) => client.knowledge.delete(id),
    onSuccess: (_, id) => {
      queryClient.removeQueries({ queryKey: ['knowledge', id] });
      void queryClient.invalidateQueries({ queryKey: ['knowledge', 'bases'] });
      onDeleted();
    },
  });
  // biome-ignore lint/correctness/useExhaustiveDependencies: a new dialog starts without the last refusal
  useEffect(() => {
    if (base) remove.reset();
  }, [base]);
  const documents = base?.documentCount === 1 ? '1 document' : `${base?.documentCount ?? 0} documents`;
  return (
    <Modal opened={base !== null} onClose={onClose} title="Delete knowledge base">
      <Stack>
        <Text>
          Delete <b>{base?.name}</b> and its {documents}? Agents searching it find nothing there any more, and the run history’s citations
          of it lead nowhere. This cannot be undone.
        </Text>
        {remove.error && <Alert color="red">{messageOf(remove.error)}</Alert>}
        <Group justify="end">
          <Button variant="default" onClick={onClose}>
            Cancel
          </Button>
          <Button color="red" loading={remove.isPending} onClick={() => base && remove.mutate(base.id)}>
            Delete {base?.name}
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}
