import type { Agent } from '../agents/schemas.js';
import type { ConversationRow } from '../conversations/turns.js';
import { type ConversationTurn, type LoopResult, ModelCallError, runLoop } from '../runtime/loop.js';
import { ModelUnavailableError } from '../runtime/models/registry.js';
import type { ToolSet } from '../runtime/tools/types.js';
import { chatSpans, traceRun, tracedTools } from '../tracing/genai.js';
import type { TraceContext } from '../tracing/tracing.js';
import { answerShape } from '../runtime/structured-output.js';
import { contextOptions, historyTurns, type StoredTurn, summaryModelOf } from './context.js';
import type { RunChannel } from './events.js';
import { fallbackChoices, usageByModel } from './fallbacks.js';
import type { RunFinish } from './finish.js';
import type { Resumed, RunPauses } from './pause.js';
import { approvalCheck } from '../runtime/tools/approval-policy.js';
import { observedEvents } from './observer.js';
import type { ActiveRun, RunResources } from './resources.js';
import { RunFault, ShutdownAbort, type RunOutcome, type StartRunInput, type SystemPromptContributor } from './types.js';
import type { RunError } from './views.js';

/** Runs whose caller hears nothing before they end: an answer cut part-way starts its step over (runtime/model-step.ts). */
const ANSWERED_WHOLE: ReadonlySet<string> = new Set(['execute', 'task', 'delegation']);

/** A run whose start is written, ready to execute here. */
export interface Launch {
  input: StartRunInput;
  runId: string;
  conversation: ConversationRow;
  /** The conversation's earlier messages the model is given. */
  history: readonly StoredTurn[];
  at: string;
  channel: RunChannel;
  /** A run resumed after approval: its loop goes on from the pause with the decisions (pause.ts). */
  resume?: Resumed;
  /** Traced, what resumed it (the request deciding its last waiting call). */
  resumedBy?: TraceContext;
}

/** Executing a run: the tool loop over the agent's model and tools, its events, then its end. */
export class RunExecution {
  constructor(
    private readonly r: RunResources,
    private readonly ending: RunFinish,
    private readonly pauses: RunPauses,
  ) {}

  /** Registers the run as executing here and sets it going. */
  launch(l: Launch): ActiveRun {
    const { input, runId } = l;
    const messages: ConversationTurn[] = historyTurns(input.history ?? [], l.history);
    messages.push({ role: 'user', content: input.modelContext ? `${input.content}\n\n${input.modelContext}` : input.content });
    const controller = new AbortController();
    const activeRun: ActiveRun = {
      controller,
      inbox: [],
      channel: l.channel,
      done: Promise.resolve(null),
      closing: false,
      taskId: input.taskId ?? null,
      onFinish: input.onFinish,
    };
    this.r.active.set(runId, activeRun);
    // A run resumed after an approval was counted when it first started.
    if (!l.resume) this.r.observer?.started(input.kind, input.principal.tenantId);
    const execute = (trace?: TraceContext) =>
      this.execute({
        runId,
        conversation: l.conversation,
        input,
        messages,
        activeRun,
        startedAtMs: Date.parse(l.at),
        resume: l.resume,
        trace,
      });
    // Traced, the run is an invoke_agent span, child of the request, tool call or task job that started it.
    const tracing = this.r.tracing;
    const run = { runId, kind: input.kind, tenantId: input.principal.tenantId, agent: input.agent, model: input.agent.model };
    // A run resumed after approval continues the trace it was started in, whichever process resumes it.
    const parent = l.resume?.traceparent;
    activeRun.done = (
      tracing
        ? traceRun(tracing, { ...run, conversationId: l.conversation.id, parent, startedBy: input.trace, resumedBy: l.resumedBy }, execute)
        : execute()
    ).catch(async (err) => {
      this.r.log.error({ err, runId }, 'run execution failed unexpectedly');
      // Not left executing for ever (holding its tenant's concurrency, deaf to cancel): recovery ends it.
      await this.ending.abandon(runId).catch((e: unknown) => this.r.log.error({ err: e, runId }, 'abandoning a run failed'));
      return null;
    });
    return activeRun;
  }

  private async execute(x: {
    runId: string;
    conversation: ConversationRow;
    input: StartRunInput;
    messages: ConversationTurn[];
    activeRun: ActiveRun;
    startedAtMs: number;
    resume?: Resumed;
    /** Traced, the run's span: the parent of its model calls and tool calls. */
    trace?: TraceContext;
  }): Promise<RunOutcome | null> {
    const { runId, input, activeRun } = x;
    const { channel, controller } = activeRun;
    const agent = input.agent;
    const tenantId = input.principal.tenantId;
    const conversationId = x.conversation.id;
    let toolSet: ToolSet<Agent> = { tools: [] };
    let loop: LoopResult | undefined;
    let failure: RunError | undefined;
    let modelWarnings: string[] = [];
    try {
      const model = this.r.models.resolve(agent.model);
      const fallbacks = fallbackChoices(this.r.models, agent.configuration.fallbackModels);
      modelWarnings = fallbacks.warnings;
      const userId = x.conversation.user_id;
      const { agentMemoryReadOnly } = input;
      const toolContext = { tenantId, agent, runId, conversationId, userId, agentMemoryReadOnly, delegationDepth: input.delegationDepth };
      const toolsEnabled = input.enableTools ?? true;
      if (toolsEnabled) {
        // The run's span is the parent of what the tools' sources do as they connect (an MCP server's handshake).
        toolSet = await this.r.tools.forRun({ ...toolContext, signal: controller.signal, trace: x.trace });
        if (this.r.tracing && x.trace) toolSet = tracedTools(this.r.tracing, toolSet, x.trace);
      }
      const contributed = await this.contributedPrompt(runId, { tenantId, agent, toolsEnabled, userId, agentMemoryReadOnly });
      // A structured answer: asked of the provider natively, or instructed in the system prompt (structured-output.ts).
      const answer = input.responseFormat ? answerShape(input.responseFormat, model) : undefined;
      const system =
        [agent.systemPrompt, agent.contextPrompt, ...contributed, input.instructions, answer?.instruction].filter(Boolean).join('\n\n') ||
        undefined;
      const maxTokens = input.maxTokens ?? agent.configuration.maxTokens ?? undefined;
      const emit = (e: { event: string; data: Record<string, unknown> }) => channel.emit(e.event, e.data);
      const observer = this.r.observer;
      loop = await runLoop({
        model,
        retry: this.r.models.retryPolicy(agent.model),
        timeouts: this.r.models.timeoutsOf(agent.model),
        cutRestarts: ANSWERED_WHOLE.has(input.kind),
        modelId: agent.model,
        fallbacks: fallbacks.choices,
        watchModel: this.r.tracing && x.trace && chatSpans(this.r.tracing, x.trace),
        breakers: this.r.models.breakers,
        system,
        messages: x.messages,
        tools: toolSet.tools,
        toolContext,
        maxSteps: agent.configuration.maxSteps,
        maxTokens,
        temperature: agent.configuration.temperature ?? undefined,
        toolTimeoutMs: agent.configuration.toolTimeoutMs,
        signal: controller.signal,
        drainInbox: () => activeRun.inbox.splice(0),
        onEvent: observer ? observedEvents(observer, input.kind, x.resume ? undefined : x.startedAtMs, emit) : emit,
        onRetry: observer ? (code, model) => observer.retried(model, code) : undefined,
        toolEventsWritten: () => activeRun.channel.flushed(),
        // The prompt must fit every model a step may be sent to: the agent's and the fallbacks this run uses.
        context: contextOptions(this.r, { tenantId, conversationId, agent, models: [agent.model, ...fallbacks.choices.map((c) => c.id)] }),
        answer,
        approval: this.r.toolApprovals
          ? {
              check: approvalCheck(agent.configuration.approval),
              resume: x.resume && { pause: x.resume.suspension.pause, decisions: x.resume.decisions },
            }
          : undefined,
      });
    } catch (err) {
      if (err instanceof ModelCallError) {
        loop = err.partial;
        failure = { code: err.code, message: err.message };
        // A provider that could not be reached: its words (an internal address, a port) go to the log, not the run.
        if (err.detail) this.r.log.warn({ runId, code: err.code, detail: err.detail }, 'the model provider could not be reached');
      } else if (err instanceof ModelUnavailableError) {
        failure = { code: err.code, message: err.message };
      } else if (controller.signal.aborted) {
        loop = undefined;
      } else {
        this.r.log.error({ err, runId }, 'run failed');
        failure = { code: 'internal_error', message: 'the run failed unexpectedly; the error is in the server log' };
      }
    } finally {
      activeRun.closing = true;
      // Closing the tools' connections (MCP sessions) cannot change how the run ended: logged, not raised.
      if (toolSet.close)
        await toolSet.close().catch((err: unknown) => this.r.log.warn({ err, runId }, 'closing the run’s tool connections failed'));
    }
    if (!failure && controller.signal.reason instanceof ShutdownAbort) {
      failure = { code: 'interrupted', message: controller.signal.reason.message };
    }
    if (!failure && controller.signal.reason instanceof RunFault) {
      failure = { code: controller.signal.reason.code, message: controller.signal.reason.message };
    }
    const cancelled = !failure && (controller.signal.aborted || loop?.finish === 'cancelled');
    if (!failure && !cancelled && loop?.finish === 'awaiting_approval') {
      // A tool call waits for a person: the run pauses (pause.ts) instead of ending; any process resumes it.
      const warnings = [...(toolSet.warnings ?? []), ...loop.warnings];
      if ((await this.pauses.pause({ runId, input, conversationId, result: loop, warnings, startedAtMs: x.startedAtMs })) !== 'failed')
        return null;
      failure = { code: 'internal_error', message: 'the run could not wait for approval; the error is in the server log' };
    }
    const result: LoopResult = loop ?? {
      output: '',
      steps: [],
      toolCalls: [],
      usage: { inputTokens: 0, outputTokens: 0 },
      finish: 'cancelled',
      warnings: [],
    };
    const outcome = await this.ending.finish({
      runId,
      tenantId,
      conversation: { id: conversationId, createdAt: x.conversation.created_at },
      model: agent.model,
      result,
      status: cancelled ? 'cancelled' : failure ? 'failed' : 'completed',
      failure,
      // The run's warnings: tool sources that could not contribute, then what the provider warned about.
      warnings: [...(toolSet.warnings ?? []), ...modelWarnings, ...result.warnings],
      startedAtMs: x.startedAtMs,
      toolSources: toolSet.sources,
      summaryModel: summaryModelOf(agent),
      // Approvals are written only when a run pauses: a run that never did has none to close.
      awaitedApproval: Boolean(x.resume) || loop?.finish === 'awaiting_approval',
    });
    if (outcome && this.r.observer) {
      // Each step is the metrics' of the model that served it; a provider failure, of the model that failed.
      const byModel = usageByModel(this.r.prices, agent.model, result.steps, { model: summaryModelOf(agent), usage: result.summaryUsage });
      const failedModel = failure?.code.startsWith('provider_') ? (result.steps.at(-1)?.model ?? agent.model) : undefined;
      const ended = {
        kind: input.kind,
        tenantId,
        model: agent.model,
        steps: result.steps.length,
        byModel,
        failedModel,
        toolSources: toolSet.sources,
        outcome,
      };
      this.r.observer.ended(ended);
    }
    return outcome;
  }

  private async contributedPrompt(runId: string, ctx: Parameters<SystemPromptContributor>[0]): Promise<string[]> {
    const parts = await Promise.all(
      (this.r.systemPromptContributors ?? []).map((contribute) =>
        contribute(ctx).catch((err) => {
          this.r.log.warn({ err, runId }, 'a system prompt contributor failed; its section is left out');
          return undefined;
        }),
      ),
    );
    return parts.filter((p): p is string => Boolean(p));
  }
}
