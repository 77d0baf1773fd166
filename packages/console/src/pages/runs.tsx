import type { RunSummary } from '@agentry/client';
import { Alert, Group, Pagination, Select, Stack, Table, Text, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { useNavigate, useSearch } from '@tanstack/react-router';
import { messageOf, useClient } from '../api';
import { formatDuration, formatTokens, formatUsd } from '../features/runs/format';
import { StatusBadge } from '../features/runs/run-figures';
import { WarningsBadge } from '../features/runs/run-warnings';
import { AnchorLink } from '../links';
import { everyAgentQuery } from '../features/agents/queries';

const STATUSES = ['queued', 'running', 'awaiting_approval', 'completed', 'failed', 'cancelled'];
export { StatusBadge };

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
  const agents = useQuery(everyAgentQuery(client));
  const page = search.page ?? 1;
  const runs = useRuns({ agentId: search.agentId, status: search.status, kind: search.kind }, page);
  const names = new Map((agents.data ?? []).map((a) => [a.id, a.name]));
  const shown = runs.data?.runs ?? [];

  return (
    <Stack>
      <Title order={1} size="h2">
        Runs
      </Title>
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
                  <Group gap={6} wrap="nowrap">
                    <StatusBadge status={run.status} />
                    <WarningsBadge warnings={run.warnings} />
                  </Group>
                </Table.Td>
                <Table.Td>{formatDuration(run.duration)}</Table.Td>
                <Table.Td>{formatTokens(run.tokenUsage)}</Table.Td>
                <Table.Td>{formatUsd(run.cost)}</Table.Td>
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
