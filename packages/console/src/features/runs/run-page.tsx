import { Alert, Button, Code, Group, Spoiler, Stack, Title } from '@mantine/core';
import { useParams } from '@tanstack/react-router';
import { useMemo } from 'react';
import { messageOf, useClient, useDenied } from '../../api';
import { RunFiles } from '../code/run-files';
import { Citations } from './citations';
import { EventLog } from './event-log';
import { RunFigures } from './run-figures';
import { RunTrace } from './run-trace';
import { RunWarnings } from './run-warnings';
import { buildTrace } from './trace';
import { useRun, useRunApprovals, useRunEvents } from './use-run';

/** A run's page: its figures, warnings, input, the trace of its steps, its citations and its event log. */
export function RunPage() {
  const { runId } = useParams({ from: '/app/runs/$runId' });
  const client = useClient();
  const denied = useDenied()('agents:write');
  const run = useRun(runId);
  const r = run.data;
  const active = !!r && (r.status === 'queued' || r.status === 'running' || r.status === 'awaiting_approval');
  const approvals = useRunApprovals(runId, active);
  const { events, error } = useRunEvents(runId);
  const trace = useMemo(() => (r ? buildTrace(r, approvals.data ?? [], events) : null), [r, approvals.data, events]);

  return (
    <Stack maw={1100}>
      <Group justify="space-between">
        <Title order={1} size="h2">
          Run
        </Title>
        {r && (r.status === 'queued' || r.status === 'running') && (
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
      {r && <RunFigures run={r} />}
      {r?.error && (
        <Alert color="red" title={r.error.code}>
          {r.error.message}
        </Alert>
      )}
      {r && <RunWarnings warnings={r.warnings} />}
      {r && (
        <>
          <Title order={4}>Input</Title>
          <Spoiler maxHeight={160} showLabel="Show all" hideLabel="Show less">
            <Code block style={{ whiteSpace: 'pre-wrap', wordBreak: 'break-word' }}>
              {r.input}
            </Code>
          </Spoiler>
        </>
      )}
      {approvals.error && <Alert color="red">approvals: {messageOf(approvals.error)}</Alert>}
      {r && trace && <RunTrace trace={trace} traceId={r.traceId} />}
      {r && <Citations citations={r.citations} />}
      {r && <RunFiles runId={r.runId} />}
      <Title order={4}>Events</Title>
      {error && <Alert color="red">{error}</Alert>}
      {/* A long run's log is folded: the trace above is where its steps are read. */}
      <Spoiler maxHeight={600} showLabel="Show the whole log" hideLabel="Fold the log">
        <EventLog events={events} />
      </Spoiler>
    </Stack>
  );
}
