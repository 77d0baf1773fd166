import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import type { EmbeddingModelV3 } from '@ai-sdk/provider';
import type { ProviderSettings } from '../runtime/models/registry.js';
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from '../runtime/models/retries.js';

/**
 * Embeddings of chunks and queries (docs/knowledge.md, "Embeddings"). `builtin/hash-embedding` is the
 * offline default: hashed words and character trigrams, deterministic, no network. It is a baseline
 * that matches shared words and spellings, not meaning; provider models (OpenAI, OpenAI-compatible
 * servers) embed meaning, configured per knowledge base.
 */

export const HASH_EMBEDDING_MODEL = 'builtin/hash-embedding';
const HASH_DIMENSIONS = 384;

/** Why an embedding call failed, and whether trying again later may help (timeouts, 429s, 5xx). */
export class EmbeddingError extends Error {
  constructor(
    message: string,
    readonly retryable: boolean,
  ) {
    super(message);
    this.name = 'EmbeddingError';
  }
}

export interface Embedder {
  model: string;
  /** Texts at most per call. */
  batchSize: number;
  /** How a call that timed out or was refused for now (429, 5xx) is tried again: its provider's policy (MODEL_RETRY_*). */
  retry: RetryPolicy;
  /** One L2-normalised vector per text, in order. */
  embed(texts: string[], signal: AbortSignal): Promise<Embedded>;
}

/**
 * A call's vectors and the input tokens the provider says it spent (usage.prompt_tokens; 0 when it
 * says nothing); null for the built-in embedding, which calls no provider and is not counted in usage.
 */
export interface Embedded {
  vectors: Float32Array[];
  tokens: number | null;
}

/** FNV-1a, 32 bits: the feature's bucket and (its top bit) its sign. */
function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

const WORD = /[\p{L}\p{N}]+/gu;

/** Lower-cased words of a text (letters and digits), the unit both the hash embedding and lexical queries use. */
export function wordsOf(text: string): string[] {
  return text.toLowerCase().match(WORD) ?? [];
}

function normalise(v: Float32Array): Float32Array {
  let sum = 0;
  for (const x of v) sum += x * x;
  const norm = Math.sqrt(sum);
  if (norm > 0) for (let i = 0; i < v.length; i++) v[i] /= norm;
  return v;
}

/**
 * The hash embedding of a text: each word, and each character trigram of each word padded with `#`,
 * adds ±1 (words) or ±0.5 (trigrams) to a bucket chosen by its hash; the sum is L2-normalised, so
 * cosine similarity counts shared words first and similar spellings (plural, tense) second.
 */
function hashEmbedding(text: string): Float32Array {
  const v = new Float32Array(HASH_DIMENSIONS);
  const add = (feature: string, weight: number) => {
    const h = fnv1a(feature);
    v[h % HASH_DIMENSIONS] += h & 0x80000000 ? -weight : weight;
  };
  for (const word of wordsOf(text)) {
    // Words that say nothing of a text's subject would pull every question towards every other.
    if (STOP_WORDS.has(word)) continue;
    add(`w:${word}`, 1);
    const padded = `#${word}#`;
    for (let i = 0; i + 3 <= padded.length; i++) add(`t:${padded.slice(i, i + 3)}`, 0.5);
  }
  return normalise(v);
}

/** English function words: left out of the hash embedding, and of lexical search's query (search.ts). */
export const STOP_WORDS: ReadonlySet<string> = new Set(
  (
    'a an and are as at be but by can did do does for from had has have how i if in into is it its me my no not of on or our ' +
    'she so than that the their them then there these they this to too was we were what when where which who why will with ' +
    'would you your he him his her hers about after all also am any been before being both each few more most must other ' +
    'over same should some such through under until up very while'
  ).split(' '),
);

const hashEmbedder: Embedder = {
  model: HASH_EMBEDDING_MODEL,
  batchSize: 256,
  retry: { maxAttempts: 1, baseMs: 0, maxDelayMs: 0 },
  embed: async (texts) => ({ vectors: texts.map(hashEmbedding), tokens: null }),
};

/** How long one provider embedding call may take before it counts as a (retryable) timeout. */
const EMBED_TIMEOUT_MS = 60_000;

/** The embedding models a knowledge base may name: the built-in one, and those of the configured providers. */
export class Embeddings {
  private readonly built = new Map<string, Embedder>();

  constructor(private readonly settings: ProviderSettings) {}

  /** Why `model` cannot embed with this configuration, or undefined. */
  unavailable(model: string): string | undefined {
    try {
      this.embedder(model);
      return undefined;
    } catch (err) {
      if (err instanceof EmbeddingError) return err.message;
      throw err;
    }
  }

  embedder(model: string): Embedder {
    if (model === HASH_EMBEDDING_MODEL) return hashEmbedder;
    const cached = this.built.get(model);
    if (cached) return cached;
    const embedder = this.build(model);
    if (this.built.size >= 64) this.built.delete(this.built.keys().next().value!);
    this.built.set(model, embedder);
    return embedder;
  }

  private build(model: string): Embedder {
    const slash = model.indexOf('/');
    const provider = slash > 0 ? model.slice(0, slash) : '';
    const name = model.slice(slash + 1);
    if (!name || /\s/.test(model)) throw new EmbeddingError(`must be ${HASH_EMBEDDING_MODEL} or provider/model-name`, false);
    let embedding: EmbeddingModelV3;
    let retry: RetryPolicy | undefined;
    if (provider === 'openai') {
      const { apiKey, baseUrl } = this.settings.openai;
      retry = this.settings.openai.retry;
      if (!apiKey && !baseUrl)
        throw new EmbeddingError('openai/* needs OPENAI_API_KEY (or OPENAI_BASE_URL) in the server configuration', false);
      embedding = createOpenAI({ apiKey: apiKey ?? 'unset', baseURL: baseUrl }).embedding(name);
    } else if (provider === 'openai-compatible') {
      const { apiKey, baseUrl } = this.settings.openaiCompatible;
      retry = this.settings.openaiCompatible.retry;
      if (!baseUrl) throw new EmbeddingError('openai-compatible/* needs OPENAI_COMPATIBLE_BASE_URL in the server configuration', false);
      embedding = createOpenAICompatible({ name: 'openai-compatible', baseURL: baseUrl, apiKey }).embeddingModel(name);
    } else {
      throw new EmbeddingError(
        `names no embedding model; known: ${HASH_EMBEDDING_MODEL}, openai/<model>, openai-compatible/<model>`,
        false,
      );
    }
    return {
      model,
      batchSize: 64,
      retry: retry ?? DEFAULT_RETRY_POLICY,
      async embed(texts, signal) {
        let result: Awaited<ReturnType<EmbeddingModelV3['doEmbed']>>;
        try {
          result = await embedding.doEmbed({
            values: texts,
            abortSignal: AbortSignal.any([signal, AbortSignal.timeout(EMBED_TIMEOUT_MS)]),
          });
        } catch (err) {
          if (signal.aborted) throw err;
          throw providerError(model, err);
        }
        if (result.embeddings.length !== texts.length) {
          throw new EmbeddingError(`${model} answered ${result.embeddings.length} embeddings for ${texts.length} texts`, false);
        }
        return { vectors: result.embeddings.map((e) => normalise(Float32Array.from(e))), tokens: result.usage?.tokens ?? 0 };
      },
    };
  }
}

/** A provider's failure as an EmbeddingError: timeouts, 408, 429 and 5xx may pass; other refusals will not. */
function providerError(model: string, err: unknown): EmbeddingError {
  const e = err as { name?: string; statusCode?: number; message?: string };
  const status = e.statusCode;
  if (e.name === 'TimeoutError' || e.name === 'AbortError') return new EmbeddingError(`${model} did not answer in time`, true);
  if (status === undefined) return new EmbeddingError(`${model} could not be reached: ${e.message ?? 'unknown error'}`, true);
  const retryable = status === 408 || status === 429 || status >= 500;
  return new EmbeddingError(`${model} answered ${status}: ${(e.message ?? '').slice(0, 300)}`, retryable);
}

/** A vector as stored: float32 little-endian (the platforms Node runs on are little-endian). */
export const vectorBytes = (v: Float32Array): Buffer => Buffer.from(v.buffer, v.byteOffset, v.byteLength);

/** A stored vector read back (copied: a driver's Buffer may not be 4-byte aligned). */
export function vectorOf(bytes: Uint8Array): Float32Array {
  const copy = new Uint8Array(bytes.byteLength);
  copy.set(bytes);
  return new Float32Array(copy.buffer);
}

export function dot(a: Float32Array, b: Float32Array): number {
  const n = Math.min(a.length, b.length);
  let s = 0;
  for (let i = 0; i < n; i++) s += a[i] * b[i];
  return s;
}

/**
 * A vector's int8 sketch, SQLite's first pass of vector search: each component times 127, rounded
 * (vectors are L2-normalised, so each is within ±1). A quarter of the bytes, and zeros stay zeros.
 */
export function int8Sketch(v: Float32Array): Buffer {
  const out = Buffer.alloc(v.length);
  for (let i = 0; i < v.length; i++) out.writeInt8(Math.max(-127, Math.min(127, Math.round(v[i] * 127))), i);
  return out;
}

/**
 * The int8 sketch offset by 128, as PostgreSQL's get_byte reads a byte (0..255): its first pass for a
 * word-sparse query weighs only the query's own components (sparseWeights).
 */
export function uint8Sketch(v: Float32Array): Buffer {
  const out = int8Sketch(v);
  for (let i = 0; i < out.length; i++) out[i] = (out.readInt8(i) + 128) & 0xff;
  return out;
}

/** A query's non-zero components as integer weights (its largest ±127), or null past `max` of them (a dense query). */
export function sparseWeights(q: Float32Array, max: number): { dimension: number; weight: number }[] | null {
  const largest = Math.max(0, ...Array.from(q, Math.abs));
  if (largest === 0) return [];
  const scale = 127 / largest;
  const weights: { dimension: number; weight: number }[] = [];
  for (let i = 0; i < q.length; i++) {
    const weight = Math.round(q[i] * scale);
    if (weight === 0) continue;
    if (weights.length === max) return null;
    weights.push({ dimension: i, weight });
  }
  return weights;
}

/**
 * A vector as bits, PostgreSQL's first pass of vector search for a dense query: per component, a level from -2 to 2
 * (its sign, and whether it is strong: beyond the root mean square of the vector's non-zero
 * components) written as four bit strings: positive, strongly positive, negative, strongly negative.
 * Zeros (a word-sparse vector has many) are in none.
 */
export function levelBits(v: Float32Array): string {
  const strong = strongThreshold(v);
  const bits = ['', '', '', ''];
  for (const x of v) {
    bits[0] += x > 0 ? '1' : '0';
    bits[1] += x > strong ? '1' : '0';
    bits[2] += x < 0 ? '1' : '0';
    bits[3] += x < -strong ? '1' : '0';
  }
  return bits.join('');
}

/**
 * A query's masks against levelBits: summed over the query's two levels (any; strong), the bits a
 * chunk's have in `agree` less those in `oppose` is the dot product of the two vectors' levels.
 */
export function levelMasks(q: Float32Array): { agree: [string, string]; oppose: [string, string] } {
  const strong = strongThreshold(q);
  const side = (keep: (x: number) => boolean) => Array.from(q, (x) => (keep(x) ? '1' : '0')).join('');
  const level = (threshold: number) => {
    const positive = side((x) => x > threshold);
    const negative = side((x) => x < -threshold);
    return { agree: positive + positive + negative + negative, oppose: negative + negative + positive + positive };
  };
  const [any, strongOnes] = [level(0), level(strong)];
  return { agree: [any.agree, strongOnes.agree], oppose: [any.oppose, strongOnes.oppose] };
}

/** The root mean square of a vector's non-zero components. */
function strongThreshold(v: Float32Array): number {
  let sum = 0;
  let n = 0;
  for (const x of v) {
    if (x !== 0) {
      sum += x * x;
      n++;
    }
  }
  return n ? Math.sqrt(sum / n) : 0;
}
