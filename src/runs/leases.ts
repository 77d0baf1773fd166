import { now } from '../ids.js';
import * as conversations from '../conversations/turns.js';
import { Loop } from '../scheduler/loop.js';
import { failSpan } from '../tracing/tracing.js';
import { toolCallsColumn } from './columns.js';
import { readStoredEvents } from './events.js';
import type { RunResources } from './resources.js';
import { recoveredToolCalls } from './steps.js';
import * as store from './store.js';
import type { RunError } from './views.js';

/** Leases are renewed this many times per lease, so one late renewal does not lose a run. */
const RENEW_EVERY_FRACTION = 3;
/** Expired leases looked at per recovery pass. */
const RECOVERED_PER_PASS = 100;

/**
 * Leases: this process renews the leases of the runs it executes, and any process declares a
 * running run whose lease expired `failed` (`interrupted`): its process died. Both run on the
 * scheduler's loops (scheduler/loop.ts), one pass at a time.
 */
export class RunLeases {
  private readonly renewal: Loop;
  private readonly recovery: Loop;

  constructor(private readonly r: RunResources) {
    this.renewal = new Loop('lease renewal', r.leaseMs / RENEW_EVERY_FRACTION, () => this.renew(), r.log);
    this.recovery = new Loop('run recovery', r.leaseMs / 2, async () => void (await this.recoverInterrupted()), r.log);
  }

  /** Recovers what expired while no process watched (a failure here fails the start), then keeps at it. */
  async start(): Promise<void> {
    await this.recoverInterrupted();
    this.renewal.start();
    this.recovery.start();
  }

  async stop(): Promise<void> {
    await Promise.all([this.renewal.stop(), this.recovery.stop()]);
  }

  /** Extends the leases of the runs executing here; a cancel asked of another process arrives here through the row. */
  async renew(): Promise<void> {
    const ids = [...this.r.active.keys()];
    if (!ids.length) return;
    await store.renewLeases(this.r.db.kysely, this.r.instanceId, ids, new Date(Date.now() + this.r.leaseMs).toISOString());
    for (const row of await store.cancelRequested(this.r.db.kysely, ids))
      this.r.active.get(row.id)?.controller.abort(new Error('cancelled'));
  }

  /** Declares running runs with an expired lease `failed` (`interrupted`); safe in several processes. */
  async recoverInterrupted(): Promise<number> {
    const expired = await store.expiredRuns(this.r.db.kysely, now(), RECOVERED_PER_PASS);
    let recovered = 0;
    for (const run of expired) {
      if (this.r.active.has(run.id)) continue;
      const at = now();
      const error: RunError = { code: 'interrupted', message: 'the process running this run stopped before it finished' };
      // What the client was already sent survives: the streamed tokens are in the event log.
      const events = await readStoredEvents(this.r.db, run.id, 0);
      // Tokens of an answer cut and started over (answer_cut, next: retry or fallback) are not the run's output.
      let output = '';
      for (const e of events) {
        if (e.event === 'token') output += (e.data as { text: string }).text;
        const cut = e.data as { next?: string; partial?: string };
        if (e.event === 'answer_cut' && cut.next !== 'fail') output = output.slice(0, output.length - (cut.partial ?? '').length);
      }
      // What ran is kept: the calls told in the events, with the results that came back.
      const toolCalls = recoveredToolCalls(storedCalls(run.tool_calls), events, run.started_at ?? run.created_at);
      const won = await this.r.db.kysely.transaction().execute(async (trx) => {
        const r = await store.finishRun(trx, run.id, {
          status: 'failed',
          output,
          tool_calls: JSON.stringify(toolCalls),
          error: JSON.stringify(error),
          completed_at: at,
          duration_ms: run.started_at ? Date.parse(at) - Date.parse(run.started_at) : null,
          lease_owner: null,
          lease_expires_at: null,
        });
        if (!Number(r.numUpdatedRows)) return false;
        if (run.conversation_id) await conversations.releaseConversation(trx, run.conversation_id, run.id);
        // Followers of the stream learn how it ended: the closing event is written with the end, never without it.
        const seq = (events.at(-1)?.seq ?? 0) + 1;
        await store.insertEvents(trx, [{ run_id: run.id, seq, event: 'error', data: JSON.stringify(error) }]);
        return true;
      });
      if (!won) continue;
      recovered++;
      // Traced, the interruption is a span in the run's own trace (its stored context), from the process that saw it.
      const span = this.r.tracing?.startSpan('run.recover', { parent: run.traceparent, attributes: { 'agentry.run.id': run.id } });
      if (span) {
        failSpan(span, new Error(error.message), error.code);
        span.end();
      }
      this.r.observer?.recovered();
      await this.r.finished.notify({
        runId: run.id,
        tenantId: run.tenant_id,
        taskId: run.task_id,
        status: 'failed',
        ended: { output, error },
      });
      this.r.log.warn({ runId: run.id }, 'run interrupted: its process stopped renewing the lease');
    }
    return recovered;
  }
}

/** A damaged tool_calls column costs the recovered run its stored calls, not its recovery. */
function storedCalls(text: string) {
  try {
    return toolCallsColumn(text);
  } catch {
    return [];
  }
}
