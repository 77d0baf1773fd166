import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useClient } from '../../api';
import { ConfirmRemoval } from '../../confirm-removal';
import { connectorKeys } from './queries';
import type { Connector } from './shared';

/** Disconnecting deletes the connection's configuration (its credentials): the dialog names the connector and says so. */
export function DisconnectModal({ connector, onClose }: { connector: Connector | null; onClose(): void }) {
  const client = useClient();
  const queryClient = useQueryClient();
  const remove = useMutation({
    mutationFn: (c: Connector) => client.connectors.disconnect(c.id),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: connectorKeys.all });
      onClose();
    },
  });
  return (
    <ConfirmRemoval target={connector} title="Disconnect" confirm={`Disconnect ${connector?.name}`} removal={remove} onClose={onClose}>
      Disconnect <b>{connector?.name}</b>? Its configuration, credentials included, is deleted: agents lose what it gave them, and
      connecting again means typing them again.
    </ConfirmRemoval>
  );
}
