import type { RunEvent } from '@agentry/client';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { messageOf, useClient } from '../../api';
import { approvalKeys, runApprovalsQuery } from '../approvals/queries';
import { runKeys, runQuery } from './queries';

/** A run's details (GET /api/v1/runs/:runId); shared with the playground's turns by its query key. */
export function useRun(runId: string, options: { staleTime?: number } = {}) {
  const client = useClient();
  return useQuery({
    ...runQuery(client, runId),
    ...options,
    // A run that waits for a person ends no stream: its status is read again until it is decided.
    refetchInterval: (query) => (query.state.data?.status === 'awaiting_approval' ? 5000 : false),
  });
}

/** The tool calls of the run that asked a person, decided or not (GET /api/v1/approvals?runId=), read again while the run goes on. */
export function useRunApprovals(runId: string, active: boolean) {
  const client = useClient();
  return useQuery({ ...runApprovalsQuery(client, runId), refetchInterval: active ? 5000 : false });
}

/** Every event of the run from the first, then live ones until it ends (the SDK resumes a dropped stream). */
export function useRunEvents(runId: string) {
  const client = useClient();
  const queryClient = useQueryClient();
  const [events, setEvents] = useState<RunEvent[]>([]);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    const controller = new AbortController();
    setEvents([]);
    setError(null);
    (async () => {
      for await (const event of client.runs.events(runId, { lastEventId: 0, signal: controller.signal })) {
        setEvents((list) => [...list, event]);
        // A call that waits for a person, or a decision's continuation: the trace's approvals change.
        if (event.type === 'approval_required' || event.type === 'tool_call_end')
          void queryClient.invalidateQueries({ queryKey: approvalKeys.ofRun(runId) });
      }
      await Promise.all([
        queryClient.invalidateQueries({ queryKey: runKeys.detail(runId) }),
        queryClient.invalidateQueries({ queryKey: approvalKeys.ofRun(runId) }),
      ]);
    })().catch((err) => {
      if (!controller.signal.aborted) setError(messageOf(err));
    });
    return () => controller.abort();
  }, [client, runId, queryClient]);
  return { events, error };
}
