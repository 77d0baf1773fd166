import { Alert, Button, Group, Modal, Stack, Text } from '@mantine/core';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useEffect } from 'react';
import { messageOf, useClient } from '../../api';
import type { Connector } from './shared';

/** Disconnecting deletes the connection's configuration (its credentials): the dialog names the connector and says so. */
export function DisconnectModal({ connector, onClose }: { connector: Connector | null; onClose(): void }) {
  const client = useClient();
  const queryClient = useQueryClient();
  const remove = useMutation({
    mutationFn: (id: string) => client.connectors.disconnect(id),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: ['connectors'] });
      onClose();
    },
  });
  // biome-ignore lint/correctness/useExhaustiveDependencies: a new dialog starts without the last refusal
  useEffect(() => {
    if (connector) remove.reset();
  }, [connector]);
  return (
    <Modal opened={connector !== null} onClose={onClose} title="Disconnect">
      <Stack>
        <Text>
          Disconnect <b>{connector?.name}</b>? Its configuration, credentials included, is deleted: agents lose what it gave them, and
          connecting again means typing them again.
        </Text>
        {remove.error && <Alert color="red">{messageOf(remove.error)}</Alert>}
        <Group justify="end">
          <Button variant="default" onClick={onClose}>
            Cancel
          </Button>
          <Button color="red" loading={remove.isPending} onClick={() => connector && remove.mutate(connector.id)}>
            Disconnect {connector?.name}
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}
