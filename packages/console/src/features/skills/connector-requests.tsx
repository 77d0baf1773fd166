import { Badge, Stack, Table, Text, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { useClient } from '../../api';
import { connectorRequestsQuery, connectorsQuery } from '../connectors/queries';

/** The skills page's Connectors tab: the catalog with whether each is connected, and the agents' requests for one. */
export function ConnectorRequests() {
  const client = useClient();
  const connectors = useQuery(connectorsQuery(client));
  const requests = useQuery(connectorRequestsQuery(client));
  return (
    <Stack>
      <Table>
        <Table.Tbody>
          {(connectors.data?.connectors ?? []).map((c) => (
            <Table.Tr key={c.id}>
              <Table.Td>{c.name}</Table.Td>
              <Table.Td>{c.category}</Table.Td>
              <Table.Td>
                <Badge color={c.connected ? 'green' : 'gray'}>{c.connected ? 'connected' : 'not connected'}</Badge>
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      <Title order={4}>Requests from agents</Title>
      <Table>
        <Table.Tbody>
          {(requests.data ?? []).map((r) => (
            <Table.Tr key={r.id}>
              <Table.Td>{r.connectorId}</Table.Td>
              <Table.Td>{r.reason}</Table.Td>
              <Table.Td>
                <Badge variant="light">{r.status}</Badge>
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      {requests.data?.length === 0 && <Text c="dimmed">No requests.</Text>}
    </Stack>
  );
}
