import { Alert, Badge, Button, Card, Code, Group, SimpleGrid, Stack, Table, Text, Title, Tooltip } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { messageOf, useClient, useDenied } from '../../api';
import { decodeJwtPayload } from './decision';
import { agentKeysQuery, clientMetadataQuery, identityKeys } from './queries';

/** An agent's identity: its SPIFFE ID, client metadata and badge (decoded), and its signing keys (rotate, revoke). */
export function AgentIdentity({ agentId }: { agentId: string }) {
  const client = useClient();
  const denied = useDenied()('agents:write');
  const queryClient = useQueryClient();
  const metadata = useQuery(clientMetadataQuery(client, agentId));
  // An agent's first key is made when its metadata is first read: listing its keys before would show none.
  const keys = useQuery({ ...agentKeysQuery(client, agentId), enabled: metadata.isSuccess });
  const change = useMutation({
    mutationFn: (action: { rotate: true } | { revoke: string }): Promise<unknown> =>
      'rotate' in action ? client.identity.rotateKey(agentId) : client.identity.revokeKey(agentId, action.revoke),
    onSettled: () => queryClient.invalidateQueries({ queryKey: identityKeys.keys(agentId) }),
  });
  const badge = metadata.data ? decodeJwtPayload(metadata.data.badge) : null;

  return (
    <Stack>
      {metadata.data && (
        <Stack gap={4}>
          <Text size="sm">
            SPIFFE ID: <Code data-testid="spiffe-id">{metadata.data.spiffe_id}</Code>
          </Text>
          <Text size="sm">
            Client ID: <Code>{metadata.data.client_id}</Code>
          </Text>
        </Stack>
      )}
      <SimpleGrid cols={{ base: 1, md: 2 }}>
        <Card withBorder>
          <Text fw={600} mb="xs">
            Client metadata
          </Text>
          <Code block tabIndex={0}>
            {JSON.stringify({ ...metadata.data, badge: metadata.data ? '(decoded beside)' : undefined }, null, 2)}
          </Code>
        </Card>
        <Card withBorder>
          <Text fw={600} mb="xs">
            Badge (decoded)
          </Text>
          <Code block tabIndex={0}>
            {JSON.stringify(badge, null, 2)}
          </Code>
        </Card>
      </SimpleGrid>
      <Group justify="space-between">
        <Title order={4}>Keys</Title>
        <Tooltip label={denied} disabled={!denied}>
          <Button variant="default" disabled={!!denied} onClick={() => change.mutate({ rotate: true })} loading={change.isPending}>
            Rotate key
          </Button>
        </Tooltip>
      </Group>
      {change.error && <Alert color="red">{messageOf(change.error)}</Alert>}
      <Table.ScrollContainer minWidth={600}>
        <Table>
          <Table.Tbody>
            {(keys.data?.keys ?? []).map((key) => (
              <Table.Tr key={key.kid}>
                <Table.Td>
                  <Code>{key.kid.slice(0, 16)}…</Code>
                </Table.Td>
                <Table.Td>
                  <Badge color={key.status === 'active' ? 'green' : 'gray'}>{key.status}</Badge>
                </Table.Td>
                <Table.Td>{new Date(key.createdAt).toLocaleString()}</Table.Td>
                <Table.Td>
                  {key.status !== 'revoked' && (
                    <Button
                      size="xs"
                      color="red"
                      variant="subtle"
                      disabled={!!denied}
                      title={denied ?? undefined}
                      onClick={() => change.mutate({ revoke: key.kid })}
                    >
                      Revoke
                    </Button>
                  )}
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
    </Stack>
  );
}
