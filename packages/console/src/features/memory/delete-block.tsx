import type { MemoryBlock } from '@agentry/client';
import { Alert, Button, Group, Modal, Stack, Text } from '@mantine/core';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useEffect } from 'react';
import { messageOf, useClient } from '../../api';
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
    mutationFn: (label: string) => client.agents.memory.delete(agentId, label, scope),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: ['memory', agentId] });
      onClose();
    },
  });
  // biome-ignore lint/correctness/useExhaustiveDependencies: a new dialog starts without the last refusal
  useEffect(() => {
    if (block) remove.reset();
  }, [block]);
  return (
    <Modal opened={block !== null} onClose={onClose} title="Delete memory block">
      <Stack>
        <Text>
          Delete <b>{block?.label}</b> of {scopeName(scope)}? The agent’s next runs no longer see its text. Its versions are kept.
        </Text>
        {remove.error && <Alert color="red">{messageOf(remove.error)}</Alert>}
        <Group justify="end">
          <Button variant="default" onClick={onClose}>
            Cancel
          </Button>
          <Button color="red" loading={remove.isPending} onClick={() => block && remove.mutate(block.label)}>
            Delete {block?.label}
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}
