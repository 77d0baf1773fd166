import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Clock, systemClock } from '../clock.js';
import type { Db } from '../db/database.js';
import { Conflict, Unprocessable } from '../errors.js';
import { now } from '../ids.js';
import * as store from './store.js';

/** How long a key answers retries (and is kept). */
const IDEMPOTENCY_KEY_TTL_MS = 24 * 60 * 60 * 1000;
/**
 * A claim that recorded nothing for this long belongs to a request that died: the next retry takes it
 * over. The default; the app passes one longer than the longest wait of a run's start (app.ts).
 */
const ABANDONED_CLAIM_MS = 60_000;
/** How long a retry waits for a concurrent first request to record what it started. */
const WAIT_FOR_FIRST_MS = 30_000;
const POLL_MS = 25;

/** What the first request with a key started, answered again to its retries. */
export interface IdempotentOutcome {
  status: number;
  runId?: string;
  taskId?: string;
  messageId?: string;
}

/** A key as one request holds it: `replay` set when an earlier request with it already started something. */
export interface IdempotencyClaim {
  key: string;
  /** When this request claimed the key: its record and release touch this claim only, not one that took it over. */
  createdAt?: string;
  replay?: IdempotentOutcome;
}

export interface IdempotencyOptions {
  db: Db;
  /** How long a claim with no outcome is waited for before a retry takes it over (default 60 s). */
  abandonedAfterMs?: number;
  /** Claims are stamped, abandoned and expired on it (default: real time); a retry's wait for the first request is real time. */
  clock?: Clock;
}

/**
 * Idempotency keys (`Idempotency-Key` on execute, chat, stream, chat completions, conversation messages and task
 * creation): the first request with a key claims it (an INSERT that only one replica wins) and records
 * the run or task it started; a retry with the same key and the same request gets that outcome, a
 * retry with another request is refused. Keys are per tenant and expire after 24 hours.
 */
export class IdempotencyService {
  readonly abandonedAfterMs: number;
  private readonly db: Db;
  private readonly clock: Clock;

  constructor({ db, abandonedAfterMs = ABANDONED_CLAIM_MS, clock = systemClock }: IdempotencyOptions) {
    this.db = db;
    this.abandonedAfterMs = abandonedAfterMs;
    this.clock = clock;
  }

  /**
   * Claims `key` for a request whose identity is `request` (method, route, ids, body), or answers the
   * outcome an earlier request with the same key recorded, waiting while that request is still starting.
   */
  async claim(tenantId: string, key: string, request: unknown): Promise<IdempotencyClaim> {
    const fingerprint = fingerprintOf(request);
    // Real time: a wait, which a stopped clock would make endless.
    const deadline = Date.now() + WAIT_FOR_FIRST_MS;
    for (;;) {
      const at = now(this.clock);
      const expiresAt = new Date(Date.parse(at) + IDEMPOTENCY_KEY_TTL_MS).toISOString();
      const row = { tenant_id: tenantId, key, fingerprint, created_at: at, expires_at: expiresAt };
      if (await store.claimKey(this.db.kysely, row)) return { key, createdAt: at };
      const held = await store.findKey(this.db.kysely, tenantId, key);
      if (!held) continue; // released or swept meanwhile: claim it again
      const current = now(this.clock);
      if (
        held.expires_at <= current ||
        (held.response_status === null && Date.parse(current) - Date.parse(held.created_at) > this.abandonedAfterMs)
      ) {
        await store.deleteKey(this.db.kysely, tenantId, key, held.created_at);
        continue;
      }
      if (held.fingerprint !== fingerprint) {
        throw new Unprocessable(
          'idempotency_key_reused',
          'the Idempotency-Key header was already used with a different request (method, path or body); use a new key for a new request',
        );
      }
      if (held.response_status !== null) {
        return {
          key,
          replay: {
            status: held.response_status,
            runId: held.run_id ?? undefined,
            taskId: held.task_id ?? undefined,
            messageId: held.message_id ?? undefined,
          },
        };
      }
      if (Date.now() > deadline) {
        throw new Conflict('idempotency_key_in_use', 'a request with this Idempotency-Key is still starting; retry in a moment');
      }
      await sleep(POLL_MS);
    }
  }

  /** Records what the claiming request started; its retries answer it from now on. */
  async record(tenantId: string, claim: IdempotencyClaim, outcome: IdempotentOutcome) {
    if (claim.createdAt === undefined) return; // a replay holds no claim
    await store.recordOutcome(
      this.db.kysely,
      { tenantId, key: claim.key, createdAt: claim.createdAt },
      {
        response_status: outcome.status,
        run_id: outcome.runId ?? null,
        task_id: outcome.taskId ?? null,
        message_id: outcome.messageId ?? null,
      },
    );
  }

  /** The claiming request failed before starting anything: a retry with the key may try again. */
  async release(tenantId: string, claim: IdempotencyClaim) {
    if (claim.createdAt === undefined) return;
    await store.deleteKey(this.db.kysely, tenantId, claim.key, claim.createdAt);
  }

  /** Deletes expired keys (run by the tasks sweep). */
  sweep(): Promise<number> {
    return store.deleteExpired(this.db.kysely, now(this.clock));
  }
}

/** sha256 of the request's canonical JSON (object keys sorted), so key order in a body does not matter. */
function fingerprintOf(request: unknown): string {
  return createHash('sha256')
    .update(JSON.stringify(canonical(request)))
    .digest('hex');
}

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
        .map((k) => [k, canonical((value as Record<string, unknown>)[k])]),
    );
  }
  return value;
}
