import { AgentryError, type TbacPolicy } from '@agentry/client';
import {
  Alert,
  Badge,
  Button,
  Card,
  Code,
  Fieldset,
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
import { type Session, messageOf, useClient, useDenied } from '../api';
import { FormErrorSummary } from '../form-error-summary';
import { LocalFieldErrors, placeErrors } from '../lib/form-errors.js';
import { checkFields, LIMITS } from '../lib/form-limits.js';
import {
  type ConditionsDraft,
  candidatePolicies,
  conditionErrorsOf,
  conditionsOf,
  describeConditions,
  draftOf,
  emptyConditionsDraft,
  whyNotHolding,
} from '../lib/conditions';
import { apiPath } from '../lib/api-path.js';

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
  /** When the page had the answer: the moment the policies' conditions are read at. */
  at: number;
}

/**
 * "Would this be allowed?": the real chain a delegating agent goes through: an SVID for the caller
 * (addressed to the issuer, read from its badge), exchanged for a delegation token to the callee with
 * scope tools:<tool>, then ExtAuthZ (authorize) asked about that token, tool and callee.
 */
async function testDecision(client: Session['client'], callerId: string, calleeId: string, tool: string): Promise<Decision> {
  const metadata = await client.http.json<ClientMetadata>('GET', apiPath`/api/v1/identity/agents/${callerId}/client-metadata.json`);
  const issuer = String(decodeJwtPayload(metadata.badge)?.iss ?? '');
  const { svid } = await client.http.json<{ svid: string }>('POST', apiPath`/api/v1/identity/agents/${callerId}/svid`, {
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
      return { allowed: false, reason: `exchange refused: ${err.code}`, detail: err.detail, at: Date.now() };
    throw err;
  }
  const answer = await client.http.send('POST', '/api/v1/identity/authorize', { body: { token, tool, callee: calleeId }, anonymous: true });
  return { ...((await answer.json()) as Omit<Decision, 'at'>), at: Date.now() };
}

/** A policy's conditions as inputs: two moments and a daily window, all UTC; errors are the server's. */
function ConditionsFields({
  draft,
  onChange,
  errors,
}: {
  draft: ConditionsDraft;
  onChange: (draft: ConditionsDraft) => void;
  errors: ReturnType<typeof conditionErrorsOf>;
}) {
  const field = (name: keyof ConditionsDraft) => ({
    value: draft[name],
    onChange: (e: React.ChangeEvent<HTMLInputElement>) => onChange({ ...draft, [name]: e.currentTarget.value }),
    error: errors[name],
  });
  return (
    <Fieldset legend="Conditions (all must hold at decision time; UTC; empty: none)" mt="sm" data-testid="policy-conditions">
      <Group align="start" grow>
        <TextInput type="datetime-local" label="Applies from (UTC)" {...field('notBefore')} />
        <TextInput type="datetime-local" label="Expires at (UTC)" {...field('notAfter')} />
        <TextInput type="time" label="Daily window start (UTC)" {...field('windowStart')} />
        <TextInput type="time" label="Daily window end (UTC)" {...field('windowEnd')} />
      </Group>
      {errors.conditions && (
        <Text c="red" size="sm" mt={4}>
          {errors.conditions}
        </Text>
      )}
      <Button variant="subtle" size="xs" mt="xs" onClick={() => onChange(emptyConditionsDraft)}>
        Clear conditions
      </Button>
    </Fieldset>
  );
}

/** Why the decision came out as it did: the policies that could decide, and whether their conditions held. */
function DecisionConditions({
  policies,
  decision,
  test,
}: {
  policies: TbacPolicy[];
  decision: Decision;
  test: { caller: string; callee: string; tool: string };
}) {
  const candidates = candidatePolicies(policies, test.caller, test.callee, test.tool);
  if (!candidates.length) return <Text size="sm">No policy names this caller, callee and tool: the tenant's mode decides.</Text>;
  return (
    <Stack gap={2} mt={4} data-testid="decision-conditions">
      <Text size="sm">Policies read at {new Date(decision.at).toISOString().slice(11, 16)} UTC:</Text>
      {candidates.map((p) => {
        const why = whyNotHolding(p.conditions, decision.at);
        return (
          <Text size="sm" key={p.id}>
            {p.effect} policy {p.id.slice(0, 8)}… ({p.toolName}
            {p.conditions ? `; ${describeConditions(p.conditions)}` : ''}):{' '}
            {why ? `does not apply: ${why}` : p.id === decision.policyId ? 'its conditions hold, it decided' : 'its conditions hold'}
          </Text>
        );
      })}
    </Stack>
  );
}

function AgentIdentity({ agentId }: { agentId: string }) {
  const client = useClient();
  const denied = useDenied()('agents:write');
  const metadata = useQuery({
    queryKey: ['identity', agentId, 'metadata'],
    queryFn: () => client.http.json<ClientMetadata>('GET', apiPath`/api/v1/identity/agents/${agentId}/client-metadata.json`),
  });
  // An agent's first key is made when its metadata is first read: listing its keys before would show none.
  const keys = useQuery({
    queryKey: ['identity', agentId, 'keys'],
    enabled: metadata.isSuccess,
    queryFn: () => client.identity.keys(agentId),
  });
  const change = useMutation({
    mutationFn: (action: { rotate: true } | { revoke: string }) =>
      'rotate' in action
        ? client.identity.rotateKey(agentId)
        : client.http.json('DELETE', apiPath`/api/v1/identity/agents/${agentId}/keys/${action.revoke}`),
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

/** The policy form's fields by the names the API gives them, as the form labels them. */
const POLICY_FIELDS: Record<string, string> = {
  callerAgentId: 'Caller',
  calleeAgentId: 'Callee',
  toolName: 'Tool',
  effect: 'Effect',
  description: 'Description',
  conditions: 'Conditions',
};

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
  const [conditions, setConditions] = useState<ConditionsDraft>(emptyConditionsDraft);
  // The policy being edited: its caller, callee and tool are what it is (the API changes the rest).
  const [editing, setEditing] = useState<TbacPolicy | null>(null);
  const savePolicy = useMutation({
    mutationFn: () => {
      // An edit changes only the effect, description and conditions: only those are checked then.
      const local = checkFields(editing ? { description: draft.description } : draft, LIMITS.createPolicy);
      if (local.length) throw new LocalFieldErrors(local);
      const effect = draft.effect as 'allow' | 'deny';
      const shaped = conditionsOf(conditions);
      return editing
        ? client.identity.updatePolicy(editing.id, { effect, description: draft.description || null, conditions: shaped })
        : client.identity.createPolicy({
            ...draft,
            effect,
            description: draft.description || undefined,
            conditions: shaped ?? undefined,
          });
    },
    onSuccess: () => {
      setDraft({ ...draft, toolName: '', description: '' });
      setConditions(emptyConditionsDraft);
      setEditing(null);
      queryClient.invalidateQueries({ queryKey: ['tbac', 'policies'] });
    },
  });
  const edit = (policy: TbacPolicy) => {
    savePolicy.reset();
    setEditing(policy);
    setDraft({
      callerAgentId: policy.callerAgentId,
      calleeAgentId: policy.calleeAgentId,
      toolName: policy.toolName,
      effect: policy.effect,
      description: policy.description ?? '',
    });
    setConditions(draftOf(policy.conditions));
  };
  const stopEditing = () => {
    savePolicy.reset();
    setEditing(null);
    setDraft({ ...draft, toolName: '', description: '' });
    setConditions(emptyConditionsDraft);
  };
  const changePolicy = useMutation({
    mutationFn: ({ policy, action }: { policy: TbacPolicy; action: 'flip' | 'delete' }): Promise<unknown> =>
      action === 'delete'
        ? client.identity.deletePolicy(policy.id)
        : client.identity.updatePolicy(policy.id, { effect: policy.effect === 'allow' ? 'deny' : 'allow' }),
    onSettled: () => queryClient.invalidateQueries({ queryKey: ['tbac', 'policies'] }),
  });
  const { fields: errors, summary } = placeErrors(savePolicy.error, POLICY_FIELDS);
  const conditionErrors = conditionErrorsOf(savePolicy.error);

  const [test, setTest] = useState({ caller: '', callee: '', tool: '' });
  // The request travels with the mutation: what the answer explains is what was asked, not the inputs now.
  const decide = useMutation({ mutationFn: (asked: typeof test) => testDecision(client, asked.caller, asked.callee, asked.tool) });

  return (
    <Stack maw={1100}>
      <Title order={1} size="h2">
        Identity
      </Title>
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
              <Table.Th>Conditions</Table.Th>
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
                <Table.Td data-testid="policy-conditions-cell">
                  {p.conditions && (
                    <Group gap={4} wrap="nowrap">
                      <Text size="xs">{describeConditions(p.conditions)}</Text>
                      <Badge size="xs" variant="light" color={whyNotHolding(p.conditions, Date.now()) ? 'gray' : 'green'}>
                        {whyNotHolding(p.conditions, Date.now()) ? 'not now' : 'holds now'}
                      </Badge>
                    </Group>
                  )}
                </Table.Td>
                <Table.Td>
                  <Group gap="xs" justify="end" wrap="nowrap">
                    <Button
                      size="xs"
                      variant="subtle"
                      disabled={!!settingsDenied}
                      onClick={() => edit(p)}
                      aria-label={`Edit policy ${p.id}`}
                    >
                      Edit
                    </Button>
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
            savePolicy.mutate();
          }}
        >
          <Text fw={600} mb="xs">
            {editing ? `Edit policy ${editing.id}` : 'New policy'}
          </Text>
          <FormErrorSummary summary={summary} title={editing ? 'Not saved' : 'Not added'} />
          <Group align="start" grow>
            <Select
              label="Caller"
              data={[{ value: '*', label: '* (any agent)' }, ...agentOptions]}
              value={draft.callerAgentId || null}
              onChange={(v) => setDraft({ ...draft, callerAgentId: v ?? '' })}
              error={errors.callerAgentId}
              disabled={!!editing}
            />
            <Select
              label="Callee"
              data={[{ value: '*', label: '* (any agent)' }, ...agentOptions]}
              value={draft.calleeAgentId || null}
              onChange={(v) => setDraft({ ...draft, calleeAgentId: v ?? '' })}
              error={errors.calleeAgentId}
              disabled={!!editing}
            />
            <TextInput
              label="Tool"
              value={draft.toolName}
              onChange={(e) => setDraft({ ...draft, toolName: e.currentTarget.value })}
              error={errors.toolName}
              disabled={!!editing}
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
              error={errors.description}
            />
          </Group>
          <ConditionsFields draft={conditions} onChange={setConditions} errors={conditionErrors} />
          {savePolicy.error && !summary.length && (
            <Alert color="red" mt="xs" title={editing ? 'Not saved' : 'Not added'}>
              {messageOf(savePolicy.error)}
            </Alert>
          )}
          <Group mt="sm" gap="xs">
            <Tooltip label={settingsDenied} disabled={!settingsDenied}>
              <Button type="submit" disabled={!!settingsDenied} loading={savePolicy.isPending}>
                {editing ? 'Save policy' : 'Add policy'}
              </Button>
            </Tooltip>
            {editing && (
              <Button variant="default" onClick={stopEditing}>
                Cancel
              </Button>
            )}
          </Group>
        </form>
      </Card>

      <Card withBorder>
        <form
          onSubmit={(e) => {
            e.preventDefault();
            decide.mutate({ ...test });
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
              <DecisionConditions policies={policies.data ?? []} decision={decide.data} test={decide.variables ?? test} />
            </Alert>
          )}
        </form>
      </Card>
    </Stack>
  );
}
