import type { Agent, AgentSummary } from '@agentry/client';
import {
  Alert,
  Autocomplete,
  Badge,
  Button,
  Group,
  JsonInput,
  Menu,
  Modal,
  NumberInput,
  Pagination,
  Select,
  Stack,
  Table,
  Text,
  TextInput,
  Textarea,
  Title,
  Tooltip,
} from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useNavigate, useParams, useSearch } from '@tanstack/react-router';
import { useState } from 'react';
import { fieldErrorsOf, messageOf, useClient, useDenied } from '../api';
import { AnchorLink, ButtonLink } from '../links';

const PAGE_SIZE = 20;
/** Suggestions only: any provider/model the server is configured for may be typed (docs/models.md). */
const MODELS = ['builtin/echo', 'openai/gpt-4o-mini', 'openai/gpt-4.1', 'anthropic/claude-sonnet-4-5', 'anthropic/claude-haiku-4-5'];

export function AgentsPage() {
  const client = useClient();
  const denied = useDenied();
  const navigate = useNavigate({ from: '/agents' });
  const search = useSearch({ from: '/app/agents' });
  const page = search.page ?? 1;
  const [text, setText] = useState('');
  const [confirm, setConfirm] = useState<AgentSummary | null>(null);
  const queryClient = useQueryClient();

  const apps = useQuery({
    queryKey: ['apps'],
    queryFn: () => client.http.json<{ apps: { id: string; agentCount: number }[] }>('GET', '/api/v1/apps'),
  });
  // The server searches every page (GET /api/v1/agents?q=); typing waits a moment before asking it.
  const [needle] = useDebouncedValue(text.trim().slice(0, 100), 250);
  const list = useQuery({
    queryKey: ['agents', page, search.status, search.appId, needle],
    queryFn: () =>
      client.http.json<{ agents: AgentSummary[]; total: number }>('GET', '/api/v1/agents', {
        query: { page, limit: PAGE_SIZE, status: search.status, appId: search.appId, q: needle || undefined },
      }),
  });
  const act = useMutation({
    mutationFn: async ({ action, agent }: { action: 'pause' | 'resume' | 'duplicate' | 'delete'; agent: AgentSummary }) => {
      if (action === 'pause') return client.agents.pause(agent.id);
      if (action === 'resume') return client.agents.resume(agent.id);
      if (action === 'delete') return client.agents.delete(agent.id);
      return client.http.json('POST', `/api/v1/agents/${agent.id}/duplicate`, { body: { name: `${agent.name} (copy)` } });
    },
    onSettled: () => queryClient.invalidateQueries({ queryKey: ['agents'] }),
  });

  const agents = list.data?.agents ?? [];
  const writeDenied = denied('agents:write');

  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>Agents</Title>
        <Tooltip label={writeDenied} disabled={!writeDenied}>
          <ButtonLink to="/agents/$agentId" params={{ agentId: 'new' }} disabled={!!writeDenied}>
            New agent
          </ButtonLink>
        </Tooltip>
      </Group>
      <Group align="end">
        <TextInput
          label="Search"
          placeholder="name contains"
          maxLength={100}
          value={text}
          onChange={(e) => {
            setText(e.currentTarget.value);
            if (page !== 1) navigate({ search: { ...search, page: undefined } });
          }}
        />
        <Select
          label="Status"
          clearable
          data={['available', 'paused', 'registered']}
          value={search.status ?? null}
          onChange={(status) => navigate({ search: { ...search, status: status ?? undefined, page: undefined } })}
        />
        <Select
          label="App"
          clearable
          data={(apps.data?.apps ?? []).map((a) => ({ value: a.id, label: `${a.id} (${a.agentCount})` }))}
          value={search.appId ?? null}
          onChange={(appId) => navigate({ search: { ...search, appId: appId ?? undefined, page: undefined } })}
        />
      </Group>
      {list.error && <Alert color="red">{messageOf(list.error)}</Alert>}
      {act.error && <Alert color="red">{messageOf(act.error)}</Alert>}
      <Table.ScrollContainer minWidth={700}>
        <Table striped highlightOnHover>
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Name</Table.Th>
              <Table.Th>App</Table.Th>
              <Table.Th>Model</Table.Th>
              <Table.Th>Status</Table.Th>
              <Table.Th>Created</Table.Th>
              <Table.Th />
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {agents.map((agent) => (
              <Table.Tr key={agent.id}>
                <Table.Td>
                  <AnchorLink to="/agents/$agentId" params={{ agentId: agent.id }}>
                    {agent.name}
                  </AnchorLink>
                  {agent.description && (
                    <Text size="xs" c="dimmed" lineClamp={1}>
                      {agent.description}
                    </Text>
                  )}
                </Table.Td>
                <Table.Td>{agent.appId}</Table.Td>
                <Table.Td>
                  <Text size="sm" ff="monospace">
                    {agent.model}
                  </Text>
                </Table.Td>
                <Table.Td>
                  <Badge color={agent.status === 'available' ? 'green' : agent.status === 'paused' ? 'yellow' : 'gray'}>
                    {agent.status}
                  </Badge>
                </Table.Td>
                <Table.Td>{new Date(agent.createdAt).toLocaleString()}</Table.Td>
                <Table.Td>
                  <Group gap="xs" wrap="nowrap" justify="end">
                    <ButtonLink size="xs" variant="light" to="/playground" search={{ agentId: agent.id }}>
                      Chat
                    </ButtonLink>
                    <Menu position="bottom-end">
                      <Menu.Target>
                        <Button size="xs" variant="default" aria-label={`Actions for ${agent.name}`}>
                          ⋯
                        </Button>
                      </Menu.Target>
                      <Menu.Dropdown>
                        {agent.status === 'paused' ? (
                          <Menu.Item
                            disabled={!!writeDenied}
                            title={writeDenied ?? undefined}
                            onClick={() => act.mutate({ action: 'resume', agent })}
                          >
                            Resume
                          </Menu.Item>
                        ) : (
                          <Menu.Item
                            disabled={!!writeDenied}
                            title={writeDenied ?? undefined}
                            onClick={() => act.mutate({ action: 'pause', agent })}
                          >
                            Pause
                          </Menu.Item>
                        )}
                        <Menu.Item
                          disabled={!!writeDenied}
                          title={writeDenied ?? undefined}
                          onClick={() => act.mutate({ action: 'duplicate', agent })}
                        >
                          Duplicate
                        </Menu.Item>
                        <Menu.Item color="red" disabled={!!writeDenied} title={writeDenied ?? undefined} onClick={() => setConfirm(agent)}>
                          Delete…
                        </Menu.Item>
                      </Menu.Dropdown>
                    </Menu>
                  </Group>
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
      {list.data && list.data.total === 0 && <Text c="dimmed">{needle ? 'No agent’s name contains that.' : 'No agents yet.'}</Text>}
      {list.data && list.data.total > PAGE_SIZE && (
        <Pagination
          total={Math.ceil(list.data.total / PAGE_SIZE)}
          value={page}
          onChange={(p) => navigate({ search: { ...search, page: p } })}
        />
      )}
      <Modal opened={confirm !== null} onClose={() => setConfirm(null)} title="Delete agent">
        <Stack>
          <Text>
            Delete <b>{confirm?.name}</b>? Its conversations and runs stay in the history; the agent cannot be used again.
          </Text>
          <Group justify="end">
            <Button variant="default" onClick={() => setConfirm(null)}>
              Cancel
            </Button>
            <Button
              color="red"
              onClick={() => {
                if (confirm) act.mutate({ action: 'delete', agent: confirm });
                setConfirm(null);
              }}
            >
              Delete
            </Button>
          </Group>
        </Stack>
      </Modal>
    </Stack>
  );
}

interface AgentFormValues {
  name: string;
  appId: string;
  description: string;
  model: string;
  systemPrompt: string;
  tools: string;
  configuration: string;
}

const formOf = (agent?: Agent): AgentFormValues => ({
  name: agent?.name ?? '',
  appId: agent?.appId ?? 'default',
  description: agent?.description ?? '',
  model: agent?.model ?? 'builtin/echo',
  systemPrompt: agent?.systemPrompt ?? '',
  tools: JSON.stringify(agent?.tools ?? [], null, 2),
  configuration: JSON.stringify(agent?.configuration ?? {}, null, 2),
});

/** Create (`/agents/new`) or edit an agent; the server's 400 field errors are shown at their fields. */
export function AgentEditPage() {
  const { agentId } = useParams({ from: '/app/agents/$agentId' });
  const isNew = agentId === 'new';
  const client = useClient();
  const denied = useDenied()('agents:write');
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const agent = useQuery({ queryKey: ['agent', agentId], enabled: !isNew, queryFn: () => client.agents.get(agentId) });
  const budget = useQuery({
    queryKey: ['agent', agentId, 'budget'],
    enabled: !isNew,
    retry: false,
    queryFn: () =>
      client.http.json<{ monthlyBudgetUsd: number | null; spentUsd: number; month: string }>('GET', `/api/v1/agents/${agentId}/budget`),
  });
  const [values, setValues] = useState<AgentFormValues | null>(isNew ? formOf() : null);
  const form = values ?? (agent.data ? formOf(agent.data) : null);
  const [budgetUsd, setBudgetUsd] = useState<number | string>('');

  const save = useMutation({
    mutationFn: async (v: AgentFormValues) => {
      let tools: unknown;
      let configuration: unknown;
      try {
        tools = JSON.parse(v.tools || '[]');
      } catch {
        throw Object.assign(new Error('tools is not valid JSON'), { local: { tools: 'not valid JSON' } });
      }
      try {
        configuration = JSON.parse(v.configuration || '{}');
      } catch {
        throw Object.assign(new Error('configuration is not valid JSON'), { local: { configuration: 'not valid JSON' } });
      }
      const body = {
        name: v.name,
        appId: v.appId,
        description: v.description || undefined,
        model: v.model,
        systemPrompt: v.systemPrompt || undefined,
        tools,
        configuration,
      } as Parameters<typeof client.agents.create>[0];
      return isNew ? client.agents.create(body) : client.agents.update(agentId, body);
    },
    onSuccess: (saved) => {
      queryClient.invalidateQueries({ queryKey: ['agents'] });
      queryClient.setQueryData(['agent', saved.id], saved);
      setValues(null);
      if (isNew) navigate({ to: '/agents/$agentId', params: { agentId: saved.id } });
    },
  });
  const saveBudget = useMutation({
    mutationFn: () =>
      client.http.json('PUT', `/api/v1/agents/${agentId}/budget`, {
        body: { monthlyBudgetUsd: budgetUsd === '' ? null : Number(budgetUsd) },
      }),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['agent', agentId, 'budget'] }),
  });

  if (!form) return agent.error ? <Alert color="red">{messageOf(agent.error)}</Alert> : <Text>Loading…</Text>;
  const errors = { ...fieldErrorsOf(save.error), ...((save.error as { local?: Record<string, string> } | null)?.local ?? {}) };
  const set = (field: keyof AgentFormValues) => (value: string) => setValues({ ...form, [field]: value });

  return (
    <Stack maw={820}>
      <Group justify="space-between">
        <Title order={2}>{isNew ? 'New agent' : form.name}</Title>
        {!isNew && (
          <ButtonLink variant="light" to="/playground" search={{ agentId }}>
            Open in playground
          </ButtonLink>
        )}
      </Group>
      {!isNew && agent.data && (
        <Text size="sm" c="dimmed">
          {agent.data.id} · status {agent.data.status}
        </Text>
      )}
      <form
        onSubmit={(e) => {
          e.preventDefault();
          save.mutate(form);
        }}
      >
        <Stack>
          <Group grow align="start">
            <TextInput label="Name" required value={form.name} onChange={(e) => set('name')(e.currentTarget.value)} error={errors.name} />
            <TextInput label="App" required value={form.appId} onChange={(e) => set('appId')(e.currentTarget.value)} error={errors.appId} />
          </Group>
          <TextInput
            label="Description"
            value={form.description}
            onChange={(e) => set('description')(e.currentTarget.value)}
            error={errors.description}
          />
          <Autocomplete
            label="Model"
            description="provider/model; builtin/echo needs no provider"
            data={MODELS}
            value={form.model}
            onChange={set('model')}
            error={errors.model}
          />
          <Textarea
            label="System prompt"
            autosize
            minRows={3}
            value={form.systemPrompt}
            onChange={(e) => set('systemPrompt')(e.currentTarget.value)}
            error={errors.systemPrompt}
          />
          <JsonInput
            label="Tools"
            description='e.g. [{"type":"mcp","url":"https://mcp.example.com/mcp"}] or [{"type":"builtin","name":"skills"}]'
            autosize
            minRows={3}
            value={form.tools}
            onChange={set('tools')}
            error={errors.tools}
          />
          <JsonInput
            label="Configuration"
            description="temperature, maxSteps, maxTokens, memoryWindow, onActiveRun, toolTimeoutMs"
            autosize
            minRows={2}
            value={form.configuration}
            onChange={set('configuration')}
            error={errors.configuration}
          />
          {save.error && !Object.keys(errors).length && <Alert color="red">{messageOf(save.error)}</Alert>}
          {save.error && Object.keys(errors).length > 0 && (
            <Alert color="red" title="Not saved">
              {messageOf(save.error)}
            </Alert>
          )}
          <Group>
            <Tooltip label={denied} disabled={!denied}>
              <Button type="submit" loading={save.isPending} disabled={!!denied}>
                {isNew ? 'Create agent' : 'Save'}
              </Button>
            </Tooltip>
            {save.isSuccess && <Text c="green">Saved</Text>}
          </Group>
        </Stack>
      </form>
      {!isNew && budget.data && (
        <Stack gap="xs">
          <Title order={4}>Budget</Title>
          <Text size="sm">
            {budget.data.month}: spent ${budget.data.spentUsd.toFixed(4)}
            {budget.data.monthlyBudgetUsd !== null
              ? ` of $${budget.data.monthlyBudgetUsd} (left $${Math.max(0, budget.data.monthlyBudgetUsd - budget.data.spentUsd).toFixed(4)})`
              : ', no monthly budget'}
          </Text>
          <Group align="end">
            <NumberInput label="Monthly budget (USD, empty: none)" min={0} decimalScale={4} value={budgetUsd} onChange={setBudgetUsd} />
            <Button variant="default" onClick={() => saveBudget.mutate()} disabled={!!denied} loading={saveBudget.isPending}>
              Set budget
            </Button>
          </Group>
          {saveBudget.error && <Alert color="red">{messageOf(saveBudget.error)}</Alert>}
        </Stack>
      )}
    </Stack>
  );
}
