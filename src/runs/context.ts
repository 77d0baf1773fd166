import type { Agent } from '../agents/schemas.js';
import * as conversations from '../conversations/turns.js';
import { now } from '../ids.js';
import type { ContextOptions } from '../runtime/context/fit.js';
import type { ConversationTurn } from '../runtime/loop.js';
import type { ContextWindow, PriceTable } from '../runtime/models/prices.js';
import type { RunResources } from './resources.js';

/** A stored history message as the start reads it (conversations/turns.ts `history`). */
export interface StoredTurn {
  id: string;
  role: string;
  content: string;
  tool_calls: string | null;
}

/**
 * The model's history: the caller's own turns (an OpenAI-style client sends them), then the
 * conversation's stored messages with their ids (what a summary covers) and tool calls with results.
 */
export function historyTurns(caller: { role: string; content: string }[], stored: readonly StoredTurn[]): ConversationTurn[] {
  const role = (m: { role: string }) => (m.role === 'assistant' ? 'assistant' : 'user');
  const turns: ConversationTurn[] = caller.map((m) => ({ role: role(m), content: m.content }));
  // Each turn written out whole: an object spread (`{ ...turn(m), id }`) costs ~1 µs a turn on Node 20.
  for (const m of stored) {
    turns.push({ role: role(m), content: m.content, id: m.id, toolCalls: m.tool_calls ? storedToolCalls(m.tool_calls) : undefined });
  }
  return turns;
}

/** A damaged tool_calls column costs the history its calls, not the run. */
function storedToolCalls(text: string) {
  try {
    return conversations.toolCallsColumn(text);
  } catch {
    return undefined;
  }
}

/**
 * How the run's history is fitted into its models' window (runtime/context/fit.ts): the smallest window
 * from the price table among `models`, those a step may be sent to (none known: no fitting), summaries
 * by the agent's `summaryModel` or its own model, kept with the conversation.
 */
export function contextOptions(
  r: RunResources,
  run: { tenantId: string; conversationId: string; agent: Agent; models: string[] },
): ContextOptions | undefined {
  const limits = tightestWindow(r.prices, run.models);
  if (!limits) return undefined;
  const { tenantId, conversationId } = run;
  const summaryModel = summaryModelOf(run.agent);
  return {
    limits,
    // Resolved when first needed: an unavailable summary model is the run's warning, not its failure.
    summarizer: () => ({
      model: r.models.resolve(summaryModel),
      retry: r.models.retryPolicy(summaryModel),
      limits: r.prices.windowOf(summaryModel),
    }),
    summaries: {
      read: async () => {
        const row = await conversations.findSummary(r.db.kysely, tenantId, conversationId);
        return row ? { text: row.summary, throughMessageId: row.through_message_id } : undefined;
      },
      write: (s) =>
        conversations.saveSummary(r.db.kysely, {
          tenant_id: tenantId,
          conversation_id: conversationId,
          summary: s.text,
          through_message_id: s.throughMessageId,
          updated_at: now(),
        }),
    },
  };
}

/**
 * The window with the least room for the prompt among the models: a step that falls back sends the
 * same prompt, so it must fit the smallest. Models with no window known are left out.
 */
function tightestWindow(prices: PriceTable, models: string[]): ContextWindow | undefined {
  let tightest: ContextWindow | undefined;
  for (const model of models) {
    const window = prices.windowOf(model);
    if (window && (!tightest || window.contextWindow - window.outputReserve < tightest.contextWindow - tightest.outputReserve)) {
      tightest = window;
    }
  }
  return tightest;
}

export function summaryModelOf(agent: Agent): string {
  return agent.configuration.summaryModel ?? agent.model;
}
