import type { LanguageModelV3, LanguageModelV3Message, LanguageModelV3Prompt } from '@ai-sdk/provider';
import { streamStep } from '../model-step.js';
import type { RetryPolicy } from '../models/retries.js';
import { type ConversationTurn, transcriptLine, turnMessages } from './history.js';
import { estimateTokens, promptTokens } from './tokens.js';

/**
 * Context that fits the model (docs/runtime.md, "Context that fits the model"). Before each step the
 * prompt is fitted into the model's window minus the output it reserves: the system prompt and this
 * run's own messages always, then the conversation's most recent turns whole (a user message and the
 * answer to it, tool calls and results included), newest first, while they fit. Turns that no longer
 * fit are summarised by a model (the agent's own, or its `summaryModel`) into one summary, kept with
 * the conversation and refreshed incrementally: only turns pushed out since are summarised, with the
 * summary so far. Fitting only ever drops history; this run's own messages are sent even when they
 * alone overflow (the provider then refuses the call).
 */

interface ContextLimits {
  /** The model's context window, in tokens. */
  contextWindow: number;
  /** Tokens kept free for the model's answer. */
  outputReserve: number;
}

/** A conversation's summary: what it says, and the last message it covers. */
export interface ConversationSummary {
  text: string;
  throughMessageId: string;
}

/** Where a conversation's summary is kept (the conversations domain, through the run engine). */
interface SummaryStore {
  read(): Promise<ConversationSummary | undefined>;
  write(summary: ConversationSummary): Promise<void>;
}

export interface ContextOptions {
  limits: ContextLimits;
  /** The model that writes summaries, and how its failed calls are retried (asked for when first needed). */
  summarizer(): { model: LanguageModelV3; retry?: RetryPolicy };
  summaries: SummaryStore;
}

const SUMMARY_SYSTEM_PROMPT =
  'You maintain the running summary of a conversation between a user and an AI agent. Merge the summary so far ' +
  'with the new messages into one concise summary that keeps facts, names, numbers, decisions, tool results that ' +
  'matter and open questions. It replaces those messages in the agent’s context. Answer with the summary only.';

interface Group {
  messages: LanguageModelV3Message[];
  turns: ConversationTurn[];
  tokens: number;
}

/**
 * Fits each step's prompt. The loop's prompt is the system message, the history's messages
 * (`turnMessages` of each turn, in order), then this run's own; `usage` is what summarising cost
 * (the run counts it), `warnings` what went wrong with it.
 */
export class ContextFitter {
  readonly usage = { inputTokens: 0, outputTokens: 0 };
  readonly warnings: string[] = [];
  private readonly groups: Group[] = [];
  private readonly historyLength: number;
  private summary: ConversationSummary | undefined;
  private summaryRead = false;
  /** Leading groups the summary covers already (stored before this run, or made during it). */
  private summarized = 0;

  constructor(
    private readonly options: ContextOptions,
    history: ConversationTurn[],
  ) {
    // A turn is a user message and the answers that follow it, kept or dropped together.
    let length = 0;
    for (const turn of history) {
      const messages = turnMessages(turn);
      length += messages.length;
      const last = this.groups[this.groups.length - 1];
      if (turn.role === 'user' || !last) this.groups.push({ messages, turns: [turn], tokens: promptTokens(messages) });
      else {
        last.messages.push(...messages);
        last.turns.push(turn);
        last.tokens += promptTokens(messages);
      }
    }
    this.historyLength = length;
  }

  /** The prompt of the next step: `prompt` as the loop holds it, its history fitted. */
  async fit(prompt: LanguageModelV3Prompt, signal: AbortSignal): Promise<LanguageModelV3Prompt> {
    const first = prompt[0];
    const system = first?.role === 'system' ? first.content : undefined;
    const start = system === undefined ? 0 : 1;
    if (prompt.length < start + this.historyLength) return prompt;
    const current = prompt.slice(start + this.historyLength);
    const { limits } = this.options;
    const systemTokens = system === undefined ? 0 : estimateTokens(system) + 4;
    const available = limits.contextWindow - limits.outputReserve - systemTokens - promptTokens(current);
    const historyTokens = this.groups.reduce((n, g) => n + g.tokens, 0);
    if (historyTokens <= available) return prompt;

    // A quarter of what the prompt may hold is kept for the summary.
    const summaryBudget = Math.max(16, Math.floor((limits.contextWindow - limits.outputReserve) / 4));
    let budget = available - summaryBudget;
    let kept = this.groups.length;
    while (kept > 0 && this.groups[kept - 1].tokens <= budget) budget -= this.groups[--kept].tokens;
    await this.refreshSummary(kept, summaryBudget, signal);
    let fitted = system;
    if (this.summary) {
      const text = this.summary.text.slice(0, summaryBudget * 4);
      fitted = `${system ? `${system}\n\n` : ''}Summary of the earlier conversation (its older messages are left out):\n${text}`;
    }
    const messages = [...this.groups.slice(kept).flatMap((g) => g.messages), ...current];
    return fitted === undefined ? messages : [{ role: 'system', content: fitted }, ...messages];
  }

  /** Summarises the groups before `pushedOut` that the summary does not cover yet, with the summary so far. */
  private async refreshSummary(pushedOut: number, maxTokens: number, signal: AbortSignal) {
    const options = this.options;
    if (!this.summaryRead) {
      this.summaryRead = true;
      this.summary = await options.summaries.read();
      const through = this.summary?.throughMessageId;
      // The stored summary covers the leading groups whose every stored message it reaches.
      if (through)
        while (this.summarized < this.groups.length && this.groups[this.summarized].turns.every((t) => t.id && t.id <= through))
          this.summarized++;
    }
    if (pushedOut <= this.summarized) return;
    const fresh = this.groups.slice(this.summarized, pushedOut).flatMap((g) => g.turns);
    const request =
      (this.summary ? `Summary so far:\n${this.summary.text}\n\n` : '') +
      `New messages, oldest first:\n${fresh.map(transcriptLine).join('\n')}`;
    try {
      const summarizer = options.summarizer();
      const out = await streamStep(
        summarizer.model,
        {
          prompt: [
            { role: 'system', content: SUMMARY_SYSTEM_PROMPT },
            { role: 'user', content: [{ type: 'text', text: request }] },
          ],
          maxOutputTokens: maxTokens,
          abortSignal: signal,
        },
        new Set(),
        { onText: () => {} },
        summarizer.retry,
      );
      this.usage.inputTokens += out.usage.inputTokens;
      this.usage.outputTokens += out.usage.outputTokens;
      const text = out.message.content
        .flatMap((p) => (p.type === 'text' ? [p.text] : []))
        .join('')
        .trim();
      if (out.error !== undefined || !text) throw out.error ?? new Error('the summary came back empty');
      const lastId = fresh.reduce<string | undefined>((max, t) => (t.id && (!max || t.id > max) ? t.id : max), undefined);
      this.summary = { text, throughMessageId: lastId ?? this.summary?.throughMessageId ?? '' };
      this.summarized = pushedOut;
      // The caller's own history (no ids) is summarised for this run only: nothing stored covers it.
      if (lastId) await options.summaries.write(this.summary);
    } catch (err) {
      if (signal.aborted) throw err;
      // Without a new summary the older turns are simply left out; the run goes on.
      const warning = `the conversation's summary could not be refreshed: ${err instanceof Error ? err.message : String(err)}`;
      if (!this.warnings.includes(warning)) this.warnings.push(warning);
      // Not tried again at every step of this run.
      this.summarized = pushedOut;
    }
  }
}
