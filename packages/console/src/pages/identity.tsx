import { AgentryError, type TbacPolicy } from '@agentry/client';
import {
  Alert,
  Badge,
  Button,
  Card,
  Code,
  Group,
  SegmentedControl,
  Select,
  SimpleGrid,
  Stack,
  Table,
  Text,
  TextInput,
  Title,
  Tooltip,
} from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { type Session, fieldErrorsOf, messageOf, useClient, useDenied } from '../api';

/** A JWT's payload, decoded for reading (not verified: the server verified it when it issued it). */
function decodeJwtPayload(jwt: string): Record<string, unknown> | null {
  const part = jwt.split('.')[1];
  if (!part) return null;
  try {
    const base64 = part
      .replace(/-/g, '+')
      .replace(/_/g, '/')
      .padEnd(Math.ceil(part.length / 4) * 4, '=');
    const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
    return JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    return null;
  }
}

interface ClientMetadata {
  client_id: string;
  spiffe_id: string;
  badge: string;
  [key: string]: unknown;
}

interface Decision {
  allowed: boolean;
  reason: string;
  policyId?: string;
  detail?: string;
}

/**
 * "Would this be allowed?": the real chain a delegating agent goes through: an SVID for the caller
 * (addressed to the issuer, read from its badge), exchanged for a delegation token to the callee with
 * scope tools:<tool>, then ExtAuthZ (authorize) asked about that token, tool and callee.
 */
async function testDecision(client: Session['client'], callerId: string, calleeId: string, tool: string): Promise<Decision> {
  const metadata = await client.http.json<ClientMetadata>('GET', `/api/v1/identity/agents/${callerId}/client-metadata.json`);
  const issuer = String(decodeJwtPayload(metadata.badge)?.iss ?? '');
  const { svid } = await client.http.json<{ svid: string }>('POST', `/api/v1/identity/agents/${callerId}/svid`, {
    body: { audience: issuer, ttlSeconds: 60 },
  });
  const form = new URLSearchParams({
    grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
    subject_token: svid,
    subject_token_type: 'urn:ietf:params:oauth:token-type:jwt',
    audience: calleeId,
    scope: `tools:${tool}`,
  });
  let token: string;
  try {
    const exchanged = await client.http.send('POST', '/api/v1/identity/oauth/token', {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      rawBody: form.toString(),
      anonymous: true,
    });
    token = ((await exchanged.json()) as { access_token: string }).access_token;
  } catch (err) {
    // A deny policy already stops the exchange: no token carries a tool the policies refuse.
    if (err instanceof AgentryError && err.status === 400)
      return { allowed: false, reason: `exchange refused: ${err.code}`, detail: err.detail };
    throw err;
  }
  const answer = await client.http.send('POST', '/api/v1/identity/authorize', { body: { token, tool, callee: calleeId }, anonymous: true });
  return (await answer.json()) as Decision;
}

function AgentIdentity({ agentId }: { agentId: string }) {
  const client = useClient();
  const denied = useDenied()('agents:write');
  const metadata = useQuery({
    queryKey: ['identity', agentId, 'metadata'],
    queryFn: () => client.http.json<ClientMetadata>('GET', `/api/v1/identity/agents/${agentId}/client-metadata.json`),
  });
  const keys = useQuery({ queryKey: ['identity', agentId, 'keys'], queryFn: () => client.identity.keys(agentId) });
  const change = useMutation({
    mutationFn: (action: { rotate: true } | { revoke: string }) =>
      'rotate' in action
        ? client.identity.rotateKey(agentId)
        : client.http.json('DELETE', `/api/v1/identity/agents/${agentId}/keys/${encodeURIComponent(action.revoke)}`),
    onSettled: () => keys.refetch(),
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
          <Code block>{JSON.stringify({ ...metadata.data, badge: metadata.data ? '(decoded beside)' : undefined }, null, 2)}</Code>
        </Card>
        <Card withBorder>
          <Text fw={600} mb="xs">
            Badge (decoded)
          </Text>
          <Code block>{JSON.stringify(badge, null, 2)}</Code>
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

export function IdentityPage() {
  const client = useClient();
  const deny = useDenied();
  const settingsDenied = deny('settings:write');
  const queryClient = useQueryClient();
  const agents = useQuery({ queryKey: ['agents', 'all'], queryFn: () => client.agents.list({ limit: 100 }).toArray() });
  const agentOptions = (agents.data ?? []).map((a) => ({ value: a.id, label: a.name }));
  const names = new Map(agentOptions.map((a) => [a.value, a.label]));
  const [agentId, setAgentId] = useState<string | null>(null);

  const mode = useQuery({
    queryKey: ['tbac', 'mode'],
    enabled: !deny('settings:read'),
    queryFn: () => client.http.json<{ mode: 'audit' | 'enforce' }>('GET', '/api/v1/identity/tbac/mode'),
  });
  const setMode = useMutation({
    mutationFn: (m: string) => client.http.json('PUT', '/api/v1/identity/tbac/mode', { body: { mode: m } }),
    onSettled: () => mode.refetch(),
  });
  const policies = useQuery({
    queryKey: ['tbac', 'policies'],
    enabled: !deny('settings:read'),
    queryFn: () => client.identity.policies({ limit: 100 }).toArray(),
  });
  const [draft, setDraft] = useState({ callerAgentId: '', calleeAgentId: '', toolName: '', effect: 'allow', description: '' });
  const createPolicy = useMutation({
    mutationFn: () =>
      client.identity.createPolicy({ ...draft, effect: draft.effect as 'allow' | 'deny', description: draft.description || undefined }),
    onSuccess: () => {
      setDraft({ ...draft, toolName: '', description: '' });
      queryClient.invalidateQueries({ queryKey: ['tbac', 'policies'] });
    },
  });
  const changePolicy = useMutation({
    mutationFn: ({ policy, action }: { policy: TbacPolicy; action: 'flip' | 'delete' }) =>
      action === 'delete'
        ? client.identity.deletePolicy(policy.id)
        : client.http.json('PATCH', `/api/v1/identity/tbac/policies/${policy.id}`, {
            body: { effect: policy.effect === 'allow' ? 'deny' : 'allow' },
          }),
    onSettled: () => queryClient.invalidateQueries({ queryKey: ['tbac', 'policies'] }),
  });
  const errors = fieldErrorsOf(createPolicy.error);

  const [test, setTest] = useState({ caller: '', callee: '', tool: '' });
  const decide = useMutation({ mutationFn: () => testDecision(client, test.caller, test.callee, test.tool) });

  return (
    <Stack maw={1100}>
      <Title order={2}>Identity</Title>
      <Select label="Agent" searchable data={agentOptions} value={agentId} onChange={setAgentId} placeholder="Choose an agent" maw={400} />
      {agentId && <AgentIdentity agentId={agentId} />}

      <Group justify="space-between" mt="lg">
        <Title order={3}>TBAC policies</Title>
        {mode.data && (
          <Tooltip label={settingsDenied} disabled={!settingsDenied}>
            <SegmentedControl
              aria-label="Mode when no policy matches"
              disabled={!!settingsDenied}
              value={mode.data.mode}
              onChange={(m) => setMode.mutate(m)}
              data={[
                { value: 'audit', label: 'audit (allow, record)' },
                { value: 'enforce', label: 'enforce (deny)' },
              ]}
            />
          </Tooltip>
        )}
      </Group>
      {deny('settings:read') && <Alert color="gray">{deny('settings:read')}: policies are not shown.</Alert>}
      <Table.ScrollContainer minWidth={700}>
        <Table striped data-testid="policies">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Caller</Table.Th>
              <Table.Th>Callee</Table.Th>
              <Table.Th>Tool</Table.Th>
              <Table.Th>Effect</Table.Th>
              <Table.Th>Description</Table.Th>
              <Table.Th />
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {(policies.data ?? []).map((p) => (
              <Table.Tr key={p.id}>
                <Table.Td>{names.get(p.callerAgentId) ?? p.callerAgentId}</Table.Td>
                <Table.Td>{names.get(p.calleeAgentId) ?? p.calleeAgentId}</Table.Td>
                <Table.Td>
                  <Code>{p.toolName}</Code>
                </Table.Td>
                <Table.Td>
                  <Badge color={p.effect === 'allow' ? 'green' : 'red'}>{p.effect}</Badge>
                </Table.Td>
                <Table.Td>{p.description}</Table.Td>
                <Table.Td>
                  <Group gap="xs" justify="end" wrap="nowrap">
                    <Button
                      size="xs"
                      variant="subtle"
                      disabled={!!settingsDenied}
                      onClick={() => changePolicy.mutate({ policy: p, action: 'flip' })}
                    >
                      Make {p.effect === 'allow' ? 'deny' : 'allow'}
                    </Button>
                    <Button
                      size="xs"
                      color="red"
                      variant="subtle"
                      disabled={!!settingsDenied}
                      onClick={() => changePolicy.mutate({ policy: p, action: 'delete' })}
                    >
                      Delete
                    </Button>
                  </Group>
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
      <Card withBorder>
        <form
          onSubmit={(e) => {
            e.preventDefault();
            createPolicy.mutate();
          }}
        >
          <Text fw={600} mb="xs">
            New policy
          </Text>
          <Group align="start" grow>
            <Select
              label="Caller"
              data={agentOptions}
              value={draft.callerAgentId || null}
              onChange={(v) => setDraft({ ...draft, callerAgentId: v ?? '' })}
              error={errors.callerAgentId}
            />
            <Select
              label="Callee"
              data={agentOptions}
              value={draft.calleeAgentId || null}
              onChange={(v) => setDraft({ ...draft, calleeAgentId: v ?? '' })}
              error={errors.calleeAgentId}
            />
            <TextInput
              label="Tool"
              value={draft.toolName}
              onChange={(e) => setDraft({ ...draft, toolName: e.currentTarget.value })}
              error={errors.toolName}
            />
            <Select
              label="Effect"
              data={['allow', 'deny']}
              value={draft.effect}
              onChange={(v) => setDraft({ ...draft, effect: v ?? 'allow' })}
            />
            <TextInput
              label="Description"
              value={draft.description}
              onChange={(e) => setDraft({ ...draft, description: e.currentTarget.value })}
            />
          </Group>
          {createPolicy.error && (
            <Alert color="red" mt="xs">
              {messageOf(createPolicy.error)}
            </Alert>
          )}
          <Tooltip label={settingsDenied} disabled={!settingsDenied}>
            <Button type="submit" mt="sm" disabled={!!settingsDenied} loading={createPolicy.isPending}>
              Add policy
            </Button>
          </Tooltip>
        </form>
      </Card>

      <Card withBorder>
        <form
          onSubmit={(e) => {
            e.preventDefault();
            decide.mutate();
          }}
        >
          <Text fw={600}>Would this be allowed?</Text>
          <Text size="sm" c="dimmed" mb="xs">
            Issues the caller an SVID, exchanges it for a delegation token to the callee with this tool in scope, and asks authorize.
          </Text>
          <Group align="end" grow>
            <Select
              label="Caller agent"
              data={agentOptions}
              value={test.caller || null}
              onChange={(v) => setTest({ ...test, caller: v ?? '' })}
            />
            <Select
              label="Callee agent"
              data={agentOptions}
              value={test.callee || null}
              onChange={(v) => setTest({ ...test, callee: v ?? '' })}
            />
            <TextInput label="Tool" value={test.tool} onChange={(e) => setTest({ ...test, tool: e.currentTarget.value })} />
          </Group>
          <Tooltip label={deny('agents:write')} disabled={!deny('agents:write')}>
            <Button
              type="submit"
              mt="sm"
              disabled={!test.caller || !test.callee || !test.tool || !!deny('agents:write')}
              loading={decide.isPending}
            >
              Test decision
            </Button>
          </Tooltip>
          {decide.error && (
            <Alert color="red" mt="xs">
              {messageOf(decide.error)}
            </Alert>
          )}
          {decide.data && (
            <Alert
              mt="sm"
              color={decide.data.allowed ? 'green' : 'red'}
              title={decide.data.allowed ? 'Allowed' : 'Denied'}
              data-testid="decision"
            >
              reason <Code>{decide.data.reason}</Code>
              {decide.data.policyId && <> · policy {decide.data.policyId}</>}
              {decide.data.detail && <> · {decide.data.detail}</>}
            </Alert>
          )}
        </form>
      </Card>
    </Stack>
  );
}
