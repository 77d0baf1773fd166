import { EventEmitter } from 'node:events';
import pg from 'pg';
import { Type } from 'typebox';
import type { ChangeFeed } from '../db/changes.js';
import { parseJson } from '../db/json-column.js';

/**
 * Signals between the processes that share one database: run cancel, inject, and "new events of run
 * X". In one process (SQLite) they stay in memory; on PostgreSQL they travel with LISTEN/NOTIFY, so any
 * number of replicas behave as one platform with no extra service. Payloads are small JSON objects
 * (NOTIFY carries at most 8000 bytes); bulk data stays in the database.
 */
export type SignalHandler = (payload: Record<string, unknown>) => void;

export interface SignalBus {
  publish(topic: string, payload: Record<string, unknown>): Promise<void>;
  subscribe(topic: string, handler: SignalHandler): () => void;
  close(): Promise<void>;
}

export class LocalSignalBus implements SignalBus {
  private readonly emitter = new EventEmitter().setMaxListeners(0);

  async publish(topic: string, payload: Record<string, unknown>) {
    // Delivered asynchronously, like NOTIFY, so publishers never run handlers inside their own stack.
    queueMicrotask(() => this.emitter.emit(topic, payload));
  }

  subscribe(topic: string, handler: SignalHandler) {
    this.emitter.on(topic, handler);
    return () => void this.emitter.off(topic, handler);
  }

  async close() {
    this.emitter.removeAllListeners();
  }
}

const CHANNEL = 'agentry_signals';
/** Table names NOTIFYed by the change triggers when a write commits (migration 0007). */
const CHANGES_CHANNEL = 'agentry_changes';
/** What `publish` sends on CHANNEL. */
const Notification = Type.Object({ topic: Type.String(), payload: Type.Record(Type.String(), Type.Unknown()) });

/**
 * LISTEN on a dedicated connection; NOTIFY through a pool. If the listening connection drops (database
 * restart), it reconnects with backoff and listeners go on; signals sent meanwhile are lost, which is
 * why every consumer also has a slower database fallback (lease checks, event polling).
 */
export class PostgresSignalBus implements SignalBus {
  private readonly local = new LocalSignalBus();
  private client: pg.Client | null = null;
  private closed = false;
  private readonly pool: pg.Pool;

  constructor(
    private readonly connectionString: string,
    private readonly onError: (err: unknown) => void,
    /** Told of other replicas' writes, and that cached reads are unsafe while not listening. */
    private readonly changes?: ChangeFeed,
  ) {
    this.pool = new pg.Pool({ connectionString, max: 2 });
    // An idle client losing its connection must not crash the process; the next NOTIFY reports it.
    this.pool.on('error', () => {});
  }

  async start(): Promise<void> {
    await this.connect();
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const client = new pg.Client({ connectionString: this.connectionString });
    client.on('notification', (msg) => {
      if (msg.channel === CHANGES_CHANNEL && msg.payload) return this.changes?.changed(msg.payload);
      if (msg.channel !== CHANNEL || !msg.payload) return;
      try {
        const { topic, payload } = parseJson(Notification, msg.payload, 'a signal notification');
        void this.local.publish(topic, payload);
      } catch (err) {
        // Malformed (not one this code sent): dropped, and told as a warning.
        this.onError(err);
      }
    });
    let dead = false;
    const lost = (err?: unknown) => {
      if (dead) return;
      dead = true;
      if (err) this.onError(err);
      if (this.client === client) this.client = null;
      // Changes committed from now until listening again would go unnoticed.
      this.changes?.setLive(false);
      // The connection is already lost (its error reported above); ending it only frees what is left.
      void client.end().catch(() => {});
      if (!this.closed) setTimeout(() => void this.connect(), 1000).unref();
    };
    client.on('error', lost);
    client.on('end', () => lost());
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANNEL}`);
      await client.query(`LISTEN ${CHANGES_CHANNEL}`);
      this.client = client;
      this.changes?.setLive(true);
    } catch (err) {
      lost(err);
    }
  }

  async publish(topic: string, payload: Record<string, unknown>) {
    await this.pool.query('SELECT pg_notify($1, $2)', [CHANNEL, JSON.stringify({ topic, payload })]);
  }

  subscribe(topic: string, handler: SignalHandler) {
    return this.local.subscribe(topic, handler);
  }

  async close() {
    this.closed = true;
    // Best effort on the way out: a connection already broken has nothing left to end.
    await this.client?.end().catch(() => {});
    await this.pool.end().catch(() => {});
    await this.local.close();
  }
}
