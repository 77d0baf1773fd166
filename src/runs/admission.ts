import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';

/** The run an admission is asked for: whose it is and the worst-case cost it reserves (runs/reservation.ts). */
interface AdmittedRun {
  tenantId: string;
  agentId: string;
  /** USD held against the tenant's and the agent's budgets while the run is active (its row's reserved_usd). */
  reservedUsd: number;
}

interface AdmissionRequest<Limits, Batch> extends AdmittedRun {
  batch: Batch;
  limits: Limits;
}

/**
 * What a run's start asks before it is written: the tenant's concurrency limit and budgets. Declared
 * here and given to the runs service (tenancy's LimitsService provides it, wired in app.ts), so the
 * runs domain imports no tenancy module and tenancy can count runs through the runs domain.
 * `Limits` and `Batch` are the provider's own; runs only hands them back.
 */
export interface Admission<Limits = unknown, Batch = unknown> {
  /** The limits a run's start is admitted under, or null when none applies (no admission at all). */
  runLimits(tenantId: string, agentId: string): Promise<Limits | null>;
  /** The admissions of one transaction, which its own queries cannot see until it commits. */
  newBatch(): Batch;
  /**
   * Admits a run inside the transaction that records its start; answers what the run records of its
   * budget, or throws the refusal (a LimitExceeded or BudgetExceeded, answered to the caller; nothing is written).
   */
  admit(trx: Kysely<Database>, request: AdmissionRequest<Limits, Batch>): Promise<unknown>;
  /** Takes back an admission whose start wrote nothing (its conversation turned out busy). */
  withdraw(batch: Batch, run: AdmittedRun): void;
}
