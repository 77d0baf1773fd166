import { APICallError, type LanguageModelV3 } from '@ai-sdk/provider';
import { generateText } from 'ai';

/**
 * Re-ranking by a chat model (docs/knowledge.md, "Re-ranking"): the fused ranking's best candidates
 * are shown to the base's `rerankModel` with the query, and it answers their order. A listwise prompt
 * through the provider layer, so any configured chat model can re-rank (OpenAI, Anthropic, an
 * OpenAI-compatible server); none of those vendors has a re-rank API of its own.
 */

/** The chat models re-ranking may use: the runtime's model registry. */
export interface RerankModels {
  resolve(model: string): LanguageModelV3;
  /** Why `model` cannot be used with this configuration, or undefined. */
  unavailable(model: string): string | undefined;
}

/** How long the model may take to answer by default (KNOWLEDGE_RERANK_TIMEOUT_MS sets it); past it the search answers in the fused order. */
export const RERANK_TIMEOUT_MS = 30_000;
/** How long before the one retry of a call refused for now (429, 5xx) whose answer names no Retry-After. */
const RETRY_DELAY_MS = 500;
/** Characters of each candidate shown to the model. */
const PASSAGE_CHARS = 1_000;

const SYSTEM = [
  'You rank passages by how well they answer a search query.',
  'Answer with JSON only, no other text: {"ranking": [the numbers of the passages, most relevant first]}.',
  'Leave out passages that do not help answer the query.',
].join(' ');

/** Tokens a re-ranking call spent, as the provider reported them. */
export interface RerankUsage {
  inputTokens: number;
  outputTokens: number;
}

/**
 * Why a re-ranking was not used: the passages stay in the fused order. `usage` is what the model's
 * answer spent when it answered (prose, a number out of range), null when it did not answer.
 */
export class RerankFailed extends Error {
  constructor(
    message: string,
    readonly usage: RerankUsage | null = null,
  ) {
    super(message);
  }
}

/**
 * The candidates' indexes (into `texts`) in the model's order, best first (those it left out are not
 * in the answer), and the tokens it spent. Throws RerankFailed when the model cannot be asked (down,
 * refusing, silent past `timeoutMs`), or its answer is not a ranking.
 */
export async function rerankOrder(
  model: LanguageModelV3,
  query: string,
  texts: readonly string[],
  timeoutMs = RERANK_TIMEOUT_MS,
): Promise<{ order: number[]; usage: RerankUsage }> {
  const passages = texts.map((text, i) => `[${i + 1}] ${text.slice(0, PASSAGE_CHARS).replace(/\s+/g, ' ')}`).join('\n\n');
  const timeout = AbortSignal.timeout(timeoutMs);
  const deadline = Date.now() + timeoutMs;
  const late = () => new RerankFailed(`the re-ranking model did not answer within ${timeoutMs} ms`);
  let answer: Awaited<ReturnType<typeof generateText>> | undefined;
  for (let attempt = 1; !answer; attempt++) {
    try {
      answer = await generateText({
        model,
        system: SYSTEM,
        prompt: `Query: ${query}\n\nPassages:\n${passages}`,
        temperature: 0,
        maxRetries: 0,
        abortSignal: timeout,
      });
    } catch (err) {
      if (timeout.aborted) throw late();
      // One retry for a blip, when its wait ends before the time does; else the provider's own words now.
      const wait = retryDelay(err);
      if (attempt > 1 || wait === undefined || Date.now() + wait >= deadline)
        throw new RerankFailed(`the re-ranking model could not be asked: ${why(err)}`);
      await new Promise((resolve) => setTimeout(resolve, wait));
      if (timeout.aborted) throw late();
    }
  }
  const usage = { inputTokens: answer.usage.inputTokens ?? 0, outputTokens: answer.usage.outputTokens ?? 0 };
  try {
    return { order: rankingOf(answer.text, texts.length), usage };
  } catch (err) {
    if (err instanceof RerankFailed) throw new RerankFailed(err.message, usage);
    throw err;
  }
}

/** How long to wait before trying a failed call again (its Retry-After, if any), or undefined when it will not pass. */
function retryDelay(err: unknown): number | undefined {
  if (!APICallError.isInstance(err) || !err.isRetryable) return undefined;
  const seconds = Number(err.responseHeaders?.['retry-after']);
  return Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : RETRY_DELAY_MS;
}

/** A failed call in the provider's words, with its status when it answered one. */
function why(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return APICallError.isInstance(err) && err.statusCode !== undefined ? `answered ${err.statusCode}: ${message}` : message;
}

/** The ranking in a model's answer: `{"ranking": [...]}` (in a code fence or not), numbers from 1, each once. */
function rankingOf(answer: string, count: number): number[] {
  const json = /\{[\s\S]*\}/.exec(answer)?.[0];
  let ranking: unknown;
  try {
    ranking = json && (JSON.parse(json) as { ranking?: unknown }).ranking;
  } catch {
    ranking = undefined;
  }
  if (!Array.isArray(ranking)) throw new RerankFailed('the re-ranking model did not answer a ranking');
  const order: number[] = [];
  for (const n of ranking) {
    if (!Number.isInteger(n) || n < 1 || n > count)
      throw new RerankFailed(`the re-ranking model answered ${JSON.stringify(n)}, not a passage's number`);
    if (!order.includes(n - 1)) order.push(n - 1);
  }
  return order;
}
