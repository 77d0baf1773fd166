import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../clock.js';
import type { AgentsService } from '../agents/service.js';
import type { Db } from '../db/database.js';
import type { RunsService } from '../runs/service.js';
import type { RunError } from '../runs/views.js';
import type { Actor } from '../tenancy/permissions.js';
import type { Tracing } from '../tracing/tracing.js';
import type { ApprovalAction } from './approvals.js';

/**
 * What every part of the task work (jobs, fires, worker, settling) shares, built once by
 * TaskExecutor: one object instead of the same six parameters in every constructor.
 */
export interface TaskResources {
  db: Db;
  agents: AgentsService;
  runs: RunsService;
  /** The app's clock (clock.ts): availability, back-off, fire decisions. */
  clock: Clock;
  /** How long a claimed job's lease lasts without renewal. */
  leaseMs: number;
  log: FastifyBaseLogger;
  /** The approval actions by name: what approving, and rejecting, a task with that action does. */
  actions: ReadonlyMap<string, ApprovalAction>;
  /** Tells the dispatcher that work was queued here, so it wakes at once. */
  enqueued: () => void;
  /** Spans of fires and jobs (src/tracing/); absent, nothing is traced. */
  tracing?: Tracing;
}

/** The actor of work the platform starts on its own (dispatch, cron, triggers). */
export const SCHEDULER_ACTOR: Actor = { type: 'system', id: 'scheduler' };

/** Lease owner of task jobs: the same id as this process's run leases. */
export const leaseOwner = (r: Pick<TaskResources, 'runs'>) => r.runs.instanceId;

/** Leases measure whether a process is alive: real time, never the app's clock. */
export const leaseUntil = (r: Pick<TaskResources, 'leaseMs'>) => new Date(Date.now() + r.leaseMs).toISOString();

/** A job's `error` column: the run error as JSON. */
export const errorText = (e: RunError) => JSON.stringify(e);
