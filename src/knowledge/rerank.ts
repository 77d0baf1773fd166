import type { LanguageModelV3 } from '@ai-sdk/provider';
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

/** How long the model may take to answer; past it the search answers in the fused order. */
const RERANK_TIMEOUT_MS = 30_000;
/** Characters of each candidate shown to the model. */
const PASSAGE_CHARS = 1_000;

const SYSTEM = [
  'You rank passages by how well they answer a search query.',
  'Answer with JSON only, no other text: {"ranking": [the numbers of the passages, most relevant first]}.',
  'Leave out passages that do not help answer the query.',
].join(' ');

/** Why a re-ranking was not used: the passages stay in the fused order. */
export class RerankFailed extends Error {}

/**
 * The candidates' indexes (into `texts`) in the model's order, best first; those it left out are not
 * in the answer. Throws RerankFailed when the model cannot be asked, or its answer is not a ranking.
 */
export async function rerankOrder(model: LanguageModelV3, query: string, texts: readonly string[]): Promise<number[]> {
  const passages = texts.map((text, i) => `[${i + 1}] ${text.slice(0, PASSAGE_CHARS).replace(/\s+/g, ' ')}`).join('\n\n');
  let answer: string;
  try {
    ({ text: answer } = await generateText({
      model,
      system: SYSTEM,
      prompt: `Query: ${query}\n\nPassages:\n${passages}`,
      temperature: 0,
      maxRetries: 1,
      abortSignal: AbortSignal.timeout(RERANK_TIMEOUT_MS),
    }));
  } catch (err) {
    throw new RerankFailed(`the re-ranking model could not be asked: ${err instanceof Error ? err.message : String(err)}`);
  }
  return rankingOf(answer, texts.length);
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
