import type { RunSummary, Task, TaskSummary } from '@agentry/client';
import {
  Alert,
  Badge,
  Button,
  Code,
  CopyButton,
  Group,
  JsonInput,
  List,
  Modal,
  SegmentedControl,
  Select,
  Stack,
  Switch,
  Table,
  Tabs,
  Text,
  TextInput,
  Textarea,
  Title,
  Tooltip,
} from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useNavigate, useParams } from '@tanstack/react-router';
import { useMemo, useState } from 'react';
import { messageOf, useClient, useDenied } from '../api';
import { FormErrorSummary } from '../form-error-summary';
import { LocalFieldErrors, placeErrors } from '../lib/form-errors.js';
import { checkFields, LIMITS } from '../lib/form-limits.js';
import { cronPreview } from '../lib/cron-preview';
import { taskActionRefused, taskStatusView } from '../lib/task-actions';
import { AnchorLink } from '../links';
import { formatDate, formatDuration, formatUsd } from '../features/runs/format';
import { WarningsBadge } from '../features/runs/run-warnings';
import { StatusBadge } from './runs';
import { apiPath } from '../lib/api-path.js';

type TaskType = 'one_time' | 'scheduled' | 'triggered';
const browserZone = Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
// Browsers list canonical zones only (not always UTC itself): UTC and this browser's zone come first.
const supportedZones = (Intl as unknown as { supportedValuesOf?: (k: string) => string[] }).supportedValuesOf?.('timeZone') ?? [];
const ZONES: string[] = [...new Set(['UTC', browserZone, ...supportedZones])];

/** The next five fire times of a cron expression in the task's time zone, as the form is filled. */
function CronPreviewList({ expression, timeZone }: { expression: string; timeZone: string }) {
  const preview = useMemo(() => cronPreview(expression, timeZone), [expression, timeZone]);
  if (!preview.ok)
    return (
      <Text size="sm" c="red" data-testid="cron-preview">
        {preview.error}
      </Text>
    );
  return (
    <Stack gap={2} data-testid="cron-preview">
      <Text size="sm" fw={500}>
        Next five fire times ({timeZone})
      </Text>
      <List size="sm">
        {preview.times.map((t) => (
          <List.Item key={t.iso}>{t.local}</List.Item>
        ))}
      </List>
    </Stack>
  );
}

/** The task form's fields by the names the API gives them, as the form labels them. */
const TASK_FIELDS: Record<string, string> = {
  type: 'Kind',
  name: 'Name',
  description: 'Description',
  agentId: 'Agent',
  schedule: 'Cron expression',
  timezone: 'Time zone',
  dueAt: 'Due at',
  input: 'Input',
  requiresApproval: 'Requires approval',
};

function NewTaskForm({ onCreated }: { onCreated(task: Task): void }) {
  const client = useClient();
  const agents = useQuery({ queryKey: ['agents', 'all'], queryFn: () => client.agents.list({ limit: 100 }).toArray() });
  const [type, setType] = useState<TaskType>('one_time');
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const [agentId, setAgentId] = useState<string | null>(null);
  const [schedule, setSchedule] = useState('0 9 * * 1-5');
  const [timezone, setTimezone] = useState(browserZone);
  const [dueAt, setDueAt] = useState('');
  const [input, setInput] = useState('{}');
  const [requiresApproval, setRequiresApproval] = useState(false);
  const create = useMutation({
    mutationFn: () => {
      // The schema's limits and the input's JSON, checked before anything is sent.
      const local = checkFields({ name, description, ...(type === 'scheduled' ? { schedule, timezone } : {}) }, LIMITS.createTask);
      let parsed: Record<string, unknown> = {};
      try {
        parsed = JSON.parse(input || '{}');
        if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed))
          local.push({ path: 'body.input', message: 'must be a JSON object' });
      } catch {
        local.push({ path: 'body.input', message: 'is not valid JSON' });
      }
      if (local.length) throw new LocalFieldErrors(local);
      return client.tasks.create({
        name,
        description,
        agentId: agentId ?? '',
        type,
        input: parsed,
        requiresApproval,
        ...(type === 'scheduled' ? { schedule, timezone } : {}),
        ...(type === 'one_time' && dueAt ? { dueAt: new Date(dueAt).toISOString() } : {}),
        ...(type === 'triggered' ? { trigger: { type: 'webhook' as const } } : {}),
      });
    },
    onSuccess: onCreated,
  });
  const { fields: errors, summary } = placeErrors(create.error, TASK_FIELDS);

  return (
    <form
      onSubmit={(e) => {
        e.preventDefault();
        create.mutate();
      }}
    >
      <Stack>
        <FormErrorSummary summary={summary} title="Not created" />
        <SegmentedControl
          aria-label="Kind of task"
          value={type}
          onChange={(v) => setType(v as TaskType)}
          data={[
            { value: 'one_time', label: 'One-time' },
            { value: 'scheduled', label: 'Cron' },
            { value: 'triggered', label: 'Webhook' },
          ]}
        />
        <TextInput label="Name" required value={name} onChange={(e) => setName(e.currentTarget.value)} error={errors.name} />
        <Textarea
          label="Description (the message the agent gets)"
          required
          autosize
          minRows={2}
          value={description}
          onChange={(e) => setDescription(e.currentTarget.value)}
          error={errors.description}
        />
        <Select
          label="Agent"
          required
          searchable
          data={(agents.data ?? []).map((a) => ({ value: a.id, label: a.name }))}
          value={agentId}
          onChange={setAgentId}
          error={errors.agentId}
        />
        {type === 'scheduled' && (
          <>
            <Group grow align="start">
              <TextInput
                label="Cron expression"
                description="minute hour day-of-month month day-of-week"
                value={schedule}
                onChange={(e) => setSchedule(e.currentTarget.value)}
                error={errors.schedule}
                styles={{ input: { fontFamily: 'var(--mantine-font-family-monospace)' } }}
              />
              <Select
                label="Time zone"
                searchable
                data={ZONES}
                value={timezone}
                onChange={(z) => setTimezone(z ?? 'UTC')}
                error={errors.timezone}
              />
            </Group>
            <CronPreviewList expression={schedule} timeZone={timezone} />
          </>
        )}
        {type === 'one_time' && (
          <TextInput
            label="Due at (empty: now)"
            type="datetime-local"
            value={dueAt}
            onChange={(e) => setDueAt(e.currentTarget.value)}
            error={errors.dueAt}
          />
        )}
        {type === 'triggered' && <Text size="sm">A webhook URL and its signing secret are shown once, after creation.</Text>}
        <JsonInput
          label="Input (JSON)"
          value={input}
          onChange={setInput}
          autosize
          minRows={2}
          error={errors.input}
          // Mantine shows this instead of `error` while the text is not JSON; before a submit, only a red border
          // (a message appearing on blur would move the button from under the pointer).
          validationError={errors.input}
        />
        <Switch
          label="Requires approval before each run"
          checked={requiresApproval}
          onChange={(e) => setRequiresApproval(e.currentTarget.checked)}
        />
        {create.error && !summary.length && <Alert color="red">{messageOf(create.error)}</Alert>}
        <Button type="submit" loading={create.isPending}>
          Create task
        </Button>
      </Stack>
    </form>
  );
}

export function TasksPage() {
  const client = useClient();
  const denied = useDenied()('agents:write');
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const [creating, setCreating] = useState(false);
  const [created, setCreated] = useState<Task | null>(null);
  const tasks = useQuery({
    queryKey: ['tasks'],
    refetchInterval: 10_000,
    queryFn: () => client.http.json<{ tasks: TaskSummary[]; total: number }>('GET', '/api/v1/tasks', { query: { limit: 100 } }),
  });

  return (
    <Stack>
      <Group justify="space-between">
        <Title order={1} size="h2">
          Tasks
        </Title>
        <Tooltip label={denied} disabled={!denied}>
          <Button onClick={() => setCreating(true)} disabled={!!denied}>
            New task
          </Button>
        </Tooltip>
      </Group>
      {tasks.error && <Alert color="red">{messageOf(tasks.error)}</Alert>}
      <Table.ScrollContainer minWidth={700}>
        <Table striped highlightOnHover>
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Name</Table.Th>
              <Table.Th>Type</Table.Th>
              <Table.Th>Schedule</Table.Th>
              <Table.Th>Status</Table.Th>
              <Table.Th>Next run</Table.Th>
              <Table.Th>Last run</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {(tasks.data?.tasks ?? []).map((task) => (
              <Table.Tr key={task.id}>
                <Table.Td>
                  <AnchorLink to="/tasks/$taskId" params={{ taskId: task.id }}>
                    {task.name}
                  </AnchorLink>
                </Table.Td>
                <Table.Td>{task.type}</Table.Td>
                <Table.Td>
                  <Text ff="monospace" size="sm">
                    {task.schedule ?? '—'}
                  </Text>
                </Table.Td>
                <Table.Td>
                  <TaskStatus task={task} />
                </Table.Td>
                <Table.Td>{task.nextRunAt ? new Date(task.nextRunAt).toLocaleString() : '—'}</Table.Td>
                <Table.Td>{task.lastRunAt ? new Date(task.lastRunAt).toLocaleString() : '—'}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
      {tasks.data?.total === 0 && <Text c="dimmed">No tasks yet.</Text>}
      <Modal opened={creating} onClose={() => setCreating(false)} title="New task" size="lg">
        <NewTaskForm
          onCreated={(task) => {
            setCreating(false);
            queryClient.invalidateQueries({ queryKey: ['tasks'] });
            if (task.trigger?.type === 'webhook' && task.trigger.secret) setCreated(task);
            else navigate({ to: '/tasks/$taskId', params: { taskId: task.id } });
          }}
        />
      </Modal>
      <Modal opened={created !== null} onClose={() => setCreated(null)} title="Webhook created" size="lg">
        {created?.trigger?.type === 'webhook' && (
          <Stack>
            <Alert color="yellow">The secret is shown this once: copy it now. Deliveries are signed with it.</Alert>
            <Text size="sm" fw={500}>
              URL
            </Text>
            <Code block>{created.trigger.url}</Code>
            <Text size="sm" fw={500}>
              Secret
            </Text>
            <Group>
              <Code data-testid="webhook-secret">{created.trigger.secret}</Code>
              <CopyButton value={created.trigger.secret ?? ''}>
                {({ copied, copy }) => (
                  <Button size="xs" variant="light" onClick={copy}>
                    {copied ? 'Copied' : 'Copy'}
                  </Button>
                )}
              </CopyButton>
            </Group>
          </Stack>
        )}
      </Modal>
    </Stack>
  );
}

interface Fire {
  id: string;
  source: string;
  scheduledFor: string | null;
  decidedAt: string;
  decision: string;
  reason: string | null;
}

export function TaskPage() {
  const { taskId } = useParams({ from: '/app/tasks/$taskId' });
  const client = useClient();
  const denied = useDenied()('agents:write');
  const navigate = useNavigate();
  const task = useQuery({ queryKey: ['task', taskId], refetchInterval: 5000, queryFn: () => client.tasks.get(taskId) });
  const runs = useQuery({
    queryKey: ['task', taskId, 'runs'],
    refetchInterval: 5000,
    queryFn: () => client.http.json<{ runs: RunSummary[] }>('GET', apiPath`/api/v1/tasks/${taskId}/runs`, { query: { limit: 50 } }),
  });
  const fires = useQuery({
    queryKey: ['task', taskId, 'fires'],
    refetchInterval: 5000,
    queryFn: () => client.http.json<{ fires: Fire[] }>('GET', apiPath`/api/v1/tasks/${taskId}/fires`, { query: { limit: 50 } }),
  });
  const act = useMutation({
    mutationFn: async (action: 'run' | 'cancel' | 'retry' | 'delete' | 'approve' | 'reject') => {
      if (action === 'delete') return client.tasks.delete(taskId);
      return client.http.json('POST', apiPath`/api/v1/tasks/${taskId}/${action}`);
    },
    onSuccess: (_data, action) => {
      if (action === 'delete') navigate({ to: '/tasks' });
      else {
        task.refetch();
        runs.refetch();
      }
    },
  });
  const [confirmDelete, setConfirmDelete] = useState(false);
  const t = task.data;

  return (
    <Stack maw={960}>
      <Title order={1} size="h2">
        {t?.name ?? 'Task'}
      </Title>
      {task.error && <Alert color="red">{messageOf(task.error)}</Alert>}
      {t && (
        <>
          <Group gap="lg">
            <TaskStatus task={t} />
            <Text size="sm">{t.type}</Text>
            {t.schedule && (
              <Text size="sm" ff="monospace">
                {t.schedule} ({t.timezone ?? 'UTC'})
              </Text>
            )}
            {t.nextRunAt && <Text size="sm">next {new Date(t.nextRunAt).toLocaleString()}</Text>}
          </Group>
          <Text>{t.description}</Text>
          {t.schedule && <CronPreviewList expression={t.schedule} timeZone={t.timezone ?? 'UTC'} />}
          {t.trigger?.type === 'webhook' && (
            <Text size="sm">
              Webhook: <Code>{t.trigger.url}</Code>
            </Text>
          )}
          <Group>
            {t.status === 'awaiting_approval' &&
              (['approve', 'reject'] as const).map((action) => (
                <Tooltip key={action} label={denied} disabled={!denied}>
                  <Button
                    color={action === 'approve' ? 'green' : 'red'}
                    variant={action === 'approve' ? 'filled' : 'light'}
                    disabled={!!denied || act.isPending}
                    loading={act.isPending && act.variables === action}
                    onClick={() => act.mutate(action)}
                  >
                    {action === 'approve' ? 'Approve' : 'Reject'}
                  </Button>
                </Tooltip>
              ))}
            {(['run', 'cancel', 'retry'] as const).map((action) => {
              const refused = denied ?? taskActionRefused(action, t);
              return (
                <Tooltip key={action} label={refused} disabled={!refused}>
                  <Button variant="default" disabled={!!refused} onClick={() => act.mutate(action)}>
                    {action === 'run' ? 'Run now' : action === 'cancel' ? 'Cancel' : 'Retry'}
                  </Button>
                </Tooltip>
              );
            })}
            <Button color="red" variant="light" disabled={!!denied} title={denied ?? undefined} onClick={() => setConfirmDelete(true)}>
              Delete…
            </Button>
          </Group>
          {act.error && <Alert color="red">{messageOf(act.error)}</Alert>}
        </>
      )}
      <Tabs defaultValue="runs">
        <Tabs.List>
          <Tabs.Tab value="runs">Runs</Tabs.Tab>
          <Tabs.Tab value="fires">Fire log</Tabs.Tab>
        </Tabs.List>
        <Tabs.Panel value="runs" pt="sm">
          <Table>
            <Table.Tbody>
              {(runs.data?.runs ?? []).map((run) => (
                <Table.Tr key={run.runId}>
                  <Table.Td>
                    <AnchorLink to="/runs/$runId" params={{ runId: run.runId }} ff="monospace" size="sm">
                      {run.runId.slice(-12)}
                    </AnchorLink>
                  </Table.Td>
                  <Table.Td>
                    <Group gap={6} wrap="nowrap">
                      <StatusBadge status={run.status} />
                      <WarningsBadge warnings={run.warnings} />
                    </Group>
                  </Table.Td>
                  <Table.Td>{formatDuration(run.duration)}</Table.Td>
                  <Table.Td>{formatUsd(run.cost)}</Table.Td>
                  <Table.Td>{formatDate(run.createdAt)}</Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
          {runs.data?.runs.length === 0 && <Text c="dimmed">No runs yet.</Text>}
        </Tabs.Panel>
        <Tabs.Panel value="fires" pt="sm">
          <Table>
            <Table.Tbody>
              {(fires.data?.fires ?? []).map((fire) => (
                <Table.Tr key={fire.id}>
                  <Table.Td>{new Date(fire.decidedAt).toLocaleString()}</Table.Td>
                  <Table.Td>{fire.source}</Table.Td>
                  <Table.Td>{fire.decision}</Table.Td>
                  <Table.Td>{fire.reason ?? ''}</Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
          {fires.data?.fires.length === 0 && <Text c="dimmed">No fires yet.</Text>}
        </Tabs.Panel>
      </Tabs>
      <Modal opened={confirmDelete} onClose={() => setConfirmDelete(false)} title="Delete task">
        <Stack>
          <Text>Delete this task? Its runs stay in the history.</Text>
          <Group justify="end">
            <Button variant="default" onClick={() => setConfirmDelete(false)}>
              Keep
            </Button>
            <Button color="red" onClick={() => act.mutate('delete')}>
              Delete
            </Button>
          </Group>
        </Stack>
      </Modal>
    </Stack>
  );
}

/** A task's badge: what it does now, and for a recurring or triggered one its latest run's outcome beside it. */
function TaskStatus({ task }: { task: { type: string; status: string; lastRunAt: string | null } }) {
  const view = taskStatusView(task);
  return (
    <Group gap={6} wrap="nowrap" data-testid="task-status">
      <Badge variant="light" color={view.color}>
        {view.label}
      </Badge>
      {view.lastRun && (
        <Text size="xs" c="dimmed">
          {view.lastRun}
        </Text>
      )}
    </Group>
  );
}
