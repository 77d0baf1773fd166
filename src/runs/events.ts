import type { Db } from '../db/database.js';
import * as store from './store.js';

export interface RunEvent {
  seq: number;
  event: string;
  data: Record<string, unknown>;
}

/** `null` tells a listener that the run's stream has ended. */
export type RunEventListener = (event: RunEvent | null) => void;

/** How long a finished run's events stay in memory for reconnecting clients before only the DB has them. */
const RETAIN_AFTER_END_MS = 60_000;

/**
 * The event stream of one run executing in this process. Events are written to the database
 * before listeners see them (persist, then publish), in batches: everything emitted while a write
 * is under way goes out in the next single INSERT. So an event a client has received is always in
 * the database, and a reconnect with Last-Event-ID loses and duplicates nothing.
 */
export class RunChannel {
  readonly events: RunEvent[] = [];
  private pending: RunEvent[] = [];
  private readonly listeners = new Set<RunEventListener>();
  private nextSeq = 1;
  private writing: Promise<void> | null = null;
  ended = false;

  constructor(
    readonly runId: string,
    /** The run's tenant: followers from other tenants are not given the channel. */
    readonly tenantId: string,
    private readonly db: Db,
    private readonly onWriteError: (err: unknown) => void,
    private readonly onWritten: (runId: string, seq: number) => void,
  ) {}

  emit(event: string, data: Record<string, unknown>): void {
    if (this.ended) return;
    this.pending.push(this.next(event, data));
    this.writing ??= this.drain();
  }

  /** A numbered event that is not queued: for `takePending` callers that write it themselves. */
  next(event: string, data: Record<string, unknown>): RunEvent {
    return { seq: this.nextSeq++, event, data };
  }

  /**
   * Takes the events not yet being written, for the caller to write in its own transaction (a run's
   * end writes its last events with its result: one statement and one commit fewer). The caller then
   * publishes them with `written`, or hands them back with `requeue` if its transaction failed.
   */
  takePending(): RunEvent[] {
    const taken = this.pending;
    this.pending = [];
    return taken;
  }

  /** Publishes events the caller has written, after any batch still being written here. */
  async written(events: RunEvent[]): Promise<void> {
    await this.flushed();
    this.publish(events);
  }

  /** Queues events taken with `takePending` again (their seq numbers stay as they were). */
  requeue(events: RunEvent[]): void {
    if (!events.length) return;
    this.pending = [...events, ...this.pending].sort((a, b) => a.seq - b.seq);
    this.writing ??= this.drain();
  }

  private async drain(): Promise<void> {
    // Let the current tick's events gather into one batch.
    await new Promise<void>((r) => setImmediate(r));
    while (this.pending.length) {
      const batch = this.pending;
      this.pending = [];
      try {
        await store.insertEvents(this.db.kysely, batch.map((e) => eventRow(this.runId, e)));
      } catch (err) {
        // Live listeners still get the events; only a later replay could miss them.
        this.onWriteError(err);
      }
      this.publish(batch);
    }
    this.writing = null;
  }

  private publish(batch: RunEvent[]) {
    if (!batch.length) return;
    for (const e of batch) {
      this.events.push(e);
      for (const l of this.listeners) l(e);
    }
    this.onWritten(this.runId, batch[batch.length - 1].seq);
  }

  /** Waits until every emitted event is written and published. */
  async flushed(): Promise<void> {
    while (this.writing) await this.writing;
  }

  /** Ends the stream after the last event is out. */
  async end(): Promise<void> {
    await this.flushed();
    this.ended = true;
    for (const l of this.listeners) l(null);
    this.listeners.clear();
  }

  /** Replays events after `afterSeq`, then follows live; returns the unsubscribe function. */
  follow(afterSeq: number, listener: RunEventListener): () => void {
    for (const e of this.events) if (e.seq > afterSeq) listener(e);
    if (this.ended) {
      listener(null);
      return () => {};
    }
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

/** An event as the run_events table stores it. */
export function eventRow(runId: string, e: RunEvent) {
  return { run_id: runId, seq: e.seq, event: e.event, data: JSON.stringify(e.data) };
}

/** The channels of the runs executing in this process. */
export class RunEventHub {
  private readonly channels = new Map<string, RunChannel>();

  constructor(
    private readonly db: Db,
    private readonly onWriteError: (err: unknown) => void,
    private readonly onWritten: (runId: string, seq: number) => void = () => {},
  ) {}

  open(runId: string, tenantId: string): RunChannel {
    const channel = new RunChannel(runId, tenantId, this.db, this.onWriteError, this.onWritten);
    this.channels.set(runId, channel);
    return channel;
  }

  get(runId: string): RunChannel | undefined {
    return this.channels.get(runId);
  }

  async close(channel: RunChannel): Promise<void> {
    await channel.end();
    setTimeout(() => this.channels.delete(channel.runId), RETAIN_AFTER_END_MS).unref();
  }
}
