import { TtlCache } from '../cache.js';
import { type Clock, systemClock } from '../clock.js';
import type { Db } from '../db/database.js';
import { BudgetExceeded, LimitExceeded, NotFound } from '../errors.js';
import { recordAudit } from './audit.js';
import { settingsColumn } from './columns.js';
import type { Actor, Principal } from './permissions.js';
import * as store from './store.js';

export interface TenantLimits {
  /** Requests per minute per API key (a key's own limit wins); null: the platform default. */
  rateLimitPerMinute: number | null;
  /** Runs executing at once in the tenant; null: no limit. */
  maxConcurrentRuns: number | null;
  /** USD per calendar month (UTC) for the tenant's runs; null: no budget. */
  monthlyBudgetUsd: number | null;
}

/** What a run's admission needs besides the tenant's limits (read again from its locked row). */
export interface RunLimits {
  agentBudgetUsd: number | null;
}

/** The agents domain's budgets, as limits read and set them (agents owns the column). */
export interface AgentBudgets {
  budget(tenantId: string, agentId: string): Promise<{ monthlyBudgetUsd: number | null } | undefined>;
  /** Throws not found when the tenant has no such agent. */
  setBudget(tenantId: string, agentId: string, budget: number | null, actor: Actor): Promise<void>;
}

/**
 * What limits count of runs. The runs domain owns the table and provides this (runs/usage.ts, wired
 * in app.ts), so tenancy imports nothing of runs; the queries run in the admission's transaction.
 */
export interface RunUsage {
  /** The month's spend (ended runs' costs) and what its active runs reserve beyond their cost. */
  spendAndReservedSince(
    db: store.Executor,
    scope: { tenantId: string; since: string; agentId?: string },
  ): Promise<{ spentUsd: number; reservedUsd: number }>;
  runningRuns(db: store.Executor, scope: { tenantId: string; agentId?: string }): Promise<number>;
}

/** The admissions of one transaction: tenants already locked, runs admitted but not yet inserted. */
export interface AdmissionBatch {
  locked: Set<string>;
  /** By `tenant:<id>` and `agent:<tenant>:<id>`: runs admitted, and the USD they reserve. */
  admitted: Map<string, { runs: number; reservedUsd: number }>;
}

/** A run asking to be admitted: whose, and its worst-case cost (the runs domain estimates it). */
export interface AdmissionRun {
  tenantId: string;
  agentId: string;
  reservedUsd: number;
}

export const newAdmissionBatch = (): AdmissionBatch => ({ locked: new Set(), admitted: new Map() });

const batchKeys = (run: { tenantId: string; agentId: string }) => [`tenant:${run.tenantId}`, `agent:${run.tenantId}:${run.agentId}`];

/** Takes back an admission whose run did not start after all (its conversation was busy). */
export function withdrawAdmission(batch: AdmissionBatch, run: AdmissionRun) {
  for (const key of batchKeys(run)) {
    const admitted = batch.admitted.get(key);
    if (admitted) batch.admitted.set(key, { runs: admitted.runs - 1, reservedUsd: admitted.reservedUsd - run.reservedUsd });
  }
}

/**
 * The budgets a run started under, the month-to-date spend before it and what the runs active then
 * reserved of them (the run records it).
 */
export interface RunBudget {
  tenant?: BudgetPicture;
  agent?: BudgetPicture;
}

interface BudgetPicture {
  monthlyBudgetUsd: number;
  spentUsd: number;
  reservedUsd: number;
}

/** A monthly budget to hold a run to: the tenant's or the agent's, with what the runs admitted before it in its batch reserve. */
interface BudgetToCheck {
  whose: 'tenant' | 'agent';
  monthlyBudgetUsd: number;
  reservedInBatchUsd: number;
}

const NO_LIMITS: TenantLimits = { rateLimitPerMinute: null, maxConcurrentRuns: null, monthlyBudgetUsd: null };
const CACHE_MS = 5_000;

/** The first instant of the current UTC month, as stored timestamps are written. */
function monthStart(now = new Date()): string {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString();
}

/** What one request's limit check decided; it also feeds the RateLimit-* headers. */
/**
 * A token request's admission: its decision (RateLimit-* headers); when refused, `why` (too many
 * tokens for the client, or failures); `settle` says how it ended: issued, failed (the client or its
 * credentials refused, a malformed request), or not the caller's doing (a server error).
 */
export interface TokenAdmission {
  decision: RateDecision;
  why?: 'issued' | 'failures';
  settle(outcome: 'issued' | 'failed' | 'error'): void;
}

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  resetSeconds: number;
  retryAfter: number;
}

/**
 * Per-process request limiter: a sliding window of one minute approximated with two fixed windows
 * (the previous window's count weighted by how much of it still overlaps). Each replica counts its
 * own requests, so N replicas admit up to N times the limit; see docs/operations.md.
 */
export class RateLimiter {
  private readonly windows = new Map<string, { start: number; count: number; previous: number }>();

  take(id: string, limit: number, now = Date.now()): RateDecision {
    return this.decide(id, limit, now, true);
  }

  /** What `take` would answer, counting nothing. */
  peek(id: string, limit: number, now = Date.now()): RateDecision {
    return this.decide(id, limit, now, false);
  }

  /** Gives back one request `take` counted (one that turned out not to count, e.g. a failed authentication). */
  giveBack(id: string) {
    const w = this.windows.get(id);
    if (w && w.count > 0) w.count--;
    else if (w && w.previous > 0) w.previous--;
  }

  private decide(id: string, limit: number, now: number, count: boolean): RateDecision {
    const minute = 60_000;
    const start = now - (now % minute);
    let w = this.windows.get(id);
    if (!w || w.start !== start) {
      const previous = w && w.start === start - minute ? w.count : 0;
      w = { start, count: 0, previous };
      // A look (peek) keeps nothing: only counted requests hold memory.
      if (count) {
        this.windows.set(id, w);
        if (this.windows.size > 100_000) this.prune(start);
      }
    }
    const weight = 1 - (now - start) / minute;
    const used = w.previous * weight + w.count;
    const resetSeconds = Math.ceil((start + minute - now) / 1000);
    if (used + 1 > limit) {
      // Time until enough of the previous window slides out to admit one more request.
      const retryAfter = w.previous > 0 && w.count < limit ? Math.max(1, Math.ceil(((used + 1 - limit) / w.previous) * 60)) : resetSeconds;
      return { allowed: false, limit, remaining: 0, resetSeconds, retryAfter: Math.min(retryAfter, 60) };
    }
    if (count) w.count++;
    return { allowed: true, limit, remaining: Math.max(0, Math.floor(limit - used - 1)), resetSeconds, retryAfter: 0 };
  }

  private prune(current: number) {
    for (const [id, w] of this.windows) if (w.start < current - 60_000) this.windows.delete(id);
  }
}

export interface LimitsOptions {
  db: Db;
  /** Agents' budgets (the agents service), read at every run's start: from memory until the agents table changes. */
  agentBudgets: AgentBudgets;
  /** What runs count of running runs and spend (the runs domain's runs/usage.ts). */
  runUsage: RunUsage;
  /** Requests per minute per API key when neither the key nor its tenant sets one (0: no limit). */
  defaultRateLimit: number;
  /** Token endpoint requests per minute per client; 0 or absent: none. */
  tokenRateLimit?: number;
  /** Cached tenant limits expire on it (default: real time). */
  clock?: Clock;
}

/** Tenant limits and budgets: settings, request limits, concurrency and month-to-date spend. */
export class LimitsService {
  readonly limiter = new RateLimiter();
  private readonly cache: TtlCache<TenantLimits>;
  private readonly db: Db;
  private readonly agentBudgets: AgentBudgets;
  private readonly runUsage: RunUsage;
  private readonly defaultRateLimit: number;
  private readonly tokenRateLimit: number;

  constructor({ db, agentBudgets, runUsage, defaultRateLimit, tokenRateLimit = 0, clock = systemClock }: LimitsOptions) {
    this.db = db;
    this.agentBudgets = agentBudgets;
    this.runUsage = runUsage;
    this.defaultRateLimit = defaultRateLimit;
    this.tokenRateLimit = tokenRateLimit;
    this.cache = new TtlCache({ ttlMs: CACHE_MS, clock });
  }

  async tenantLimits(tenantId: string): Promise<TenantLimits> {
    const cached = this.cache.get(tenantId);
    if (cached) return cached;
    const tenant = await store.findTenant(this.db.kysely, tenantId);
    const settings = tenant ? settingsColumn(tenant.settings) : {};
    const limits = { ...NO_LIMITS, ...(settings.limits ?? {}) };
    this.cache.set(tenantId, limits);
    return limits;
  }

  async setTenantLimits(tenantId: string, patch: Partial<TenantLimits>, actor: Actor): Promise<TenantLimits> {
    const limits = await this.db.kysely.transaction().execute(async (trx) => {
      const tenant = await store.findTenant(trx, tenantId);
      if (!tenant) throw new NotFound('tenant');
      const settings = settingsColumn(tenant.settings);
      const next = { ...NO_LIMITS, ...(settings.limits ?? {}), ...patch };
      await store.updateTenantSettings(trx, tenantId, JSON.stringify({ ...settings, limits: next }));
      await recordAudit(trx, {
        tenantId,
        actor,
        action: 'tenant.limits_updated',
        resourceType: 'tenant',
        resourceId: tenantId,
        detail: patch,
      });
      return next;
    });
    this.cache.delete(tenantId);
    return limits;
  }

  /** Applies the caller's request limit; the answer also feeds the RateLimit-* headers. */
  async checkRate(principal: Principal): Promise<RateDecision | null> {
    // The key's own limit wins; then the tenant's, then the platform default. 0 or null: none.
    if (principal.rateLimitPerMinute != null) return this.take(principal, principal.rateLimitPerMinute);
    const limits = await this.tenantLimits(principal.tenantId);
    return this.take(principal, limits.rateLimitPerMinute ?? this.defaultRateLimit);
  }

  /**
   * The token endpoint's limits (docs/operations.md, "Limits and budgets"), for a request naming
   * `client` (client_id, the Basic user, the assertion's issuer, the exchanged token's subject: claimed,
   * not yet proven) from `source` (the peer's address). Tokens issued count per client; failed requests
   * count apart, per client and per (client, source), so forged requests never use up the real holder's
   * count. A source that keeps failing for a client is refused (brute force), and so, while a client's
   * failures are over the limit (many sources), is any source that failed for it; a source that has not
   * failed goes on. The request's slot is taken at once (a burst cannot overshoot) and given back if it
   * fails. Null when there is no limit.
   */
  admitTokenRequest(client: string, source: string): TokenAdmission | null {
    const limit = this.tokenRateLimit;
    if (!limit) return null;
    const l = this.limiter;
    const ids = { issued: `token:${client}`, failed: `token-failed:${client}`, pair: `token-failed:${client}|${source}` };
    const pair = l.peek(ids.pair, limit);
    const failing = l.peek(ids.pair, 1);
    const refusedForFailures = !pair.allowed ? pair : !l.peek(ids.failed, limit).allowed && !failing.allowed ? failing : null;
    if (refusedForFailures) return { decision: refusedForFailures, why: 'failures', settle: () => {} };
    const decision = l.take(ids.issued, limit);
    if (!decision.allowed) return { decision, why: 'issued', settle: () => {} };
    return {
      decision,
      settle: (outcome) => {
        if (outcome === 'issued') return;
        l.giveBack(ids.issued);
        if (outcome === 'failed') {
          l.take(ids.failed, Number.POSITIVE_INFINITY);
          l.take(ids.pair, Number.POSITIVE_INFINITY);
        }
      },
    };
  }

  private take(principal: Principal, limit: number): RateDecision | null {
    if (!limit) return null;
    // A key and the access tokens minted from it share one count.
    const counted = principal.apiKeyId
      ? `api_key:${principal.apiKeyId}`
      : `${principal.actor.type}:${principal.actor.id ?? principal.tenantId}`;
    return this.limiter.take(counted, limit);
  }

  async usage(tenantId: string) {
    const since = monthStart();
    const [{ spentUsd, reservedUsd }, runningRuns] = await Promise.all([
      this.runUsage.spendAndReservedSince(this.db.kysely, { tenantId, since }),
      this.runUsage.runningRuns(this.db.kysely, { tenantId }),
    ]);
    return { month: since.slice(0, 7), spentUsd, reservedUsd, runningRuns };
  }

  async agentBudget(tenantId: string, agentId: string) {
    const budget = await this.agentBudgets.budget(tenantId, agentId);
    if (!budget) throw new NotFound('agent');
    const since = monthStart();
    return {
      agentId,
      month: since.slice(0, 7),
      monthlyBudgetUsd: budget.monthlyBudgetUsd,
      ...(await this.runUsage.spendAndReservedSince(this.db.kysely, { tenantId, since, agentId })),
    };
  }

  async setAgentBudget(tenantId: string, agentId: string, budget: number | null, actor: Actor) {
    await this.agentBudgets.setBudget(tenantId, agentId, budget, actor);
    return this.agentBudget(tenantId, agentId);
  }

  /**
   * The limits a run's start must be admitted under, or null when neither the tenant nor the agent
   * has any: such a run's start needs no admission, no transaction of its own and no lock. Read from
   * memory (tenant limits for CACHE_MS, agents' budgets until the agents table changes).
   */
  async runLimits(tenantId: string, agentId: string): Promise<RunLimits | null> {
    const limits = await this.tenantLimits(tenantId);
    const agent = await this.agentBudgets.budget(tenantId, agentId);
    const agentBudgetUsd = agent?.monthlyBudgetUsd ?? null;
    if (limits.maxConcurrentRuns === null && limits.monthlyBudgetUsd === null && agentBudgetUsd === null) return null;
    return { agentBudgetUsd };
  }

  /**
   * Admits a run inside the transaction that records its start, so counting and claiming are one
   * step. The transaction first takes the lock admissions share: on PostgreSQL the tenant's row
   * (`FOR UPDATE`: admissions of one tenant take turns on every replica, each counting the runs the
   * ones before it committed); on SQLite the write lock, taken before anything is read (the single
   * writer; reading first could meet a checkpoint's lock without waiting). The tenant's limits are
   * read from its row. Refuses with 429 when the tenant already runs `maxConcurrentRuns`, and with 402
   * when a budget's month-to-date spend plus what its active runs reserve (each its worst-case cost
   * until it ends) has reached the budget: a burst is admitted only as far as its runs' worst cases
   * fit, so it overshoots by at most the last run's. `batch` holds the runs admitted earlier in the
   * same transaction, which its queries cannot see yet (their rows are inserted at its end). Answers
   * the budget picture the run records.
   */
  async admitInTransaction(trx: store.Executor, batch: AdmissionBatch, run: AdmissionRun, runLimits: RunLimits): Promise<RunBudget> {
    const { tenantId, agentId } = run;
    if (!batch.locked.has(tenantId)) {
      await store.lockForAdmission(trx, tenantId, this.db.dialect);
      batch.locked.add(tenantId);
    }
    const tenant = await store.findTenant(trx, tenantId);
    const settings = tenant ? settingsColumn(tenant.settings) : {};
    const limits = { ...NO_LIMITS, ...(settings.limits ?? {}) };
    const [tenantKey, agentKey] = batchKeys(run);
    const inBatch = (key: string) => batch.admitted.get(key) ?? { runs: 0, reservedUsd: 0 };
    if (limits.maxConcurrentRuns !== null) {
      const now = (await this.runUsage.runningRuns(trx, { tenantId })) + inBatch(tenantKey).runs;
      if (now >= limits.maxConcurrentRuns) {
        throw new LimitExceeded(
          'concurrency_limit',
          `the tenant already runs ${now} of at most ${limits.maxConcurrentRuns} runs at once`,
          1,
        );
      }
    }
    const budget: RunBudget = {};
    if (limits.monthlyBudgetUsd !== null || runLimits.agentBudgetUsd !== null) {
      const since = monthStart();
      if (limits.monthlyBudgetUsd !== null) {
        const reservedInBatchUsd = inBatch(tenantKey).reservedUsd;
        budget.tenant = await this.underBudget(
          trx,
          { whose: 'tenant', monthlyBudgetUsd: limits.monthlyBudgetUsd, reservedInBatchUsd },
          { tenantId, since },
        );
      }
      if (runLimits.agentBudgetUsd !== null) {
        const reservedInBatchUsd = inBatch(agentKey).reservedUsd;
        budget.agent = await this.underBudget(
          trx,
          { whose: 'agent', monthlyBudgetUsd: runLimits.agentBudgetUsd, reservedInBatchUsd },
          { tenantId, since, agentId },
        );
      }
    }
    for (const key of [tenantKey, agentKey]) {
      const admitted = inBatch(key);
      batch.admitted.set(key, { runs: admitted.runs + 1, reservedUsd: admitted.reservedUsd + run.reservedUsd });
    }
    return budget;
  }

  /**
   * The budget picture, or 402 when the spend and what the active runs reserve (those of this batch,
   * not yet inserted, included) have reached it.
   */
  private async underBudget(
    trx: store.Executor,
    { whose, monthlyBudgetUsd, reservedInBatchUsd }: BudgetToCheck,
    scope: { tenantId: string; since: string; agentId?: string },
  ): Promise<BudgetPicture> {
    const usage = await this.runUsage.spendAndReservedSince(trx, scope);
    const spentUsd = usage.spentUsd;
    const reservedUsd = Math.round((usage.reservedUsd + reservedInBatchUsd) * 1e9) / 1e9;
    if (spentUsd + reservedUsd >= monthlyBudgetUsd) {
      const reserved = reservedUsd > 0 ? `, and its runs still running reserve $${reservedUsd} of it (their worst-case cost)` : '';
      throw new BudgetExceeded(`the ${whose} has spent $${spentUsd} of its $${monthlyBudgetUsd} monthly budget${reserved}`);
    }
    return { monthlyBudgetUsd, spentUsd, reservedUsd };
  }
}
