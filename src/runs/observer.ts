import type { ModelUsage } from './fallbacks.js';
import type { RunOutcome } from './types.js';

/**
 * What the run engine tells an observer of its runs (the metrics of src/metrics/; app.ts hands one over
 * through RunsOptions). Each call is synchronous and cheap: it runs on the runs' hot path.
 */
export interface RunObserver {
  started(kind: string, tenantId: string): void;
  /** The run's first streamed token, `seconds` after its start. */
  firstToken(kind: string, seconds: number): void;
  /** A run event published by a run executing here (token, tool_call_start, tool_call_end). */
  published(event: string): void;
  /** A run that ended here (its terminal state written by this process). */
  ended(run: EndedRun): void;
  /** A run this process declared interrupted after its lease expired. */
  recovered(): void;
  injected(): void;
  cancelled(): void;
  /** A follower of a run's events served from the database. */
  replayed(): void;
  /** A call to `model` (the one asked: the agent's or a fallback) retried after a provider failure (`code`: the failure's ProviderErrorCode). */
  retried(model: string, code: string): void;
}

interface EndedRun {
  kind: string;
  tenantId: string;
  /** The agent's model id (provider/name). */
  model: string;
  steps: number;
  /** Steps, tokens and cost by the model that served them (a fallback's, the summary model's): fallbacks.ts usageByModel. */
  byModel: readonly ModelUsage[];
  /** The model whose provider failed the run (the last one its failing step tried), when it failed on its provider. */
  failedModel?: string;
  /** Each tool's source by name (ToolSet.sources), for the outcome's tool calls. */
  toolSources: ReadonlyMap<string, string> | undefined;
  outcome: RunOutcome;
}

type Emit = (e: { event: string; data: Record<string, unknown> }) => void;

/**
 * The loop's event callback, telling the observer of each event and of the first token's time since
 * `startedAtMs` (undefined: not timed, as for a run resumed after an approval).
 */
export function observedEvents(observer: RunObserver, kind: string, startedAtMs: number | undefined, emit: Emit): Emit {
  let firstTokenSeen = startedAtMs === undefined;
  return (e) => {
    if (!firstTokenSeen && e.event === 'token') {
      firstTokenSeen = true;
      observer.firstToken(kind, (Date.now() - startedAtMs!) / 1000);
    }
    observer.published(e.event);
    emit(e);
  };
}
