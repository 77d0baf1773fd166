import { type Agentry, AgentryError, type components } from '@agentry/client';
import { queryOptions, useQuery } from '@tanstack/react-query';
import { useSession } from '../../api';
import { firstPage } from '../../lib/first-page';
import { runQuery } from '../runs/queries';

/** One thing waiting for a person, or decided: a task awaiting approval, or a tool call (when the server has the inbox). */
export type Approval = components['schemas']['Approval'];

/** The statuses the page shows: the inbox, and the decided tool calls a click away. */
export const SHOWN = ['pending', 'approved', 'rejected', 'expired'] as const;
export type Shown = (typeof SHOWN)[number];

/** How many the inbox and each decided list show (one page of the server's). */
const LISTED = 100;

/**
 * The approvals' query keys, under one root: a decision invalidates `approvalKeys.all`, which reaches the
 * inbox, the decided lists and a run page's approvals (features/runs/use-run.ts).
 */
export const approvalKeys = {
  all: ['approvals'] as const,
  inbox: () => [...approvalKeys.all, 'pending'] as const,
  decided: (status: Shown) => [...approvalKeys.all, 'decided', status] as const,
  ofRun: (runId: string) => [...approvalKeys.all, 'run', runId] as const,
};

/**
 * The inbox: GET /api/v1/approvals (tool calls and tasks) where the server has it, else the tasks
 * awaiting approval (GET /api/v1/tasks/pending-approval), which every version has.
 */
async function fetchInbox(client: Agentry): Promise<{ items: Approval[]; unified: boolean }> {
  try {
    const page = await firstPage(client.approvals.list({ status: 'pending', limit: LISTED }));
    return { items: page.items, unified: true };
  } catch (err) {
    if (!(err instanceof AgentryError && err.status === 404)) throw err;
  }
  const page = await firstPage(client.tasks.pendingApproval({ limit: LISTED }));
  return {
    unified: false,
    items: page.items.map((t) => ({
      id: t.id,
      kind: 'task',
      agentId: t.agentId,
      status: 'pending',
      reason: t.description,
      createdAt: t.createdAt,
      expiresAt: null,
      decision: null,
      toolCall: null,
      task: { id: t.id, name: t.name, description: t.description },
    })),
  };
}

const inboxQuery = (client: Agentry) =>
  queryOptions({ queryKey: approvalKeys.inbox(), refetchInterval: 10_000, queryFn: () => fetchInbox(client) });

/** Decided tool calls, newest first (GET /api/v1/approvals?status=): who decided what, and when. */
export const decidedQuery = (client: Agentry, status: Shown) =>
  queryOptions({
    queryKey: approvalKeys.decided(status),
    queryFn: async () => (await firstPage(client.approvals.list({ status, kind: 'tool_call', limit: LISTED }))).items,
  });

/** The tool calls of a run that asked a person, decided or not (GET /api/v1/approvals?runId=). */
export const runApprovalsQuery = (client: Agentry, runId: string) =>
  queryOptions({
    queryKey: approvalKeys.ofRun(runId),
    queryFn: async () => (await firstPage(client.approvals.list({ runId, limit: LISTED }))).items,
  });

/**
 * The run a card quotes (its user's message, what the model said before the call), under the run's own
 * key (features/runs/queries.ts): the cards of one run share one request, and the run page finds it.
 * What a card quotes does not change while the call waits, so the inbox reads each run once and never
 * polls it (a run page, watching the run's status, does).
 */
export const quotedRunQuery = (client: Agentry, runId: string) =>
  queryOptions({ ...runQuery(client, runId), staleTime: Number.POSITIVE_INFINITY });

/** The inbox, for the page and the navigation's badge (one request for both, read again every 10 s). */
export function useInbox() {
  const { client, me } = useSession();
  return useQuery({ ...inboxQuery(client), enabled: me.credential.permissions.includes('agents:read') });
}
