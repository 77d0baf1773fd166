import { type Agent, AgentryError, type AgentSummary } from '@agentry/client';
import {
  Alert,
  Autocomplete,
  Badge,
  Button,
  Checkbox,
  Fieldset,
  Group,
  JsonInput,
  Menu,
  Modal,
  NumberInput,
  Pagination,
  PasswordInput,
  Select,
  Stack,
  Table,
  TagsInput,
  Text,
  TextInput,
  type TextInputProps,
  Textarea,
  Title,
  Tooltip,
} from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useNavigate, useParams, useSearch } from '@tanstack/react-router';
import { Fragment, useRef, useState } from 'react';
import { messageOf, useClient, useDenied } from '../api';
import { FormErrorSummary } from '../form-error-summary';
import { LocalFieldErrors } from '../lib/form-errors';
import {
  type A2aRow,
  type AgentFormValues,
  type AssignedSkill,
  BUILTIN_GROUPS,
  type DelegationRow,
  type FormErrors,
  LocalFormError,
  type McpRow,
  agentErrors,
  localAgentErrors,
  bodyOf,
  emptyA2aRow,
  emptyDelegationRow,
  emptyMcpRow,
  emptySkillRow,
  formOf,
  noErrors,
  rowKey,
  skillChanges,
} from '../lib/agent-form';
import { AnchorLink, ButtonLink } from '../links';
import { apiPath } from '../lib/api-path.js';

const PAGE_SIZE = 20;

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
      return client.http.json('POST', apiPath`/api/v1/agents/${agent.id}/duplicate`, { body: { name: `${agent.name} (copy)` } });
    },
    onSettled: () => queryClient.invalidateQueries({ queryKey: ['agents'] }),
  });

  const agents = list.data?.agents ?? [];
  const writeDenied = denied('agents:write');

  return (
    <Stack>
      <Group justify="space-between">
        <Title order={1} size="h2">
          Agents
        </Title>
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

/** A model GET /api/v1/models offers (docs/models.md). */
interface ModelOffer {
  id: string;
  usable: boolean;
  unavailableReason: string | null;
  default: boolean;
  price: { input: number; output: number } | null;
  contextWindow: number | null;
}

const usd = (n: number) => `$${n.toFixed(n < 1 ? 2 : n < 10 ? 2 : 0)}`;

/** What the picker says of a model: price per million tokens, window, or why it cannot run now. */
function modelFacts(offer: ModelOffer | undefined): string {
  if (!offer) return 'not in this server’s list: any provider/model may be typed; its runs fail if the provider is not configured';
  const facts = [
    offer.price ? `${usd(offer.price.input)} in / ${usd(offer.price.output)} out per 1M tokens` : 'price unknown (counted as 0)',
    offer.contextWindow ? `${Math.round(offer.contextWindow / 1000)}k context` : null,
    offer.default ? 'server default' : null,
    offer.usable ? null : `not usable: ${offer.unavailableReason}`,
  ];
  return facts.filter(Boolean).join(' · ');
}

/** A searchable model picker fed by GET /api/v1/models that still takes a typed provider/model. */
function ModelInput({
  label,
  description,
  offers,
  value,
  onChange,
  error,
  placeholder,
}: {
  label: string;
  description?: string;
  offers: Map<string, ModelOffer>;
  value: string;
  onChange: (value: string) => void;
  error?: string;
  placeholder?: string;
}) {
  const offer = offers.get(value.trim());
  return (
    <Autocomplete
      label={label}
      placeholder={placeholder}
      description={value.trim() ? modelFacts(offer) : description}
      data={[...offers.keys()]}
      limit={50}
      maxDropdownHeight={280}
      value={value}
      onChange={onChange}
      error={error ?? (offer && !offer.usable ? offer.unavailableReason : undefined)}
      renderOption={({ option }) => {
        const o = offers.get(option.value);
        return (
          <Stack gap={0}>
            <Text size="sm" ff="monospace" c={o && !o.usable ? 'dimmed' : undefined}>
              {option.value}
            </Text>
            <Text size="xs" c="dimmed">
              {modelFacts(o)}
            </Text>
          </Stack>
        );
      }}
    />
  );
}

/** The fallback models: picked from the list or typed (Enter), in order. */
function ModelsInput({
  offers,
  value,
  onChange,
  error,
}: {
  offers: Map<string, ModelOffer>;
  value: string[];
  onChange: (value: string[]) => void;
  error?: string;
}) {
  return (
    <TagsInput
      label="Fallback models"
      description="tried in order when the model fails for good or its breaker is open (at most 4); pick or type provider/model and press Enter"
      data={[...offers.keys()]}
      maxTags={4}
      value={value}
      onChange={onChange}
      error={error}
      clearable
    />
  );
}

/** A section of rows (MCP servers, delegations, A2A agents): each row edited or removed on its own, and an add button. */
function RowSection<R extends { key: string }>({
  title,
  hint,
  empty,
  rows,
  onRows,
  newRow,
  addLabel,
  max,
  row,
}: {
  title: string;
  hint?: string;
  empty?: string;
  rows: R[];
  onRows: (rows: R[]) => void;
  newRow: () => R;
  addLabel: string;
  max?: number;
  row: (row: R, index: number, edit: { onChange: (next: R) => void; onRemove: () => void }) => React.ReactNode;
}) {
  return (
    <Stack gap="xs">
      <Title order={4}>{title}</Title>
      {(hint || (empty && rows.length === 0)) && (
        <Text size="sm" c="dimmed">
          {rows.length === 0 && empty ? empty : hint}
        </Text>
      )}
      {rows.map((r, i) => (
        <Fragment key={r.key}>
          {row(r, i, {
            onChange: (next) => onRows(rows.map((x) => (x.key === r.key ? next : x))),
            onRemove: () => onRows(rows.filter((x) => x.key !== r.key)),
          })}
        </Fragment>
      ))}
      <Group>
        <Button variant="default" disabled={max !== undefined && rows.length >= max} onClick={() => onRows([...rows, newRow()])}>
          {addLabel}
        </Button>
      </Group>
    </Stack>
  );
}

/** A text field of a row: the row's value, the row changed as it is typed, the server's error for it. */
function RowTextInput<R, F extends keyof R & string>({
  row,
  field,
  at,
  onChange,
  ...props
}: { row: R; field: F; at: (field: string) => string | undefined; onChange: (row: R) => void } & Omit<
  TextInputProps,
  'value' | 'onChange' | 'error'
>) {
  return (
    <TextInput
      {...props}
      value={row[field] as string}
      onChange={(e) => onChange({ ...row, [field]: e.currentTarget.value })}
      error={at(field)}
    />
  );
}

/** Errors of a row as a whole (`${index}`) above its fields. */
function RowError({ errors, index }: { errors: Record<string, string>; index: number }) {
  const message = errors[`${index}`];
  return message ? (
    <Text c="red" size="sm">
      {message}
    </Text>
  ) : null;
}

function DelegationRowInput({
  row,
  index,
  agents,
  errors,
  onChange,
  onRemove,
}: {
  row: DelegationRow;
  index: number;
  /** null while the tenant's agents are loading. */
  agents: { value: string; label: string }[] | null;
  errors: Record<string, string>;
  onChange: (row: DelegationRow) => void;
  onRemove: () => void;
}) {
  const at = (field: string) => errors[`${index}.${field}`];
  // An agent the list does not hold (past its first page, or deleted since) still shows by id.
  const known = agents ?? [];
  const options =
    row.agentId && !known.some((a) => a.value === row.agentId) ? [...known, { value: row.agentId, label: row.agentId }] : known;
  return (
    <Fieldset legend={`Delegation ${index + 1}`} data-testid="delegation-row">
      <Stack gap="xs">
        <RowError errors={errors} index={index} />
        <Group grow align="start">
          <Select
            label="Agent"
            placeholder={agents ? 'choose an agent' : 'loading agents…'}
            searchable
            data={options}
            value={row.agentId}
            onChange={(agentId) => onChange({ ...row, agentId })}
            error={at('agentId')}
          />
          <RowTextInput
            label="Tool name"
            description="what the model calls; empty: ask_<agent name>"
            maxLength={64}
            row={row}
            field="name"
            at={at}
            onChange={onChange}
          />
        </Group>
        <RowTextInput
          label="Description"
          description="when the model should ask this agent; empty: the agent's own description"
          maxLength={2000}
          row={row}
          field="description"
          at={at}
          onChange={onChange}
        />
        <Group>
          <Button variant="subtle" color="red" onClick={onRemove}>
            Remove delegation
          </Button>
        </Group>
      </Stack>
    </Fieldset>
  );
}

function A2aRowInput({
  row,
  index,
  errors,
  onChange,
  onRemove,
}: {
  row: A2aRow;
  index: number;
  errors: Record<string, string>;
  onChange: (row: A2aRow) => void;
  onRemove: () => void;
}) {
  const at = (field: string) => errors[`${index}.${field}`];
  return (
    <Fieldset legend={`A2A agent ${index + 1}`} data-testid="a2a-row">
      <Stack gap="xs">
        <RowError errors={errors} index={index} />
        <Group grow align="start">
          <RowTextInput
            label="Name"
            description="the model calls a2a_<name>; letters, digits, _ and -"
            maxLength={60}
            row={row}
            field="name"
            at={at}
            onChange={onChange}
          />
          <RowTextInput
            label="Agent Card URL"
            placeholder="https://agents.example.com/.well-known/agent-card.json"
            maxLength={2048}
            row={row}
            field="cardUrl"
            at={at}
            onChange={onChange}
          />
        </Group>
        <RowTextInput label="Description" maxLength={2000} row={row} field="description" at={at} onChange={onChange} />
        {/* A bearer token: hidden unless revealed; a saved one comes back sealed, and sending that keeps it. */}
        <PasswordInput
          label="Credential"
          description="the bearer credential the remote agent expects (optional); stored sealed"
          autoComplete="off"
          visibilityToggleButtonProps={{ 'aria-label': `Show or hide A2A agent ${index + 1} credential` }}
          maxLength={8192}
          value={row.credential}
          onChange={(e) => onChange({ ...row, credential: e.currentTarget.value })}
          error={at('credential')}
        />
        <Group>
          <Button variant="subtle" color="red" onClick={onRemove}>
            Remove A2A agent
          </Button>
        </Group>
      </Stack>
    </Fieldset>
  );
}

function McpServerRow({
  row,
  index,
  errors,
  onChange,
  onRemove,
}: {
  row: McpRow;
  index: number;
  errors: Record<string, string>;
  onChange: (row: McpRow) => void;
  onRemove: () => void;
}) {
  const at = (field: string) => errors[`${index}.${field}`];
  return (
    <Fieldset legend={`MCP server ${index + 1}`} data-testid="mcp-row">
      <Stack gap="xs">
        <RowError errors={errors} index={index} />
        <Group grow align="start">
          <RowTextInput
            label="Server URL"
            description="Streamable HTTP endpoint, http(s)://"
            placeholder="https://mcp.example.com/mcp"
            maxLength={2048}
            row={row}
            field="url"
            at={at}
            onChange={onChange}
          />
          <RowTextInput
            label="Tool prefix"
            description="letters, digits, _ and -; up to 32"
            maxLength={32}
            row={row}
            field="name"
            at={at}
            onChange={onChange}
          />
        </Group>
        <TagsInput
          label="Allowed tools"
          description="only these of the server's tools (empty: all); type a name and press Enter"
          maxTags={256}
          value={row.allowedTools}
          onChange={(allowedTools) => onChange({ ...row, allowedTools })}
          error={at('allowedTools')}
        />
        {row.headers.map((h, i) => (
          <Group key={h.key} align="end" wrap="nowrap">
            <TextInput
              label={i === 0 ? 'Header' : undefined}
              aria-label={`Header ${i + 1} name`}
              placeholder="Authorization"
              maxLength={256}
              value={h.name}
              onChange={(e) =>
                onChange({ ...row, headers: row.headers.map((x) => (x.key === h.key ? { ...x, name: e.currentTarget.value } : x)) })
              }
            />
            {/* Header values are often tokens (Authorization): hidden unless revealed. */}
            <PasswordInput
              style={{ flex: 1 }}
              label={i === 0 ? 'Value' : undefined}
              aria-label={`Header ${i + 1} value`}
              autoComplete="off"
              visibilityToggleButtonProps={{ 'aria-label': `Show or hide header ${i + 1} value` }}
              maxLength={8192}
              value={h.value}
              onChange={(e) =>
                onChange({ ...row, headers: row.headers.map((x) => (x.key === h.key ? { ...x, value: e.currentTarget.value } : x)) })
              }
            />
            <Button variant="subtle" color="red" onClick={() => onChange({ ...row, headers: row.headers.filter((x) => x.key !== h.key) })}>
              Remove header
            </Button>
          </Group>
        ))}
        {at('headers') && (
          <Text c="red" size="sm">
            {at('headers')}
          </Text>
        )}
        <Group justify="space-between">
          <Button
            variant="default"
            size="xs"
            disabled={row.headers.length >= 32}
            onClick={() => onChange({ ...row, headers: [...row.headers, { key: rowKey(), name: '', value: '' }] })}
          >
            Add header
          </Button>
          <Button variant="subtle" color="red" size="xs" onClick={onRemove}>
            Remove MCP server
          </Button>
        </Group>
      </Stack>
    </Fieldset>
  );
}

/** How many MCP servers and skill rows the form offers (the agent's tools are at most 64). */
const MAX_MCP_ROWS = 32;
/** agents/schemas.ts MAX_A2A_AGENTS. */
const MAX_A2A_ROWS = 16;
const MAX_SKILL_ROWS = 100;

/** Create (`/agents/new`) or edit an agent; the server's 400 field errors are shown at their fields. */
export function AgentEditPage() {
  const { agentId } = useParams({ from: '/app/agents/$agentId' });
  const isNew = agentId === 'new';
  const client = useClient();
  const canDo = useDenied();
  const denied = canDo('agents:write');
  const skillsReadDenied = canDo('skills:read');
  const skillsDenied = canDo('skills:write') ?? skillsReadDenied;
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const agent = useQuery({ queryKey: ['agent', agentId], enabled: !isNew, queryFn: () => client.agents.get(agentId) });
  const assigned = useQuery({
    queryKey: ['agent', agentId, 'skills'],
    enabled: !isNew && !skillsReadDenied,
    retry: false,
    queryFn: () => client.http.json<{ skills: AssignedSkill[] }>('GET', apiPath`/api/skills/agent/${agentId}`),
  });
  // The form cannot know the agent's skills then: its skill controls stay off, and a save leaves them as they are.
  const skillsLoadFailed =
    !isNew && !skillsReadDenied && assigned.isError ? `the agent's skills could not be loaded (${messageOf(assigned.error)})` : null;
  const skillsOff = skillsDenied ?? skillsLoadFailed;
  const models = useQuery({
    queryKey: ['models'],
    staleTime: 60_000,
    queryFn: () => client.http.json<{ models: ModelOffer[]; defaultModel: string }>('GET', '/api/v1/models'),
  });
  const catalog = useQuery({
    queryKey: ['skills', 'catalog'],
    enabled: !skillsReadDenied,
    queryFn: () =>
      client.http.json<{ skills: { id: string; name: string; description: string }[] }>('GET', '/api/skills', { query: { limit: 200 } }),
  });
  const budget = useQuery({
    queryKey: ['agent', agentId, 'budget'],
    enabled: !isNew,
    retry: false,
    queryFn: () =>
      client.http.json<{ monthlyBudgetUsd: number | null; spentUsd: number; month: string }>(
        'GET',
        apiPath`/api/v1/agents/${agentId}/budget`,
      ),
  });
  const [values, setValues] = useState<AgentFormValues | null>(isNew ? formOf() : null);
  // Skills can be read (or may not be): the form waits for the agent and its assignments.
  const skillsSettled = isNew || !!skillsReadDenied || assigned.isSuccess || assigned.isError;
  const form = values ?? (agent.data && skillsSettled ? formOf(agent.data, assigned.data?.skills ?? []) : null);
  const [budgetUsd, setBudgetUsd] = useState<number | string>('');
  // An agent created by a save whose skill assignments then failed: the next save updates it.
  const created = useRef<string | null>(null);

  const offers = new Map((models.data?.models ?? []).map((m) => [m.id, m]));
  const tenantAgents = useQuery({ queryKey: ['agents', 'all'], queryFn: () => client.agents.list({ limit: 100 }).toArray() });
  // An agent does not delegate to itself.
  const delegateOptions = tenantAgents.data?.filter((a) => a.id !== agentId).map((a) => ({ value: a.id, label: a.name })) ?? null;

  const save = useMutation({
    mutationFn: async (v: AgentFormValues) => {
      const built = bodyOf(v);
      // What the schema's limits refuse is said at once, and nothing is sent.
      const local = localAgentErrors(built);
      if (local.length) throw new AgentSaveError(new LocalFieldErrors(local), agentErrors(v, local));
      const body = built as Parameters<typeof client.agents.create>[0];
      const changesFor = (current: AssignedSkill[]) => skillChanges(v.skills, current, v.loadedSkills);
      if (!skillsOff) changesFor([]); // a skill chosen twice is refused before anything is saved
      const targetId = isNew ? created.current : agentId;
      let saved: Agent;
      try {
        saved = targetId ? await client.agents.update(targetId, body) : await client.agents.create(body);
      } catch (err) {
        throw new AgentSaveError(err, err instanceof AgentryError ? agentErrors(v, err.errors ?? []) : noErrors());
      }
      if (isNew) created.current = saved.id;
      queryClient.setQueryData(['agent', saved.id], saved);
      if (!skillsOff) {
        const current =
          isNew && !targetId
            ? []
            : ((await client.http.json<{ skills: AssignedSkill[] }>('GET', apiPath`/api/skills/agent/${saved.id}`)).skills ?? []);
        const changes = changesFor(current);
        const failed = noErrors();
        const attempt = async (row: number | null, call: () => Promise<unknown>) => {
          try {
            await call();
          } catch (err) {
            const fields = err instanceof AgentryError ? (err.errors ?? []) : [];
            const priority = fields.find((f) => /priority/.test(f.path));
            if (row === null) failed.fields.skills = messageOf(err);
            else if (priority) failed.skills[`${row}.priority`] = priority.message;
            else failed.skills[`${row}.skillId`] = messageOf(err);
            failed.summary.push(`${row === null ? 'Skills' : `Skill ${row + 1}`}: ${priority?.message ?? messageOf(err)}`);
          }
        };
        for (const skillId of changes.unassign) {
          await attempt(null, () => client.http.json('DELETE', apiPath`/api/skills/${skillId}/unassign/${saved.id}`));
        }
        for (const a of changes.assign) {
          await attempt(a.row, () => client.skills.assign(a.skillId, { agentId: saved.id, priority: a.priority }));
        }
        for (const u of changes.update) {
          await attempt(u.row, () =>
            client.http.json('PATCH', apiPath`/api/skills/${u.skillId}/assignments/${saved.id}`, { body: { priority: u.priority } }),
          );
        }
        await queryClient.invalidateQueries({ queryKey: ['agent', saved.id, 'skills'] });
        if (Object.keys(failed.skills).length || failed.fields.skills) {
          throw new AgentSaveError(new Error('the agent was saved, but not every skill assignment'), failed);
        }
      }
      return saved;
    },
    onSuccess: (saved) => {
      queryClient.invalidateQueries({ queryKey: ['agents'] });
      created.current = null;
      setValues(null);
      if (isNew) navigate({ to: '/agents/$agentId', params: { agentId: saved.id } });
    },
  });
  const saveBudget = useMutation({
    mutationFn: () =>
      client.http.json('PUT', apiPath`/api/v1/agents/${agentId}/budget`, {
        body: { monthlyBudgetUsd: budgetUsd === '' ? null : Number(budgetUsd) },
      }),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['agent', agentId, 'budget'] }),
  });

  if (!form) return agent.error ? <Alert color="red">{messageOf(agent.error)}</Alert> : <Text>Loading…</Text>;
  const errors = errorsOf(save.error);
  const hasFieldErrors = [errors.fields, errors.mcp, errors.delegations, errors.a2a, errors.skills].some((e) => Object.keys(e).length > 0);
  const update = (patch: Partial<AgentFormValues>) => setValues({ ...form, ...patch });
  const set = (field: 'name' | 'appId' | 'description' | 'model' | 'systemPrompt' | 'configuration' | 'summaryModel') => (value: string) =>
    update({ [field]: value });
  const skillOptions = (catalog.data?.skills ?? []).map((s) => ({ value: s.id, label: s.name }));
  // An assigned skill the catalog page does not hold (archived, or past its first 200) still shows by id.
  for (const row of form.skills) {
    if (row.skillId && !skillOptions.some((o) => o.value === row.skillId)) skillOptions.push({ value: row.skillId, label: row.skillId });
  }

  return (
    <Stack maw={820}>
      <Group justify="space-between">
        <Title order={1} size="h2">
          {isNew ? 'New agent' : form.name}
        </Title>
        {!isNew && (
          <Group gap="xs">
            <ButtonLink variant="default" to="/memory" search={{ agentId }}>
              Memory
            </ButtonLink>
            <ButtonLink variant="light" to="/playground" search={{ agentId }}>
              Open in playground
            </ButtonLink>
          </Group>
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
          <FormErrorSummary summary={errors.summary} />
          <Group grow align="start">
            <TextInput
              label="Name"
              required
              value={form.name}
              onChange={(e) => set('name')(e.currentTarget.value)}
              error={errors.fields.name}
            />
            <TextInput
              label="App"
              required
              value={form.appId}
              onChange={(e) => set('appId')(e.currentTarget.value)}
              error={errors.fields.appId}
            />
          </Group>
          <TextInput
            label="Description"
            value={form.description}
            onChange={(e) => set('description')(e.currentTarget.value)}
            error={errors.fields.description}
          />
          <ModelInput
            label="Model"
            description="provider/model: pick one this server offers or type another"
            offers={offers}
            value={form.model}
            onChange={set('model')}
            error={
              errors.fields.model ?? (models.error ? `the server's model list could not be read: ${messageOf(models.error)}` : undefined)
            }
          />
          <Textarea
            label="System prompt"
            autosize
            minRows={3}
            value={form.systemPrompt}
            onChange={(e) => set('systemPrompt')(e.currentTarget.value)}
            error={errors.fields.systemPrompt}
          />
          <Checkbox.Group
            label="Built-in tools"
            description="skills: skill_discover, skill_query, skill_request; connectors: connector_discover, connector_request; memory: memory_read, memory_append, memory_replace"
            value={form.builtins}
            onChange={(builtins) => update({ builtins })}
            error={errors.fields.builtins}
          >
            <Group mt="xs">
              {BUILTIN_GROUPS.map((g) => (
                <Checkbox key={g} value={g} label={g} />
              ))}
            </Group>
          </Checkbox.Group>
          <RowSection
            title="MCP servers"
            empty="No MCP server: the agent's tools are the built-in ones above and those below."
            rows={form.mcp}
            onRows={(mcp) => update({ mcp })}
            newRow={emptyMcpRow}
            addLabel="Add MCP server"
            max={MAX_MCP_ROWS}
            row={(row, i, edit) => <McpServerRow row={row} index={i} errors={errors.mcp} {...edit} />}
          />
          <RowSection
            title="Delegations"
            hint="Other agents of this tenant, each a tool the model may call with a task (docs/runtime.md)."
            rows={form.delegations}
            onRows={(delegations) => update({ delegations })}
            newRow={emptyDelegationRow}
            addLabel="Add delegation"
            row={(row, i, edit) => (
              <DelegationRowInput row={row} index={i} agents={delegateOptions} errors={errors.delegations} {...edit} />
            )}
          />
          <RowSection
            title="Remote A2A agents"
            rows={form.a2a}
            onRows={(a2a) => update({ a2a })}
            newRow={emptyA2aRow}
            addLabel="Add A2A agent"
            max={MAX_A2A_ROWS}
            row={(row, i, edit) => <A2aRowInput row={row} index={i} errors={errors.a2a} {...edit} />}
          />
          <ModelsInput
            offers={offers}
            value={form.fallbackModels}
            onChange={(fallbackModels) => update({ fallbackModels })}
            error={errors.fields.fallbackModels}
          />
          <ModelInput
            label="Summary model"
            placeholder="the agent's own model"
            description="summarises the turns the model's window no longer holds; empty: the agent's own model"
            offers={offers}
            value={form.summaryModel}
            onChange={set('summaryModel')}
            error={errors.fields.summaryModel}
          />
          <JsonInput
            label="Configuration"
            description="temperature, maxSteps, maxTokens, memoryWindow, onActiveRun, toolTimeoutMs, approval, publicAgentCard"
            autosize
            minRows={2}
            value={form.configuration}
            onChange={set('configuration')}
            error={errors.fields.configuration}
            // Mantine shows this instead of `error` while the text is not JSON; before a save, only a red border.
            validationError={errors.fields.configuration}
          />
          <Stack gap="xs">
            <Title order={4}>Skills</Title>
            {skillsLoadFailed && (
              <Alert color="red" title="Skills not loaded">
                Skills cannot be changed here: {skillsLoadFailed}. Saving leaves the agent's skills as they are.
              </Alert>
            )}
            {skillsDenied && (
              <Text size="sm" c="dimmed">
                Skills cannot be assigned here: {skillsDenied}.
              </Text>
            )}
            {!skillsOff && catalog.data && catalog.data.skills.length === 0 && form.skills.length === 0 && (
              <Text size="sm" c="dimmed">
                The tenant has no skills yet (import or acquire them on the Skills page).
              </Text>
            )}
            {form.skills.map((row, i) => (
              <Group key={row.key} align="start" data-testid="skill-row">
                <Select
                  label="Skill"
                  aria-label={`Skill ${i + 1}`}
                  searchable
                  placeholder="choose a skill"
                  data={skillOptions}
                  value={row.skillId}
                  disabled={!!skillsOff}
                  title={skillsOff ?? undefined}
                  onChange={(skillId) => update({ skills: form.skills.map((r) => (r.key === row.key ? { ...r, skillId } : r)) })}
                  error={errors.skills[`${i}.skillId`]}
                  style={{ flex: 1 }}
                />
                <NumberInput
                  label="Priority"
                  aria-label={`Priority of skill ${i + 1}`}
                  description="higher: used first"
                  w={160}
                  value={row.priority}
                  disabled={!!skillsOff}
                  title={skillsOff ?? undefined}
                  onChange={(priority) => update({ skills: form.skills.map((r) => (r.key === row.key ? { ...r, priority } : r)) })}
                  error={errors.skills[`${i}.priority`]}
                />
                <Button
                  mt={24}
                  variant="subtle"
                  color="red"
                  disabled={!!skillsOff}
                  title={skillsOff ?? undefined}
                  onClick={() => update({ skills: form.skills.filter((r) => r.key !== row.key) })}
                >
                  Remove skill
                </Button>
              </Group>
            ))}
            {errors.fields.skills && (
              <Text c="red" size="sm">
                {errors.fields.skills}
              </Text>
            )}
            <Group>
              <Tooltip label={skillsOff} disabled={!skillsOff}>
                <Button
                  variant="default"
                  disabled={!!skillsOff || form.skills.length >= MAX_SKILL_ROWS}
                  onClick={() => update({ skills: [...form.skills, emptySkillRow()] })}
                >
                  Add skill
                </Button>
              </Tooltip>
            </Group>
          </Stack>
          {save.error && !hasFieldErrors && (
            <Alert color="red" title="Not saved">
              {messageOf(save.error)}
            </Alert>
          )}
          {save.error && hasFieldErrors && (
            <Text c="red" size="sm">
              {partlySaved(save.error) ? messageOf(save.error) : 'Nothing was saved'}:{' '}
              {errors.summary.length === 1 ? 'a problem, listed' : `${errors.summary.length} problems, listed`} at the top of the form and
              at their fields.
            </Text>
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

/** A save that failed, with its errors already placed at the form's fields. */
class AgentSaveError extends Error {
  constructor(
    readonly cause: unknown,
    readonly placed: FormErrors,
  ) {
    super(messageOf(cause));
  }
}

/** The agent was saved, only (some of) its skill assignments were not. */
const partlySaved = (err: unknown) =>
  err instanceof AgentSaveError && !(err.cause instanceof AgentryError) && !(err.cause instanceof LocalFieldErrors);

function errorsOf(err: unknown): FormErrors {
  if (err instanceof AgentSaveError) return err.placed;
  if (err instanceof LocalFormError) {
    const out = noErrors();
    for (const [key, message] of Object.entries(err.errors)) {
      const row = /^delegations\.(\d+)\.(.+)$/.exec(key);
      const skill = /^(\d+)\./.exec(key);
      if (row) {
        out.delegations[`${row[1]}.${row[2]}`] = message;
        out.summary.push(`Delegation ${Number(row[1]) + 1} agent: ${message}`);
      } else if (skill) {
        out.skills[key] = message;
        out.summary.push(`Skill ${Number(skill[1]) + 1}: ${message}`);
      } else {
        out.fields[key] = message;
        out.summary.push(`${key === 'configuration' ? 'Configuration' : key}: ${message}`);
      }
    }
    return out;
  }
  return noErrors();
}
