import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import type { ToolDecision } from '../runtime/tool-approvals.js';

/**
 * Tool calls that wait for a person, as the run engine declares them (approvals/ implements it,
 * handed over in app.ts, so runs need not import approvals): the waiting calls recorded in the
 * transaction that pauses the run, the decisions taken in the one that claims it again, and a deleted
 * run's approvals deleted with it.
 */
export interface ToolApprovalRequests {
  /** Records the waiting calls; answers their approval ids, in the order given. */
  request(
    trx: Kysely<Database>,
    r: {
      tenantId: string;
      agentId: string;
      runId: string;
      conversationId: string;
      calls: { toolCallId: string; name: string; arguments: unknown; reason: string }[];
      expiresAt: string;
      onTimeout: 'reject' | 'approve';
    },
  ): Promise<string[]>;
  /** The decisions on the run's calls, marked taken; null while any still waits (nothing is marked then). */
  take(trx: Kysely<Database>, runId: string): Promise<Map<string, ToolDecision> | null>;
  /** Deletes the approvals of runs the retention sweep deletes, in its transaction (their arguments go with them). */
  deleteOfRuns(trx: Kysely<Database>, runIds: string[]): Promise<void>;
}
