import type { AgentsService } from '../agents/service.js';
import type { FilesService } from '../conversations/files.js';
import type { IdempotencyService } from '../idempotency/service.js';
import {
  type InjectedInstead,
  isInjected,
  type RunHandle,
  type RunOrder,
  type RunRequest,
  type StartedRun,
  type StartRunInput,
} from './types.js';

/** What the starter is built from (service.ts). */
export interface RunStarterParts {
  agents: Pick<AgentsService, 'get'>;
  files: Pick<FilesService, 'modelContext'>;
  idempotency: IdempotencyService;
  /** The run engine's start: admission, the start written, then execution (start.ts). */
  begin: (input: StartRunInput) => Promise<RunHandle | InjectedInstead>;
}

/**
 * The one way a run is started, whoever asks: the request's Idempotency-Key claimed first when it has
 * one (a retry is answered what the first request started, and starts nothing), then the run asked for
 * built (its agent looked up when named by id, its attachments read for the model) and started, and
 * what it started recorded against the key. A request that started nothing leaves the key free for
 * its retry. Callers translate their protocol into a RunRequest, and the StartedRun back.
 */
export class RunStarter {
  constructor(private readonly parts: RunStarterParts) {}

  async start(request: RunRequest): Promise<StartedRun> {
    const { principal, idempotency } = request;
    const tenantId = principal.tenantId;
    const keys = this.parts.idempotency;
    const claim = idempotency && (await keys.claim(tenantId, idempotency.key, idempotency.request));
    if (claim?.replay) {
      const { status, runId, messageId } = claim.replay;
      return { replayed: { status, runId: runId ?? '', messageId } };
    }
    let started: RunHandle | InjectedInstead;
    try {
      const order = typeof request.run === 'function' ? await request.run() : request.run;
      started = await this.parts.begin(await this.engineInput(principal, order, request.trace));
    } catch (err) {
      // Nothing started: a retry with the key tries again.
      if (claim) await keys.release(tenantId, claim);
      throw err;
    }
    if (isInjected(started)) {
      if (claim) await keys.record(tenantId, claim, { status: 202, runId: started.runId, messageId: started.messageId });
      return { injected: started };
    }
    if (claim) await keys.record(tenantId, claim, { status: 200, runId: started.runId });
    return { run: started };
  }

  /** The run engine's input for an order: its agent, what its attachments hold for the model, its trace parent. */
  private async engineInput(principal: RunRequest['principal'], order: RunOrder, trace: RunRequest['trace']): Promise<StartRunInput> {
    const { input, where, options } = order;
    const tenantId = principal.tenantId;
    const agent = typeof order.agent === 'string' ? await this.parts.agents.get(tenantId, order.agent) : order.agent;
    const modelContext = input.attachments?.length ? await this.parts.files.modelContext(tenantId, input.attachments) : input.modelContext;
    // A parent the order names (a delegating tool call) before the request's.
    return { principal, agent, kind: order.kind, ...input, modelContext, trace, ...where, ...options };
  }
}
