import { Alert, Button, Group, Modal, Stack, Text } from '@mantine/core';
import type { UseMutationResult } from '@tanstack/react-query';
import { type ReactNode, useEffect } from 'react';
import { messageOf } from './api';

/**
 * The dialog that asks before something is removed: what goes and what follows (`children`), the
 * server's refusal if it refuses (the dialog stays open), Cancel, and a red button naming the thing.
 * Open while `target` is set; `removal` is the mutation that removes it.
 */
export function ConfirmRemoval<T>({
  target,
  title,
  confirm,
  removal,
  onClose,
  children,
}: {
  target: T | null;
  title: string;
  /** The red button's words, naming what goes ("Delete Handbook"). */
  confirm: string;
  removal: UseMutationResult<unknown, unknown, T>;
  onClose(): void;
  children: ReactNode;
}) {
  // biome-ignore lint/correctness/useExhaustiveDependencies: a new dialog starts without the last refusal
  useEffect(() => {
    if (target !== null) removal.reset();
  }, [target]);
  return (
    <Modal opened={target !== null} onClose={onClose} title={title}>
      <Stack>
        <Text>{children}</Text>
        {removal.error ? <Alert color="red">{messageOf(removal.error)}</Alert> : null}
        <Group justify="end">
          <Button variant="default" onClick={onClose}>
            Cancel
          </Button>
          <Button color="red" loading={removal.isPending} onClick={() => target !== null && removal.mutate(target)}>
            {confirm}
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}
