import type { ApiKey, CreatedApiKey } from '@agentry/client';
import {
  Alert,
  Badge,
  Button,
  Card,
  Code,
  Group,
  Modal,
  MultiSelect,
  SegmentedControl,
  SimpleGrid,
  Stack,
  Table,
  Tabs,
  Text,
  TextInput,
  Title,
  Tooltip,
  useComputedColorScheme,
} from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Bar, BarChart, CartesianGrid, Legend, ResponsiveContainer, Tooltip as ChartTooltip, XAxis, YAxis } from 'recharts';
import { messageOf, useClient, useDenied, useSession } from '../api';
import { FormErrorSummary } from '../form-error-summary';
import { LocalFieldErrors, placeErrors } from '../lib/form-errors.js';
import { checkFields, LIMITS } from '../lib/form-limits.js';
import { type UsageRow, seriesBy, totalsOf } from '../lib/usage';
import { AuditLog } from '../features/audit/audit-log';

const PERMISSIONS = ['agents:read', 'agents:write', 'settings:read', 'settings:write', 'skills:read', 'skills:write'];
const COLORS = ['#4c6ef5', '#12b886', '#fab005', '#fa5252', '#7950f2', '#15aabf', '#e64980', '#82c91e'];

const isoDay = (d: Date) => d.toISOString().slice(0, 10);

function StackedChart({ data, keys, unit }: { data: Record<string, string | number>[]; keys: string[]; unit: string }) {
  const dark = useComputedColorScheme('light') === 'dark';
  return (
    <ResponsiveContainer width="100%" height={260}>
      <BarChart data={data}>
        <CartesianGrid strokeDasharray="3 3" stroke={dark ? '#444' : '#ddd'} />
        <XAxis dataKey="day" tick={{ fontSize: 12, fill: dark ? '#ccc' : '#333' }} />
        <YAxis tick={{ fontSize: 12, fill: dark ? '#ccc' : '#333' }} unit={unit} width={70} />
        <ChartTooltip />
        <Legend />
        {keys.map((key, i) => (
          <Bar key={key} dataKey={key} stackId="a" fill={COLORS[i % COLORS.length]} isAnimationActive={false} />
        ))}
      </BarChart>
    </ResponsiveContainer>
  );
}

function UsageCharts() {
  const client = useClient();
  const [days, setDays] = useState('30');
  const [by, setBy] = useState<'agent' | 'model'>('agent');
  const to = new Date();
  const from = new Date(to.getTime() - (Number(days) - 1) * 86_400_000);
  const agents = useQuery({ queryKey: ['agents', 'all'], queryFn: () => client.agents.list({ limit: 100 }).toArray() });
  const usage = useQuery({
    queryKey: ['usage', days],
    queryFn: () => client.http.json<{ rows: UsageRow[] }>('GET', '/api/v1/usage/daily', { query: { from: isoDay(from), to: isoDay(to) } }),
  });
  const names = new Map((agents.data ?? []).map((a) => [a.id, a.name]));
  const label = (row: UsageRow) => (by === 'agent' ? (names.get(row.agentId) ?? row.agentId.slice(-8)) : row.model);
  const rows = usage.data?.rows ?? [];
  const cost = seriesBy(rows, isoDay(from), isoDay(to), label, (r) => r.costUsd);
  const tokens = seriesBy(rows, isoDay(from), isoDay(to), label, (r) => r.inputTokens + r.outputTokens);
  const totals = totalsOf(rows);

  return (
    <Stack>
      <Group>
        <SegmentedControl value={days} onChange={setDays} data={['7', '30', '90'].map((d) => ({ value: d, label: `${d} days` }))} />
        <SegmentedControl
          value={by}
          onChange={(v) => setBy(v as 'agent' | 'model')}
          data={[
            { value: 'agent', label: 'per agent' },
            { value: 'model', label: 'per model' },
          ]}
        />
      </Group>
      {usage.error && <Alert color="red">{messageOf(usage.error)}</Alert>}
      <SimpleGrid cols={{ base: 2, md: 4 }}>
        <Card withBorder>
          <Text size="xs" c="dimmed">
            Cost
          </Text>
          <Text fw={700} size="xl" data-testid="usage-cost">
            ${totals.costUsd.toFixed(6)}
          </Text>
        </Card>
        <Card withBorder>
          <Text size="xs" c="dimmed">
            Tokens
          </Text>
          <Text fw={700} size="xl">
            {totals.inputTokens + totals.outputTokens}
          </Text>
        </Card>
        <Card withBorder>
          <Text size="xs" c="dimmed">
            Runs
          </Text>
          <Text fw={700} size="xl">
            {totals.runs}
          </Text>
        </Card>
        <Card withBorder>
          <Text size="xs" c="dimmed">
            By status
          </Text>
          <Group gap={4}>
            {Object.entries(totals.byStatus).map(([status, n]) => (
              <Badge key={status} variant="light">
                {status} {n}
              </Badge>
            ))}
          </Group>
        </Card>
      </SimpleGrid>
      <Text fw={600}>Cost per day (USD)</Text>
      <StackedChart data={cost.data} keys={cost.keys} unit="" />
      <Text fw={600}>Tokens per day</Text>
      <StackedChart data={tokens.data} keys={tokens.keys} unit="" />
    </Stack>
  );
}

function Limits() {
  const client = useClient();
  const limits = useQuery({
    queryKey: ['limits'],
    queryFn: () =>
      client.http.json<{
        rateLimitPerMinute: number | null;
        maxConcurrentRuns: number | null;
        monthlyBudgetUsd: number | null;
        usage: { month: string; spentUsd: number; runningRuns: number };
      }>('GET', '/api/v1/limits'),
  });
  if (limits.error) return <Alert color="gray">{messageOf(limits.error)}</Alert>;
  const l = limits.data;
  if (!l) return null;
  return (
    <SimpleGrid cols={{ base: 1, sm: 3 }}>
      <Card withBorder>
        <Text size="xs" c="dimmed">
          Budget {l.usage.month}
        </Text>
        <Text fw={600}>
          {l.monthlyBudgetUsd === null
            ? `no budget; spent $${l.usage.spentUsd.toFixed(4)}`
            : `$${l.usage.spentUsd.toFixed(4)} of $${l.monthlyBudgetUsd}, $${Math.max(0, l.monthlyBudgetUsd - l.usage.spentUsd).toFixed(4)} left`}
        </Text>
      </Card>
      <Card withBorder>
        <Text size="xs" c="dimmed">
          Rate limit
        </Text>
        <Text fw={600}>{l.rateLimitPerMinute === null ? 'server default' : `${l.rateLimitPerMinute} requests/min`}</Text>
      </Card>
      <Card withBorder>
        <Text size="xs" c="dimmed">
          Concurrent runs
        </Text>
        <Text fw={600}>
          {l.usage.runningRuns} running{l.maxConcurrentRuns !== null ? ` of ${l.maxConcurrentRuns}` : ''}
        </Text>
      </Card>
    </SimpleGrid>
  );
}

function ApiKeys() {
  const client = useClient();
  const session = useSession();
  /** The key whose revocation waits for confirmation. */
  const [confirming, setConfirming] = useState<ApiKey | null>(null);
  const ownKey = (k: ApiKey) => session.me.credential.type === 'api_key' && session.me.credential.id === k.id;
  const denied = useDenied()('settings:write');
  const queryClient = useQueryClient();
  const keys = useQuery({ queryKey: ['api-keys'], enabled: !denied, queryFn: () => client.apiKeys.list().toArray() });
  const [name, setName] = useState('');
  const [permissions, setPermissions] = useState<string[]>(['agents:read']);
  const [created, setCreated] = useState<CreatedApiKey | null>(null);
  const create = useMutation({
    mutationFn: () => {
      const local = checkFields({ name }, LIMITS.createApiKey);
      if (local.length) throw new LocalFieldErrors(local);
      return client.apiKeys.create({ name, permissions: permissions as Parameters<typeof client.apiKeys.create>[0]['permissions'] });
    },
    onSuccess: (key) => {
      setCreated(key);
      setName('');
      queryClient.invalidateQueries({ queryKey: ['api-keys'] });
    },
  });
  const revoke = useMutation({
    mutationFn: (key: ApiKey) => client.apiKeys.revoke(key.id),
    onSuccess: (_answer, key) => {
      setConfirming(null);
      // The console's own credential no longer works: back to the sign-in page rather than failing everywhere.
      if (ownKey(key)) session.signOut();
    },
    onSettled: () => queryClient.invalidateQueries({ queryKey: ['api-keys'] }),
  });
  if (denied) return <Alert color="gray">{denied}: API keys are managed with settings:write.</Alert>;
  const { fields: errors, summary } = placeErrors(create.error, { name: 'Name', permissions: 'Permissions' });
  return (
    <Stack>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          create.mutate();
        }}
      >
        <Group align="end">
          <TextInput label="Name" value={name} onChange={(e) => setName(e.currentTarget.value)} error={errors.name} required />
          <MultiSelect
            label="Permissions"
            data={PERMISSIONS}
            value={permissions}
            onChange={setPermissions}
            error={errors.permissions}
            miw={300}
          />
          <Button type="submit" loading={create.isPending}>
            Create key
          </Button>
        </Group>
      </form>
      <FormErrorSummary summary={summary} title="Not created" />
      {create.error && !summary.length && <Alert color="red">{messageOf(create.error)}</Alert>}
      {created && (
        <Alert color="yellow" title="Copy the key now: it is shown this once" withCloseButton onClose={() => setCreated(null)}>
          <Code>{created.key}</Code>
        </Alert>
      )}
      <Table.ScrollContainer minWidth={600}>
        <Table>
          <Table.Tbody>
            {(keys.data ?? []).map((k) => (
              <Table.Tr key={k.id}>
                <Table.Td>{k.name}</Table.Td>
                <Table.Td>
                  <Group gap={4}>
                    {k.permissions.map((p) => (
                      <Badge key={p} size="sm" variant="light">
                        {p}
                      </Badge>
                    ))}
                  </Group>
                </Table.Td>
                <Table.Td>{new Date(k.createdAt).toLocaleDateString()}</Table.Td>
                <Table.Td>
                  {k.revokedAt ? (
                    <Badge color="gray">revoked</Badge>
                  ) : (
                    <Button
                      size="xs"
                      color="red"
                      variant="subtle"
                      onClick={() => {
                        revoke.reset();
                        setConfirming(k);
                      }}
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
      <Modal opened={confirming !== null} onClose={() => setConfirming(null)} title="Revoke API key">
        {confirming && (
          <Stack>
            <Text>
              Revoke the key <b>{confirming.name}</b>? It stops working at once, for every client that uses it and every access token minted
              from it. This cannot be undone.
            </Text>
            {ownKey(confirming) && (
              <Alert color="red" title="This is the key you are signed in with">
                The console signs out as soon as it is revoked, and this key can never sign in again: make sure you hold another key with
                the permissions you need.
              </Alert>
            )}
            {revoke.error && (
              <Alert color="red" title="Not revoked">
                {messageOf(revoke.error)}
              </Alert>
            )}
            <Group justify="end">
              <Button variant="default" onClick={() => setConfirming(null)}>
                Keep
              </Button>
              <Button color="red" loading={revoke.isPending} onClick={() => revoke.mutate(confirming)}>
                Revoke
              </Button>
            </Group>
          </Stack>
        )}
      </Modal>
    </Stack>
  );
}

export function UsagePage() {
  const { me } = useSession();
  const settingsRead = me.credential.permissions.includes('settings:read');
  return (
    <Stack>
      <Title order={1} size="h2">
        Usage
      </Title>
      <Tabs defaultValue="usage">
        <Tabs.List>
          <Tabs.Tab value="usage">Cost and tokens</Tabs.Tab>
          <Tooltip label="needs settings:write" disabled={me.credential.permissions.includes('settings:write')}>
            <Tabs.Tab value="keys">API keys</Tabs.Tab>
          </Tooltip>
          <Tabs.Tab value="audit" disabled={!settingsRead} title={settingsRead ? undefined : 'needs settings:read'}>
            Audit log
          </Tabs.Tab>
        </Tabs.List>
        <Tabs.Panel value="usage" pt="md">
          <Stack>
            <Limits />
            <UsageCharts />
          </Stack>
        </Tabs.Panel>
        <Tabs.Panel value="keys" pt="md">
          <ApiKeys />
        </Tabs.Panel>
        <Tabs.Panel value="audit" pt="md">
          <AuditLog />
        </Tabs.Panel>
      </Tabs>
    </Stack>
  );
}
