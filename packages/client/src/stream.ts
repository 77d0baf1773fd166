import { AgentryError, abortedError } from './errors.js';
import type { Http } from './http.js';
import { seg } from './path.js';
import { parseSse } from './sse.js';
import type { RunDetails } from './types.js';

export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
}

/** A tool call that waits for a person (docs/runtime.md, "Approvals"): decided at POST /api/v1/approvals/{approvalId}/approve or reject. */
export interface ApprovalRequired {
  approvalId: string;
  toolCall: { id: string; name: string; arguments: unknown };
  reason: string;
  /** When the approval expires and its `onTimeout` decides it (ISO 8601). */
  expiresAt: string;
}

/**
 * The events of a run's stream, as the server sends them (the stream routes' description in the
 * OpenAPI document); `seq` is the event's id (Last-Event-ID). `approval_required` does not end the
 * stream: it stays open while the call waits, and the run's events go on once it is decided.
 */
export type RunEvent =
  | { type: 'token'; seq: number; data: { text: string } }
  | { type: 'tool_call_start'; seq: number; data: { id: string; name: string; input: unknown } }
  | { type: 'tool_call_end'; seq: number; data: { id: string; result: Record<string, unknown> } }
  | { type: 'approval_required'; seq: number; data: ApprovalRequired }
  /** Older history was left out of the prompt without a summary (the run's `contextTruncated`). */
  | { type: 'context_truncated'; seq: number; data: { droppedMessages: number; reason: string } }
  /** The provider's answer broke off after `partial`; `next`: the step's tokens start again (retry, fallback), or the run fails (fail: its error follows). */
  | {
      type: 'answer_cut';
      seq: number;
      data: { code: string; message: string; model: string; partial: string; next: 'retry' | 'fallback' | 'fail' };
    }
  | {
      type: 'done';
      seq: number;
      data: {
        conversationId: string;
        runId: string;
        cost: number;
        tokenUsage: TokenUsage;
        /** Why the model stopped: stop, length (cut off at maxTokens), content-filter, max_steps, other; null when no step answered. */
        finishReason: string | null;
        /** The answer as an object, when the run was asked for a `responseFormat`. */
        structuredOutput?: Record<string, unknown>;
      };
    }
  | { type: 'error'; seq: number; data: { code: string; message: string } };

export interface StreamOptions {
  /**
   * Stops reading locally, rejecting with an AgentryError of code `aborted` (the run goes on on the
   * server: `cancel()` stops it there).
   */
  signal?: AbortSignal;
  /**
   * Reconnections in a row through GET /runs/{runId}/events after a dropped connection, without an event
   * in between (default 5): each event received renews the budget. The first request is sent again as
   * often when it fails before any answer (a stream's POST carries its Idempotency-Key, so the server
   * answers the same run).
   */
  maxReconnects?: number;
}

/** What a stream reads: a new run's (from its start), or a run's events after `lastEventId`. */
type ReadOptions = StreamOptions & { lastEventId?: number };

const RECONNECT_DELAY_MS = 250;

/**
 * A streamed run: an async iterable of its events, each seen exactly once. When the connection drops
 * before the run's last event, it resumes from the last event seen (Last-Event-ID) on the run's events
 * endpoint, so nothing is repeated and no second run starts. A 204 of the events endpoint (the run has
 * ended and every event was seen) ends the iteration.
 */
export class RunStream implements AsyncIterable<RunEvent> {
  private readonly opened: Promise<Response>;
  private started = false;
  private runIdValue: string | undefined;
  private conversationIdValue: string | undefined;

  constructor(
    private readonly http: Http,
    open: () => Promise<Response>,
    private readonly options: ReadOptions = {},
  ) {
    this.opened = this.openWithRetries(open).then((response) => {
      this.runIdValue = response.headers.get('x-run-id') ?? undefined;
      this.conversationIdValue = response.headers.get('x-conversation-id') ?? undefined;
      return response;
    });
    // Failures surface through iteration or runId(); this keeps an unread one from being unhandled.
    this.opened.catch(() => {});
  }

  /** The first request, sent again after a network error before any answer (not after an HTTP error). */
  private async openWithRetries(open: () => Promise<Response>): Promise<Response> {
    const maxReconnects = this.options.maxReconnects ?? 5;
    for (let attempt = 1; ; attempt++) {
      try {
        return await open();
      } catch (err) {
        if (attempt > maxReconnects || !isNetworkError(err)) throw err;
        const { signal } = this.options;
        await this.http.wait(RECONNECT_DELAY_MS * attempt, signal).catch((reason) => {
          throw signal?.aborted ? abortedError(signal.reason) : reason;
        });
      }
    }
  }

  /** The run's id, known once the server has answered (before its first event). */
  async runId(): Promise<string> {
    await this.opened;
    if (!this.runIdValue)
      throw new AgentryError({ status: 0, code: 'missing_run_id', detail: 'the stream did not name its run (X-Run-Id)' });
    return this.runIdValue;
  }

  /** The conversation the run belongs to (X-Conversation-Id). */
  async conversationId(): Promise<string | undefined> {
    await this.opened;
    return this.conversationIdValue;
  }

  /** Cancels the run on the server; its stream then ends with its last events. */
  async cancel(): Promise<RunDetails> {
    const runId = await this.runId();
    return this.http.json<RunDetails>('POST', `/api/v1/runs/${seg(runId)}/cancel`);
  }

  async *[Symbol.asyncIterator](): AsyncIterator<RunEvent> {
    if (this.started) throw new TypeError('a RunStream can be iterated once');
    this.started = true;
    const { signal } = this.options;
    const maxReconnects = this.options.maxReconnects ?? 5;
    let response: Response | undefined = await this.opened;
    let lastSeq = this.options.lastEventId ?? 0;
    // Reconnections since the last event received.
    let reconnects = 0;
    for (;;) {
      // 204: the run ended and every event was seen (also on the first request, with lastEventId).
      if (response?.status === 204) return;
      if (response?.body) {
        try {
          for await (const message of parseSse(response.body)) {
            const seq = Number(message.id);
            if (Number.isFinite(seq) && seq <= lastSeq) continue;
            if (Number.isFinite(seq)) lastSeq = seq;
            reconnects = 0;
            const event = { type: message.event, seq, data: JSON.parse(message.data) } as RunEvent;
            this.runIdValue ??= event.type === 'done' ? event.data.runId : undefined;
            yield event;
            if (event.type === 'done' || event.type === 'error') return;
          }
        } catch (err) {
          if (signal?.aborted) throw abortedError(signal.reason);
          if (err instanceof SyntaxError) throw err;
          // The connection broke mid-stream: resume below.
        }
      }
      if (signal?.aborted) throw abortedError(signal.reason);
      if (reconnects++ >= maxReconnects) {
        throw new AgentryError({
          status: 0,
          code: 'stream_interrupted',
          detail: `the stream broke ${reconnects} times in a row; last event ${lastSeq}`,
        });
      }
      await this.http.wait(RECONNECT_DELAY_MS * reconnects, signal).catch((err) => {
        throw signal?.aborted ? abortedError(signal.reason) : err;
      });
      const runId = await this.runId();
      try {
        response = await this.http.send('GET', `/api/v1/runs/${seg(runId)}/events`, {
          headers: { accept: 'text/event-stream', 'last-event-id': String(lastSeq) },
          signal,
        });
      } catch (err) {
        if (isNetworkError(err)) {
          response = undefined;
          continue;
        }
        throw err;
      }
    }
  }
}

const isNetworkError = (err: unknown) => err instanceof AgentryError && err.status === 0 && err.code === 'network_error';
