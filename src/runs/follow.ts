import { NotFound } from '../errors.js';
import { type RunChannel, type RunEventListener, readStoredEvents } from './events.js';
import type { RunResources } from './resources.js';
import { isActive } from './statuses.js';
import * as store from './store.js';

/** After a run's row has ended, how long its terminal event is waited for before the stream ends anyway. */
const TERMINAL_EVENT_GRACE_MS = 2_000;

/**
 * Followers of a run's events: from memory when it runs here, otherwise replayed from the database
 * and woken by `run.events` signals while another process runs it.
 */
export class RunFollowers {
  /** Followers in this process of runs executing elsewhere, woken by `run.events` signals. */
  private readonly remote = new Map<string, Set<() => void>>();

  constructor(private readonly r: RunResources) {}

  /**
   * Follows a channel from memory; when it ends because the run awaits approval, goes on with the
   * stored events, where the run's continuation appears whichever process resumes it.
   */
  private followChannel(channel: RunChannel, f: { tenantId: string; runId: string; afterSeq: number }, listener: RunEventListener) {
    let last = f.afterSeq;
    let stopped = false;
    let stopStored: (() => void) | undefined;
    const unsubscribe = channel.follow(f.afterSeq, (e) => {
      if (e) {
        last = e.seq;
        return listener(e);
      }
      if (!channel.paused || stopped) return listener(null);
      this.follow({ ...f, afterSeq: last }, listener, false).then(
        (stop) => {
          if (stopped) stop();
          else stopStored = stop;
        },
        () => listener(null),
      );
    });
    return () => {
      stopped = true;
      unsubscribe();
      stopStored?.();
    };
  }

  /** New events of these runs were written elsewhere: their followers here read them. */
  wake(runIds: string[]) {
    for (const runId of runIds) for (const wake of this.remote.get(runId) ?? []) wake();
  }

  /**
   * Follows a run's events after `afterSeq`: from memory when it runs here, otherwise from the
   * database (polling while another process still runs it). Calls `listener(null)` at the end.
   */
  async follow(
    f: { tenantId: string; runId: string; afterSeq: number },
    listener: RunEventListener,
    fromMemory = true,
  ): Promise<() => void> {
    const { tenantId, runId } = f;
    // A run executing (or just ended) here is followed from memory, without reading its row, when its
    // channel holds every event after afterSeq (a run resumed after approval has only its later ones).
    const channel = fromMemory ? this.r.events.get(runId) : undefined;
    if (channel?.tenantId === tenantId && channel.firstSeq <= f.afterSeq + 1) return this.followChannel(channel, f, listener);
    const run = await store.findRun(this.r.db.kysely, tenantId, runId);
    if (!run) throw new NotFound('run');

    let stopped = false;
    let last = f.afterSeq;
    let endedSince = 0;
    let wake: (() => void) | null = null;
    const wakers = this.remote.get(runId) ?? new Set<() => void>();
    this.remote.set(runId, wakers);
    const onSignal = () => wake?.();
    wakers.add(onSignal);
    this.r.observer?.replayed();
    const pump = async () => {
      while (!stopped) {
        for (const e of await readStoredEvents(this.r.db, runId, last)) {
          last = e.seq;
          listener(e);
          if (e.event === 'done' || e.event === 'error') {
            listener(null);
            return;
          }
        }
        // The terminal event is written just after the run row changes; give it a moment, then stop anyway.
        const current = await store.findRunById(this.r.db.kysely, runId);
        if (!current || !isActive(current.status)) {
          endedSince ||= Date.now();
          if (Date.now() - endedSince > TERMINAL_EVENT_GRACE_MS) {
            listener(null);
            return;
          }
        }
        // Woken by a `run.events` signal; the timeout is the fallback when signals are lost.
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, endedSince ? 200 : 1000);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wake = null;
      }
    };
    const release = () => {
      wakers.delete(onSignal);
      if (!wakers.size) this.remote.delete(runId);
    };
    pump()
      .catch((err) => {
        this.r.log.error({ err, runId }, 'following run events failed');
        listener(null);
      })
      .finally(release);
    return () => {
      stopped = true;
      wake?.();
    };
  }
}
