import { describe, expect, it } from 'vitest';
import { chunkDocument, extractDocument } from '../../src/knowledge/documents/index.js';
import { CORPUS_SYNONYMS, knowledgeCorpus } from '../helpers/knowledge-corpus.js';

const words = (text: string) => new Set(text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []);
const STOP_WORDS = new Set([
  'who',
  'is',
  'in',
  'of',
  'at',
  'the',
  'how',
  'long',
  'does',
  'much',
  'within',
  'many',
  'must',
  'be',
  'what',
  'a',
]);

describe('the knowledge test corpus', () => {
  const corpus = knowledgeCorpus({ documents: 500, seed: 38 });

  it('is the same for the same seed and differs for another', () => {
    expect(knowledgeCorpus({ documents: 500, seed: 38 })).toEqual(corpus);
    const other = knowledgeCorpus({ documents: 500, seed: 39 });
    expect(other.documents.map((document) => document.text)).not.toEqual(corpus.documents.map((document) => document.text));
  });

  it('holds 500 documents in plain text and Markdown (headings, tables) and at least 200 queries of both kinds', () => {
    expect(corpus.documents).toHaveLength(500);
    expect(new Set(corpus.documents.map((document) => document.id)).size).toBe(500);
    const types = corpus.documents.map((document) => document.mediaType);
    expect(types.filter((type) => type === 'text/plain').length).toBeGreaterThan(100);
    expect(types.filter((type) => type === 'text/markdown').length).toBeGreaterThan(100);
    expect(corpus.documents.filter((document) => document.text.includes('\n|---|')).length).toBeGreaterThan(100);
    expect(corpus.queries.length).toBeGreaterThanOrEqual(200);
    expect(corpus.queries.filter((query) => query.kind === 'paraphrase').length).toBeGreaterThanOrEqual(80);
    expect(corpus.queries.filter((query) => query.kind === 'lexical').length).toBeGreaterThanOrEqual(120);
  });

  it('every answer occurs in the document its query names', () => {
    const byId = new Map(corpus.documents.map((document) => [document.id, document]));
    for (const query of corpus.queries) expect(byId.get(query.documentId)?.text).toContain(query.answer);
  });

  it('a lexical query names a term only its document holds', () => {
    const documentsWith = new Map<string, number>();
    for (const document of corpus.documents)
      for (const word of words(document.text)) documentsWith.set(word, (documentsWith.get(word) ?? 0) + 1);
    const byId = new Map(corpus.documents.map((document) => [document.id, words(document.text)]));
    for (const query of corpus.queries.filter((q) => q.kind === 'lexical')) {
      const rare = [...words(query.query)].filter((word) => documentsWith.get(word) === 1);
      expect(rare.length, query.query).toBeGreaterThan(0);
      for (const word of rare) expect(byId.get(query.documentId)!.has(word)).toBe(true);
    }
  });

  it('a paraphrased query shares no content word with any document, yet its synonyms lead to exactly its own', () => {
    const documentWords = corpus.documents.map((document) => ({ id: document.id, words: words(document.text) }));
    const toDocumentWord = new Map(
      CORPUS_SYNONYMS.flatMap(([documentWord, ...others]) => others.map((other) => [other, documentWord] as const)),
    );
    for (const query of corpus.queries.filter((q) => q.kind === 'paraphrase')) {
      let text = query.query.toLowerCase();
      const content = [...words(text)].filter((word) => !STOP_WORDS.has(word));
      for (const word of content)
        expect(
          documentWords.some((document) => document.words.has(word)),
          `${word} in ${query.query}`,
        ).toBe(false);
      // Said the documents' way, the query's concepts pick out its document alone.
      for (const [other, documentWord] of toDocumentWord) text = text.replace(new RegExp(`\\b${other}\\b`), documentWord);
      const concepts = [...words(text)].filter((word) => !STOP_WORDS.has(word));
      const matches = documentWords.filter((document) => concepts.every((word) => document.words.has(word)));
      expect(matches.map((document) => document.id)).toEqual([query.documentId]);
    }
  });

  it('every document reads and chunks, and each answer lies whole within a chunk of its document', async () => {
    const limits = { maxTextChars: 100_000, maxUnpackedBytes: 1_000_000, maxPages: 10 };
    const chunksById = new Map<string, string[]>();
    for (const document of corpus.documents) {
      const extracted = await extractDocument({ bytes: new TextEncoder().encode(document.text), mediaType: document.mediaType }, limits);
      if (document.mediaType === 'text/markdown') expect(extracted.title).toBe(document.title);
      chunksById.set(
        document.id,
        chunkDocument(extracted, { maxChars: 200, overlapChars: 40 }).map((chunk) => chunk.text),
      );
    }
    for (const query of corpus.queries) expect(chunksById.get(query.documentId)!.some((chunk) => chunk.includes(query.answer))).toBe(true);
  });

  it('scales to 10,000 documents for the ingestion benchmark, still with unique names', () => {
    const large = knowledgeCorpus({ documents: 10_000, seed: 1 });
    expect(large.documents).toHaveLength(10_000);
    expect(new Set(large.documents.map((document) => document.title)).size).toBe(10_000);
    expect(() => knowledgeCorpus({ documents: 0, seed: 1 })).toThrow(RangeError);
  });
});
