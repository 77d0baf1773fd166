import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../clock.js';
import type { Updateable } from 'kysely';
import type { Agent } from '../agents/schemas.js';
import type { AgentsService } from '../agents/service.js';
import type { FilesService } from '../conversations/files.js';
import type { MessageRow, RecentMessages } from '../conversations/turns.js';
import type { Db } from '../db/database.js';
import type { IdempotencyService } from '../idempotency/service.js';
import type { RunTable } from '../db/schema.js';
import type { PriceTable } from '../runtime/models/prices.js';
import type { ModelRegistry } from '../runtime/models/registry.js';
import type { ToolRegistry } from '../runtime/tools/registry.js';
import type { SignalBus } from '../signals/bus.js';
import type { Tracing } from '../tracing/tracing.js';
import type { Admission } from './admission.js';
import type { ToolApprovalRequests } from './approval-requests.js';
import type { RunObserver } from './observer.js';
import type { RunChannel, RunEvent, RunEventHub } from './events.js';
import type { TerminalStatus } from './statuses.js';
import type { RunFinished, RunFinishedListener, RunOutcome, StartRunInput, SystemPromptContributor } from './types.js';

/** What the runs service is built from (runs/index.ts, createRunsDomain). */
export interface RunsOptions {
  db: Db;
  models: ModelRegistry;
  tools: ToolRegistry<Agent>;
  prices: PriceTable;
  /** How long a run's lease lasts; renewed every third of it. */
  leaseMs: number;
  log: FastifyBaseLogger;
  bus: SignalBus;
  admission: Admission;
  agents: AgentsService;
  /** The files a run's message attaches, whose text the model is given with it. */
  files: Pick<FilesService, 'modelContext'>;
  /** Idempotency-Key claims: a retried request is answered what the first one started (starter.ts). */
  idempotency: IdempotencyService;
  /** Told of runs' starts, events and ends (the metrics); absent, nothing is observed. */
  observer?: RunObserver;
  /** Traces of runs, model calls and tool calls (src/tracing/); absent, nothing is traced. */
  tracing?: Tracing;
  /** Sections other domains add to every run's system prompt, in this order. */
  systemPromptContributors?: readonly SystemPromptContributor[];
  /**
   * Lazy port to where tool calls that wait for a person are recorded (the approvals domain, built after
   * runs: resolved when a call waits); absent, no call waits.
   */
  toolApprovals?: () => ToolApprovalRequests;
  /**
   * Told of every run that ends, by the process that wrote the terminal state (after the write), in this
   * order; closures over domains built after runs (tasks, approvals). One that fails is logged, and the
   * others are still told.
   */
  finishedListeners?: readonly RunFinishedListener[];
  /** When a call that waits for a person expires (default: real time); leases keep real time. */
  clock?: Clock;
}

/**
 * The one object every part of the run engine (start, execute, finish, leases, control, follow) is
 * built from: the options, and the state of this process they share.
 */
export interface RunResources extends RunsOptions {
  /** The options' clock, or real time. */
  clock: Clock;
  /** This process, as lease owner. */
  instanceId: string;
  events: RunEventHub;
  /** Runs executing in this process. */
  active: Map<string, ActiveRun>;
  finished: FinishedListeners;
  /** The newest messages of conversations answered here, so a start need not read them again. */
  recent: RecentMessages;
}

/** A run executing in this process. */
export interface ActiveRun {
  controller: AbortController;
  inbox: string[];
  channel: RunChannel;
  done: Promise<RunOutcome | null>;
  /** Set once the loop has returned: later injections are refused rather than lost. */
  closing: boolean;
  taskId: string | null;
  onFinish?: StartRunInput['onFinish'];
}

/** A run's end as finish.ts writes it. */
export interface RunEnd {
  at: string;
  patch: Updateable<RunTable> & { status: TerminalStatus };
  reply: MessageRow | null;
  /** The run's last events, taken from its channel once. */
  events: () => RunEvent[];
}

/**
 * Listeners told of every run that ends, by the process that wrote the terminal state (after the
 * write); one that fails is logged, and the others are still told.
 */
export class FinishedListeners {
  constructor(
    private readonly log: FastifyBaseLogger,
    private readonly listeners: readonly RunFinishedListener[],
  ) {}

  async notify(run: RunFinished) {
    for (const listener of this.listeners) {
      try {
        await listener(run);
      } catch (err) {
        this.log.error({ err, runId: run.runId }, 'run finished listener failed');
      }
    }
  }
}
