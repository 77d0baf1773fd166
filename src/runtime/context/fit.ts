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
 * summary so far, down to half the history's room so that a refresh is not a model call every run.
 * The summary requests fit the summarising model's own window: in pieces when the new turns do not
 * fit one request (`Summarizer`). History left out without a summary (the summary model
 * failed, or its window holds no request) is recorded on the run as `contextTruncated` and told in a
 * `context_truncated` event. Fitting only ever drops history; this run's own messages are sent even
 * when they alone overflow (the provider then refuses the call).
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
  /**
   * The model that writes summaries, how its failed calls are retried, and its own window (unknown:
   * its requests are not fitted); asked for when first needed.
   */
  summarizer(): { model: LanguageModelV3; retry?: RetryPolicy; limits?: ContextLimits };
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
  /** History left out without a summary, and why; told to the run once (`takeTruncation`). */
  private truncation: { droppedMessages: number; reason: string } | undefined;
  private truncationTold = false;

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
    const room = available - summaryBudget;
    const kept = this.newestFitting(room);
    // When a turn the summary does not cover yet is pushed out, the summary takes in every turn but the
    // newest that fill half the room: the next turns then fit without a summary call each.
    await this.refreshSummary(kept, Math.max(kept, this.newestFitting(room / 2)), summaryBudget, signal);
    let fitted = system;
    if (this.summary) {
      const text = this.summary.text.slice(0, summaryBudget * 4);
      fitted = `${system ? `${system}\n\n` : ''}Summary of the earlier conversation (its older messages are left out):\n${text}`;
    }
    const messages = [...this.groups.slice(kept).flatMap((g) => g.messages), ...current];
    return fitted === undefined ? messages : [{ role: 'system', content: fitted }, ...messages];
  }

  /** The index of the oldest of the newest groups that fit in `tokens` (the groups' count when none does). */
  private newestFitting(tokens: number): number {
    let kept = this.groups.length;
    while (kept > 0 && this.groups[kept - 1].tokens <= tokens) tokens -= this.groups[--kept].tokens;
    return kept;
  }

  /**
   * Summarises the groups before `through` that the summary does not cover yet, with the summary so
   * far; those before `pushedOut` are the ones the prompt leaves out, and left out unsummarised when
   * no summary can be made.
   */
  private async refreshSummary(pushedOut: number, through: number, maxTokens: number, signal: AbortSignal) {
    const options = this.options;
    if (!this.summaryRead) {
      this.summaryRead = true;
      this.summary = await options.summaries.read();
      const covered = this.summary?.throughMessageId;
      // The stored summary covers the leading groups whose every stored message it reaches.
      if (covered)
        while (this.summarized < this.groups.length && this.groups[this.summarized].turns.every((t) => t.id && t.id <= covered))
          this.summarized++;
    }
    if (pushedOut <= this.summarized) return;
    const fresh = this.groups.slice(this.summarized, through).flatMap((g) => g.turns);
    try {
      const summarizer = options.summarizer();
      const text = await new Summarizer(summarizer, maxTokens, signal, this.usage).summarize(this.summary?.text, fresh.map(transcriptLine));
      const lastId = fresh.reduce<string | undefined>((max, t) => (t.id && (!max || t.id > max) ? t.id : max), undefined);
      this.summary = { text, throughMessageId: lastId ?? this.summary?.throughMessageId ?? '' };
      this.summarized = through;
      // The caller's own history (no ids) is summarised for this run only: nothing stored covers it.
      if (lastId) await options.summaries.write(this.summary);
    } catch (err) {
      if (signal.aborted) throw err;
      // Without a new summary the older turns are left out: said on the run (contextTruncated) and in its events.
      const reason = `the conversation's summary could not be refreshed: ${err instanceof Error ? err.message : String(err)}`;
      if (!this.warnings.includes(reason)) this.warnings.push(reason);
      const droppedMessages = this.groups.slice(this.summarized, pushedOut).reduce((n, g) => n + g.messages.length, 0);
      this.truncation = { droppedMessages: (this.truncation?.droppedMessages ?? 0) + droppedMessages, reason };
      this.truncationTold = false;
      // Not tried again at every step of this run.
      this.summarized = pushedOut;
    }
  }

  /** History left out unsummarised that the run has not been told of yet (once per truncation). */
  takeTruncation(): { droppedMessages: number; reason: string } | undefined {
    if (!this.truncation || this.truncationTold) return undefined;
    this.truncationTold = true;
    return this.truncation;
  }
}

/** Estimated tokens of a summary request's framing besides its text: the messages' roles and a margin for the estimate. */
const REQUEST_FRAMING_TOKENS = 16;
/** A request that cannot hold this much text besides its instructions makes no useful summary. */
const MIN_REQUEST_TEXT_TOKENS = 32;

/**
 * Summary requests that fit the summarising model's window (when its window is known): the summary so
 * far and the new messages in one request when they fit; otherwise the messages in pieces that fit,
 * each summarised on its own (map), then the summaries merged a few at a time until one is left
 * (reduce). A line longer than a whole request is cut to fit.
 */
class Summarizer {
  private readonly maxOutputTokens: number;
  /** Estimated tokens of text one request may hold besides its instructions (Infinity: no window known). */
  private readonly room: number;

  constructor(
    private readonly model: { model: LanguageModelV3; retry?: RetryPolicy; limits?: ContextLimits },
    maxTokens: number,
    private readonly signal: AbortSignal,
    private readonly usage: { inputTokens: number; outputTokens: number },
  ) {
    const window = model.limits?.contextWindow;
    if (window === undefined) {
      this.maxOutputTokens = maxTokens;
      this.room = Number.POSITIVE_INFINITY;
      return;
    }
    const fixed = estimateTokens(SUMMARY_SYSTEM_PROMPT) + REQUEST_FRAMING_TOKENS;
    // The answer may take a quarter of what is left, so that a merge can hold at least two summaries.
    this.maxOutputTokens = Math.min(maxTokens, Math.floor((window - fixed) / 4));
    this.room = window - fixed - this.maxOutputTokens;
    if (this.maxOutputTokens < 8 || this.room < MIN_REQUEST_TEXT_TOKENS) {
      throw new Error(`the summary model's context window of ${window} tokens cannot hold a summary request`);
    }
  }

  async summarize(soFar: string | undefined, lines: string[]): Promise<string> {
    const whole = (soFar ? `Summary so far:\n${soFar}\n\n` : '') + `New messages, oldest first:\n${lines.join('\n')}`;
    if (estimateTokens(whole) <= this.room) return this.call(whole);
    // Map: the new messages in pieces that fit, each summarised alone.
    const header = 'New messages, oldest first:\n';
    const partials: string[] = [];
    for (const piece of this.pieces(lines, this.room - estimateTokens(header))) partials.push(await this.call(header + piece));
    // Reduce: the summary so far and the pieces' summaries, merged in order until one is left.
    let parts = soFar ? [soFar, ...partials] : partials;
    while (parts.length > 1) {
      const merged: string[] = [];
      for (const group of this.groupsOf(parts)) merged.push(group.length === 1 ? group[0] : await this.call(mergeRequest(group)));
      if (merged.length >= parts.length) throw new Error('the summaries could not be merged within the summary model’s window');
      parts = merged;
    }
    return parts[0];
  }

  /** Consecutive lines joined while they fit `room`; a line alone too long is cut to it. */
  private pieces(lines: string[], room: number): string[] {
    const pieces: string[] = [];
    let current = '';
    for (const line of lines) {
      const fitted = estimateTokens(line) <= room ? line : `${line.slice(0, room * 4 - 40)}... (cut)`;
      const joined = current ? `${current}\n${fitted}` : fitted;
      if (current && estimateTokens(joined) > room) {
        pieces.push(current);
        current = fitted;
      } else current = joined;
    }
    if (current) pieces.push(current);
    return pieces;
  }

  /** Summaries to merge, in order, as many to a request as fit (each cut to half a request at most). */
  private groupsOf(parts: string[]): string[][] {
    const half = Math.floor((this.room - 24) / 2);
    const groups: string[][] = [];
    let current: string[] = [];
    for (const part of parts) {
      const fitted = estimateTokens(part) <= half ? part : `${part.slice(0, half * 4 - 40)}... (cut)`;
      if (current.length && estimateTokens(mergeRequest([...current, fitted])) > this.room) {
        groups.push(current);
        current = [];
      }
      current.push(fitted);
    }
    if (current.length) groups.push(current);
    return groups;
  }

  private async call(request: string): Promise<string> {
    const out = await streamStep(
      { model: this.model.model, retry: this.model.retry },
      {
        options: {
          prompt: [
            { role: 'system', content: SUMMARY_SYSTEM_PROMPT },
            { role: 'user', content: [{ type: 'text', text: request }] },
          ],
          maxOutputTokens: this.maxOutputTokens,
          abortSignal: this.signal,
        },
        toolNames: new Set(),
      },
      { onText: () => {} },
    );
    this.usage.inputTokens += out.usage.inputTokens;
    this.usage.outputTokens += out.usage.outputTokens;
    const text = out.message.content
      .flatMap((p) => (p.type === 'text' ? [p.text] : []))
      .join('')
      .trim();
    if (out.error !== undefined || !text) throw out.error ?? new Error('the summary came back empty');
    return text;
  }
}

function mergeRequest(summaries: string[]): string {
  return `Summaries of consecutive parts of the conversation, oldest first:\n\n${summaries.map((s, i) => `Part ${i + 1}:\n${s}`).join('\n\n')}`;
}
