import { Alert, Badge, Button, Card, Group, Loader, SimpleGrid, Stack, Table, Text, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { messageOf, useClient, useDenied } from '../../api';
import { AnchorLink } from '../../links';
import { ConnectForm } from './connect-form';
import { DisconnectModal } from './disconnect';
import { connectorsQuery } from './queries';
import { type Connector, shown } from './shared';

function ConnectorCard({ connector, onConnect, onDisconnect }: { connector: Connector; onConnect(): void; onDisconnect(): void }) {
  const denied = useDenied()('settings:write');
  const connection = connector.connection;
  return (
    <Card withBorder data-testid="connector">
      <Stack gap="xs">
        <Group justify="space-between">
          <Title order={2} size="h4">
            {connector.name}
          </Title>
          <Badge color={connector.connected ? 'green' : 'gray'}>{connector.connected ? 'connected' : 'not connected'}</Badge>
        </Group>
        <Text size="sm" c="dimmed">
          {connector.category} · {connector.description}
        </Text>
        {connection && (
          <>
            <Text size="xs" c="dimmed">
              connected {new Date(connection.connectedAt).toLocaleString()}
              {connection.connectedBy ? ` by ${connection.connectedBy}` : ''}
              {connection.updatedAt !== connection.connectedAt ? ` · changed ${new Date(connection.updatedAt).toLocaleString()}` : ''}
            </Text>
            <Table fz="xs" withRowBorders={false}>
              <Table.Tbody>
                {connector.fields
                  .filter((f) => connection.configuration[f.name] !== undefined)
                  .map((f) => (
                    <Table.Tr key={f.name}>
                      <Table.Td c="dimmed">{f.label}</Table.Td>
                      <Table.Td ff="monospace">{shown(connection.configuration[f.name])}</Table.Td>
                    </Table.Tr>
                  ))}
              </Table.Tbody>
            </Table>
          </>
        )}
        <Group gap="xs">
          <Button
            size="xs"
            variant={connector.connected ? 'default' : 'filled'}
            disabled={denied !== null}
            title={denied ?? undefined}
            onClick={onConnect}
          >
            {connector.connected ? 'Edit…' : 'Connect…'}
          </Button>
          {connector.connected && (
            <Button size="xs" color="red" variant="light" disabled={denied !== null} title={denied ?? undefined} onClick={onDisconnect}>
              Disconnect…
            </Button>
          )}
        </Group>
      </Stack>
    </Card>
  );
}

/**
 * The integration catalog with the tenant's connections (docs: /api/v1/connectors): connect one with
 * its configuration, change it, or disconnect it after a confirmation naming it. Reading takes
 * settings:read, changing settings:write.
 */
export function ConnectorsPage() {
  const client = useClient();
  const readDenied = useDenied()('settings:read');
  const [connecting, setConnecting] = useState<Connector | null>(null);
  const [disconnecting, setDisconnecting] = useState<Connector | null>(null);
  const connectors = useQuery({ ...connectorsQuery(client), enabled: !readDenied });
  const list = connectors.data?.connectors ?? [];
  const connected = list.filter((c) => c.connected).length;
  return (
    <Stack>
      <Title order={1} size="h2">
        Connectors
      </Title>
      <Text size="sm" c="dimmed">
        Outside services the tenant’s agents may use (the connectors tool group). Agents’ requests for one are under{' '}
        <AnchorLink to="/skills">Skills</AnchorLink>, Connectors.
      </Text>
      {readDenied && <Alert color="gray">The connectors are hidden: {readDenied}.</Alert>}
      {connectors.isPending && !readDenied && <Loader size="sm" aria-label="Loading connectors" />}
      {connectors.error && <Alert color="red">{messageOf(connectors.error)}</Alert>}
      {connectors.data && (
        <Text size="sm" data-testid="connectors-count">
          {connected} of {list.length} connected
        </Text>
      )}
      <SimpleGrid cols={{ base: 1, md: 2, lg: 3 }}>
        {list.map((c) => (
          <ConnectorCard key={c.id} connector={c} onConnect={() => setConnecting(c)} onDisconnect={() => setDisconnecting(c)} />
        ))}
      </SimpleGrid>
      <ConnectForm connector={connecting} onClose={() => setConnecting(null)} />
      <DisconnectModal connector={disconnecting} onClose={() => setDisconnecting(null)} />
    </Stack>
  );
}
