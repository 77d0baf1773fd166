import type { Db } from '../db/database.js';
import { isDatabaseUnavailable } from '../errors.js';
import { eventDataColumn, tokenTextsColumn } from './columns.js';
import * as store from './store.js';

export interface RunEvent {
  seq: number;
  event: string;
  data: Record<string, unknown>;
}

/** `null` tells a listener that the run's stream has ended. */
export type RunEventListener = (event: RunEvent | null) => void;

/**
 * How long a finished run's events stay in memory for a client reconnecting right after the end; later
 * ones replay from the database (the same events). Memory held is throughput times this: at 3,000
 * runs a second, 60 s kept 180,000 runs' events (sse-stream peak RSS 360 MB against 302 with 5 s).
 * Only runs someone followed live are kept: nobody else can be reconnecting.
 */
export const RETAIN_AFTER_END_MS = 5_000;

/**
 * The event stream of one run executing in this process. Events are written to the database
 * before listeners see them (persist, then publish); the hub writes them, with every other run's,
 * once per turn of the event loop. So an event a client has received is always in the database, and
 * a reconnect with Last-Event-ID loses and duplicates nothing.
 */
export class RunChannel {
  readonly events: RunEvent[] = [];
  private pending: RunEvent[] = [];
  private readonly listeners = new Set<RunEventListener>();
  private nextSeq: number;
  /** The seq of the channel's first event: above 1 for a run resumed after approval (earlier events are stored). */
  readonly firstSeq: number;
  ended = false;
  /** Ended because the run awaits approval, not because it ended: followers go on from the stored events (follow.ts). */
  paused = false;
  /** Someone followed the run live (a stream): kept a while after the end for reconnects. */
  followed = false;
  constructor(
    readonly runId: string,
    /** The run's tenant: followers from other tenants are not given the channel. */
    readonly tenantId: string,
    private readonly hub: RunEventHub,
    options: { firstSeq?: number } = {},
  ) {
    this.firstSeq = options.firstSeq ?? 1;
    this.nextSeq = this.firstSeq;
  }

  emit(event: string, data: Record<string, unknown>): void {
    if (this.ended) return;
    this.pending.push(this.next(event, data));
    this.hub.schedule(this);
  }

  /** A numbered event that is not queued: for `takePending` callers that write it themselves. */
  next(event: string, data: Record<string, unknown>): RunEvent {
    return { seq: this.nextSeq++, event, data };
  }

  /**
   * Takes the events not yet being written, for the caller to write (the hub, or a run's end, which
   * writes its last events with its result). The caller then publishes them with `written`, or hands
   * them back with `requeue` if its transaction failed.
   */
  takePending(): RunEvent[] {
    const taken = this.pending;
    this.pending = [];
    return taken;
  }

  /**
   * Publishes events the caller has written, after any earlier ones still being written. `announce`
   * false: other replicas need not be told (nobody there can be following the run yet).
   */
  async written(events: RunEvent[], announce = true): Promise<void> {
    await this.flushed();
    this.publish(events, announce);
  }

  /** Queues events taken with `takePending` again (their seq numbers stay as they were). */
  requeue(events: RunEvent[]): void {
    if (!events.length) return;
    this.pending = [...events, ...this.pending].sort((a, b) => a.seq - b.seq);
    this.hub.schedule(this);
  }

  /** Hands written events to the listeners, in order (the hub calls this after writing them). */
  publish(batch: RunEvent[], announce = true) {
    if (!batch.length) return;
    for (const e of batch) {
      this.events.push(e);
      for (const l of this.listeners) l(e);
    }
    if (announce) this.hub.published(this.runId, batch[batch.length - 1].seq);
  }

  /** Waits until every event emitted so far is written and published. */
  async flushed(): Promise<void> {
    // A write under way may hold this channel's earlier events even when none are pending.
    while (this.pending.length || this.hub.writing) await this.hub.flush();
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
    this.followed = true;
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

/** A row of the run_events table. */
export interface EventRow {
  run_id: string;
  seq: number;
  event: string;
  data: string;
}

/** The stored form of consecutive `token` events: data is their texts in order, seq the last one's. */
const TOKENS_ROW = 'tokens';

/**
 * Events as the run_events table stores them: one row per event, except that consecutive `token`
 * events written together are one row (`tokens`, their texts as a JSON array, under the last one's
 * seq, so `seq > n` still finds every row holding an event after n). Replays give the same events,
 * ids included (`storedEvents`).
 */
export function eventRows(runId: string, events: RunEvent[]): EventRow[] {
  const rows: EventRow[] = [];
  let texts: string[] = [];
  let lastSeq = 0;
  const endTokens = () => {
    if (texts.length === 1) rows.push({ run_id: runId, seq: lastSeq, event: 'token', data: JSON.stringify({ text: texts[0] }) });
    else if (texts.length) rows.push({ run_id: runId, seq: lastSeq, event: TOKENS_ROW, data: JSON.stringify(texts) });
    texts = [];
  };
  for (const e of events) {
    const text = e.event === 'token' ? e.data.text : undefined;
    // Anything but the next token ends the tokens gathered so far.
    if (typeof text !== 'string' || e.seq !== lastSeq + 1) endTokens();
    if (typeof text === 'string') {
      texts.push(text);
      lastSeq = e.seq;
    } else {
      rows.push({ run_id: runId, seq: e.seq, event: e.event, data: JSON.stringify(e.data) });
    }
  }
  endTokens();
  return rows;
}

/** A run's stored events after `afterSeq`, in order: read, and expanded from their rows (`storedEvents`). */
export async function readStoredEvents(db: Db, runId: string, afterSeq: number): Promise<RunEvent[]> {
  return storedEvents(await store.eventsAfter(db.kysely, runId, afterSeq), afterSeq);
}

/** The events stored rows hold (`eventRows`), those after `afterSeq`, in order. */
export function storedEvents(rows: Omit<EventRow, 'run_id'>[], afterSeq = 0): RunEvent[] {
  const events: RunEvent[] = [];
  for (const row of rows) {
    if (row.event !== TOKENS_ROW) {
      if (row.seq > afterSeq) events.push({ seq: row.seq, event: row.event, data: eventDataColumn(row.data) });
      continue;
    }
    const texts = tokenTextsColumn(row.data);
    const first = row.seq - texts.length + 1;
    texts.forEach((text, i) => {
      if (first + i > afterSeq) events.push({ seq: first + i, event: 'token', data: { text } });
    });
  }
  return events;
}

/**
 * The channels of the runs executing in this process, and the writer of their events: what all runs
 * emit during one turn of the event loop is written in one statement (one commit for every stream,
 * not one per stream), after that turn's I/O, then published. One write at a time, so each run's
 * events reach its listeners in order.
 */
export class RunEventHub {
  private readonly channels = new Map<string, RunChannel>();
  /** Channels with events waiting to be written. */
  private readonly dirty = new Set<RunChannel>();
  private scheduled = false;
  /** The write under way, if any. */
  writing: Promise<void> | null = null;

  constructor(
    private readonly db: Db,
    private readonly onWriteError: (err: unknown) => void,
    private readonly onWritten: (runId: string, seq: number) => void = () => {},
    /**
     * Told of a run whose events could not be recorded: not serialisable, or refused by the database
     * for another reason than an outage. The run fails (runs/service.ts); the process never does.
     */
    private readonly onUnrecorded: (runId: string, err: unknown) => void = () => {},
  ) {}

  /** `firstSeq`: a resumed run's next seq. */
  open(runId: string, tenantId: string, options: { firstSeq?: number } = {}): RunChannel {
    const channel = new RunChannel(runId, tenantId, this, options);
    this.channels.set(runId, channel);
    return channel;
  }

  get(runId: string): RunChannel | undefined {
    return this.channels.get(runId);
  }

  async close(channel: RunChannel): Promise<void> {
    await channel.end();
    // A run nobody followed (an execute answered as JSON) is dropped at once; a later reader replays it
    // from the database. Kept, it survived young-generation collections only to be thrown away.
    if (!channel.followed) {
      if (this.channels.get(channel.runId) === channel) this.channels.delete(channel.runId);
    }
    // A run resumed here meanwhile has a channel of its own under the same id: that one stays.
    else
      setTimeout(() => {
        if (this.channels.get(channel.runId) === channel) this.channels.delete(channel.runId);
      }, RETAIN_AFTER_END_MS).unref();
  }

  /** The channel has events to write: they go with the next write (after this turn's I/O). */
  schedule(channel: RunChannel): void {
    this.dirty.add(channel);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      // A background write has nobody to hand its error to: it is reported here, never left unhandled.
      this.flush().catch((err: unknown) => this.onWriteError(err));
    });
  }

  /** Told by a channel that it published up to `seq`. */
  published(runId: string, seq: number): void {
    this.onWritten(runId, seq);
  }

  /** Writes every channel's waiting events now and publishes them; true when there were any. */
  async flush(): Promise<boolean> {
    while (this.writing) await this.writing;
    if (!this.dirty.size) return false;
    const batch: [RunChannel, RunEvent[]][] = [];
    for (const channel of this.dirty) {
      const events = channel.takePending();
      if (events.length) batch.push([channel, events]);
    }
    this.dirty.clear();
    if (!batch.length) return false;
    this.writing = this.write(batch);
    try {
      await this.writing;
    } finally {
      this.writing = null;
    }
    return true;
  }

  private async write(batch: [RunChannel, RunEvent[]][]): Promise<void> {
    const rows: EventRow[] = [];
    const serialised: [RunChannel, RunEvent[]][] = [];
    for (const [channel, events] of batch) {
      try {
        for (const row of eventRows(channel.runId, events)) rows.push(row);
        serialised.push([channel, events]);
      } catch (err) {
        // A value no bound stopped (src/json-bounds.ts): these events are neither stored nor sent, and
        // their run fails; the other runs' events go on.
        this.onUnrecorded(channel.runId, err);
      }
    }
    try {
      await store.insertEvents(this.db.kysely, rows);
    } catch (err) {
      this.onWriteError(err);
      // During an outage the runs go on (their ends wait for the database, finish.ts); any other
      // refusal fails them. Live listeners get the events either way; only a later replay misses them.
      if (!isDatabaseUnavailable(err)) for (const [channel] of serialised) this.onUnrecorded(channel.runId, err);
    }
    for (const [channel, events] of serialised) channel.publish(events);
  }
}

/** Runs named in one `run.events` signal at most: NOTIFY carries 8000 bytes, an entry about 50. */
const RUNS_PER_NOTICE = 100;

/**
 * Tells the other replicas which runs have new events written (their followers of runs executing
 * here read them from the database): once per turn of the event loop, one signal naming every run
 * written during it, instead of one per run and write; on PostgreSQL each signal is a NOTIFY, a round
 * trip. Payload: `{ runs: [[runId, seq], ...] }`.
 */
export class NewEventNotices {
  private readonly pending = new Map<string, number>();
  private scheduled = false;

  constructor(private readonly send: (runs: [string, number][]) => Promise<void>) {}

  add(runId: string, seq: number): void {
    this.pending.set(runId, seq);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      const runs = [...this.pending];
      this.pending.clear();
      // A lost signal only delays: followers also poll.
      for (let i = 0; i < runs.length; i += RUNS_PER_NOTICE) this.send(runs.slice(i, i + RUNS_PER_NOTICE)).catch(() => {});
    });
  }
}

/** The runs a `run.events` signal names (`{ runId }` is the form of one run, as older replicas send it). */
export function runsNoticed(payload: Record<string, unknown>): string[] {
  if (Array.isArray(payload.runs)) return payload.runs.map((entry) => String((entry as unknown[])[0]));
  return payload.runId === undefined ? [] : [String(payload.runId)];
}
