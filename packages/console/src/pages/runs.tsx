import type { RunEvent, RunSummary } from '@agentry/client';
import { Alert, Badge, Button, Code, Group, Pagination, Select, Stack, Table, Text, Timeline, Title } from '@mantine/core';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useNavigate, useParams, useSearch } from '@tanstack/react-router';
import { useEffect, useState } from 'react';
import { messageOf, useClient, useDenied } from '../api';
import { CodeCall, isCodeCall } from '../code-call';
import { AnchorLink } from '../links';

const STATUSES = ['queued', 'running', 'awaiting_approval', 'completed', 'failed', 'cancelled'];
const statusColor = (s: string) =>
  s === 'completed' ? 'green' : s === 'failed' ? 'red' : s === 'cancelled' ? 'gray' : s === 'running' ? 'blue' : 'yellow';

export const StatusBadge = ({ status }: { status: string }) => <Badge color={statusColor(status)}>{status}</Badge>;
export const usd = (n: number) => `$${n.toFixed(6)}`;

const KINDS = ['execute', 'chat', 'stream', 'message', 'task', 'delegation', 'chat_completion', 'a2a'];
const RUNS_PAGE_SIZE = 50;

/** The tenant's runs across its agents, newest first, filtered and paged by the server (GET /api/v1/runs). */
function useRuns(filter: { agentId?: string; status?: string; kind?: string }, page: number) {
  const client = useClient();
  return useQuery({
    queryKey: ['runs', 'tenant', filter.agentId, filter.status, filter.kind, page],
    refetchInterval: 5000,
    queryFn: () =>
      client.http.json<{ runs: RunSummary[]; total: number }>('GET', '/api/v1/runs', {
        query: { ...filter, page, limit: RUNS_PAGE_SIZE },
      }),
  });
}

export function RunsPage() {
  const client = useClient();
  const navigate = useNavigate({ from: '/runs' });
  const search = useSearch({ from: '/app/runs' });
  const agents = useQuery({ queryKey: ['agents', 'all'], queryFn: () => client.agents.list({ limit: 100 }).toArray() });
  const page = search.page ?? 1;
  const runs = useRuns({ agentId: search.agentId, status: search.status, kind: search.kind }, page);
  const names = new Map((agents.data ?? []).map((a) => [a.id, a.name]));
  const shown = runs.data?.runs ?? [];

  return (
    <Stack>
      <Title order={2}>Runs</Title>
      <Group align="end">
        <Select
          label="Agent"
          clearable
          searchable
          placeholder="every agent"
          data={(agents.data ?? []).map((a) => ({ value: a.id, label: a.name }))}
          value={search.agentId ?? null}
          onChange={(id) => navigate({ search: { ...search, agentId: id ?? undefined, page: undefined } })}
        />
        <Select
          label="Status"
          clearable
          data={STATUSES}
          value={search.status ?? null}
          onChange={(status) => navigate({ search: { ...search, status: status ?? undefined, page: undefined } })}
        />
        <Select
          label="Kind"
          clearable
          data={KINDS}
          value={search.kind ?? null}
          onChange={(kind) => navigate({ search: { ...search, kind: kind ?? undefined, page: undefined } })}
        />
      </Group>
      {runs.error && <Alert color="red">{messageOf(runs.error)}</Alert>}
      <Table.ScrollContainer minWidth={800}>
        <Table striped highlightOnHover>
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Run</Table.Th>
              <Table.Th>Agent</Table.Th>
              <Table.Th>Kind</Table.Th>
              <Table.Th>Status</Table.Th>
              <Table.Th>Duration</Table.Th>
              <Table.Th>Tokens</Table.Th>
              <Table.Th>Cost</Table.Th>
              <Table.Th>Started</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {shown.map((run) => (
              <Table.Tr key={run.runId}>
                <Table.Td>
                  <AnchorLink to="/runs/$runId" params={{ runId: run.runId }} ff="monospace" size="sm">
                    {run.runId.slice(-12)}
                  </AnchorLink>
                </Table.Td>
                <Table.Td>{names.get(run.agentId) ?? run.agentId}</Table.Td>
                <Table.Td>{run.kind}</Table.Td>
                <Table.Td>
                  <StatusBadge status={run.status} />
                </Table.Td>
                <Table.Td>{run.duration !== null ? `${run.duration} ms` : '—'}</Table.Td>
                <Table.Td>
                  {run.tokenUsage.inputTokens} / {run.tokenUsage.outputTokens}
                </Table.Td>
                <Table.Td>{usd(run.cost)}</Table.Td>
                <Table.Td>{new Date(run.createdAt).toLocaleString()}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
      {runs.data && shown.length === 0 && <Text c="dimmed">No runs.</Text>}
      {runs.data && runs.data.total > RUNS_PAGE_SIZE && (
        <Pagination
          total={Math.ceil(runs.data.total / RUNS_PAGE_SIZE)}
          value={page}
          onChange={(p) => navigate({ search: { ...search, page: p } })}
        />
      )}
    </Stack>
  );
}

interface TimelineEntry {
  key: string;
  title: string;
  color: string;
  body?: string;
  /** A code tool call's end: shown with its code, output and files instead of the result's JSON. */
  code?: { name: string; input: unknown; result: Record<string, unknown> };
}

/** A run's events as timeline entries: consecutive tokens as one model output, tool calls, the end. */
function timelineOf(events: RunEvent[]): TimelineEntry[] {
  const out: TimelineEntry[] = [];
  const started = new Map<string, { name: string; input: unknown }>();
  for (const event of events) {
    const last = out[out.length - 1];
    if (event.type === 'token') {
      if (last?.title === 'Model output') last.body = (last.body ?? '') + event.data.text;
      else out.push({ key: `t${event.seq}`, title: 'Model output', color: 'indigo', body: event.data.text });
    } else if (event.type === 'tool_call_start') {
      started.set(event.data.id, { name: event.data.name, input: event.data.input });
      out.push({ key: `s${event.seq}`, title: `Tool call ${event.data.name}`, color: 'grape', body: JSON.stringify(event.data.input) });
    } else if (event.type === 'tool_call_end') {
      const call = started.get(event.data.id);
      if (call && isCodeCall(call.name))
        out.push({ key: `e${event.seq}`, title: 'Tool result', color: 'grape', code: { ...call, result: event.data.result } });
      else out.push({ key: `e${event.seq}`, title: 'Tool result', color: 'grape', body: JSON.stringify(event.data.result) });
    } else if (event.type === 'done') {
      out.push({
        key: `d${event.seq}`,
        title: 'Done',
        color: 'green',
        body: `${usd(event.data.cost)} · ${event.data.tokenUsage.inputTokens} in / ${event.data.tokenUsage.outputTokens} out tokens`,
      });
    } else if (event.type === 'error') {
      out.push({ key: `x${event.seq}`, title: `Error ${event.data.code}`, color: 'red', body: event.data.message });
    }
  }
  return out;
}

export function RunPage() {
  const { runId } = useParams({ from: '/app/runs/$runId' });
  const client = useClient();
  const denied = useDenied()('agents:write');
  const queryClient = useQueryClient();
  const run = useQuery({ queryKey: ['run', runId], queryFn: () => client.runs.get(runId) });
  const [events, setEvents] = useState<RunEvent[]>([]);
  const [error, setError] = useState<string | null>(null);

  // Every event from the first, then live ones until the run ends (the SDK resumes a dropped stream).
  useEffect(() => {
    const controller = new AbortController();
    setEvents([]);
    (async () => {
      for await (const event of client.runs.events(runId, { lastEventId: 0, signal: controller.signal })) {
        setEvents((list) => [...list, event]);
      }
      queryClient.invalidateQueries({ queryKey: ['run', runId] });
    })().catch((err) => {
      if (!controller.signal.aborted) setError(messageOf(err));
    });
    return () => controller.abort();
  }, [client, runId, queryClient]);

  const r = run.data;
  const active = r && (r.status === 'queued' || r.status === 'running');
  return (
    <Stack maw={900}>
      <Group justify="space-between">
        <Title order={2}>Run</Title>
        {active && (
          <Button
            color="red"
            variant="light"
            disabled={!!denied}
            title={denied ?? undefined}
            onClick={() => client.runs.cancel(runId).then(() => run.refetch())}
          >
            Cancel run
          </Button>
        )}
      </Group>
      {run.error && <Alert color="red">{messageOf(run.error)}</Alert>}
      {r && (
        <Group gap="lg">
          <StatusBadge status={r.status} />
          <Text size="sm">kind {r.kind}</Text>
          <Text size="sm" ff="monospace">
            {r.model}
          </Text>
          <Text size="sm">{r.duration !== null ? `${r.duration} ms` : 'running'}</Text>
          <Text size="sm">
            {r.tokenUsage.inputTokens} in / {r.tokenUsage.outputTokens} out tokens
          </Text>
          <Text size="sm" data-testid="run-cost">
            {usd(r.cost)}
          </Text>
          {r.conversationId && (
            <AnchorLink to="/playground" search={{ agentId: r.agentId, conversationId: r.conversationId }} size="sm">
              conversation
            </AnchorLink>
          )}
        </Group>
      )}
      {r?.error && (
        <Alert color="red" title={r.error.code}>
          {r.error.message}
        </Alert>
      )}
      {r && (
        <>
          <Title order={4}>Input</Title>
          <Code block>{r.input}</Code>
        </>
      )}
      <Title order={4}>Timeline</Title>
      {error && <Alert color="red">{error}</Alert>}
      <Timeline bulletSize={14} lineWidth={2} data-testid="run-timeline">
        {timelineOf(events).map((entry) => (
          <Timeline.Item key={entry.key} title={entry.title} color={entry.color}>
            {entry.body && (
              <Text size="sm" c="dimmed" style={{ whiteSpace: 'pre-wrap', wordBreak: 'break-word' }} lineClamp={8}>
                {entry.body}
              </Text>
            )}
            {entry.code && <CodeCall name={entry.code.name} input={entry.code.input} result={entry.code.result} />}
          </Timeline.Item>
        ))}
      </Timeline>
    </Stack>
  );
}
