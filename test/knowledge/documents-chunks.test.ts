import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { chunkDocument, type DocumentBlock, type ExtractedDocument } from '../../src/knowledge/documents/index.js';

const doc = (...blocks: DocumentBlock[]): ExtractedDocument => ({ title: null, blocks });
const heading = (level: number, text: string): DocumentBlock => ({ kind: 'heading', level, text });
const paragraph = (text: string): DocumentBlock => ({ kind: 'paragraph', text });
const table = (rows: string[]): DocumentBlock => ({ kind: 'table', text: rows.join('\n') });

describe('chunks follow the document structure', () => {
  it('a heading starts a chunk and opens its text; the heading path is set, outermost first', () => {
    const chunks = chunkDocument(
      doc(
        paragraph('Preamble.'),
        heading(1, 'Guide'),
        paragraph('Intro.'),
        heading(2, 'Install'),
        paragraph('Run it.'),
        heading(2, 'Use'),
        heading(3, 'Daily'),
        paragraph('Every day.'),
        heading(1, 'Appendix'),
        paragraph('Extra.'),
      ),
      { maxChars: 200, overlapChars: 0 },
    );
    expect(chunks).toEqual([
      { position: 0, text: 'Preamble.', headingPath: [] },
      { position: 1, text: 'Guide\n\nIntro.', headingPath: ['Guide'] },
      { position: 2, text: 'Install\n\nRun it.', headingPath: ['Guide', 'Install'] },
      // A heading with nothing under it before the next opens that next chunk with it.
      { position: 3, text: 'Use\nDaily\n\nEvery day.', headingPath: ['Guide', 'Use', 'Daily'] },
      { position: 4, text: 'Appendix\n\nExtra.', headingPath: ['Appendix'] },
    ]);
  });

  it('blocks accumulate up to maxChars; a block that fits an empty chunk moves whole to the next', () => {
    const a = 'a'.repeat(40);
    const b = 'b'.repeat(40);
    const c = 'c'.repeat(30);
    const chunks = chunkDocument(doc(paragraph(a), paragraph(b), paragraph(c)), { maxChars: 100, overlapChars: 0 });
    expect(chunks.map((chunk) => chunk.text)).toEqual([`${a}\n\n${b}`, c]);
  });

  it('a long paragraph splits at sentence ends, then spaces; never mid-word; every chunk within maxChars', () => {
    const sentences = Array.from({ length: 30 }, (_, index) => `Sentence number ${index} says something useful.`);
    const chunks = chunkDocument(doc(paragraph(sentences.join(' '))), { maxChars: 120, overlapChars: 0 });
    for (const chunk of chunks) {
      expect(chunk.text.length).toBeLessThanOrEqual(120);
      // Each chunk is whole sentences.
      expect(chunk.text).toMatch(/^Sentence number \d+ .*useful\.$/);
    }
    expect(chunks.map((chunk) => chunk.text).join(' ')).toBe(sentences.join(' '));

    const longSentence = Array.from({ length: 50 }, (_, index) => `word${index}`).join(' ');
    const byWords = chunkDocument(doc(paragraph(longSentence)), { maxChars: 40, overlapChars: 0 });
    expect(byWords.map((chunk) => chunk.text).join(' ')).toBe(longSentence);
    for (const chunk of byWords) expect(chunk.text.length).toBeLessThanOrEqual(40);
  });

  it('only a single word longer than maxChars is cut inside (and never between a surrogate pair)', () => {
    const chunks = chunkDocument(doc(paragraph(`short ${'x'.repeat(25)} end`)), { maxChars: 10, overlapChars: 0 });
    expect(chunks.map((chunk) => chunk.text)).toEqual(['short', 'xxxxxxxxxx', 'xxxxxxxxxx', 'xxxxx end']);
    const emoji = chunkDocument(doc(paragraph('😀'.repeat(5))), { maxChars: 3, overlapChars: 0 });
    expect(emoji.map((chunk) => chunk.text)).toEqual(['😀', '😀', '😀', '😀', '😀']);
  });

  it('lists and code split at line ends first', () => {
    const lines = Array.from({ length: 10 }, (_, index) => `- item ${index}`);
    const chunks = chunkDocument(doc({ kind: 'list', text: lines.join('\n') }), { maxChars: 30, overlapChars: 0 });
    expect(chunks.map((chunk) => chunk.text)).toEqual(
      [lines.slice(0, 3), lines.slice(3, 6), lines.slice(6, 9), lines.slice(9)].map((group) => group.join('\n')),
    );
  });

  it('a table that fits stays whole; a longer one splits by rows, its header at the top of every piece', () => {
    const rows = ['Name | Days', ...Array.from({ length: 12 }, (_, index) => `Region ${index} | ${index + 10}`)];
    const whole = chunkDocument(doc(paragraph('Before.'), table(rows.slice(0, 4))), { maxChars: 200, overlapChars: 0 });
    expect(whole.map((chunk) => chunk.text)).toEqual([`Before.\n\n${rows.slice(0, 4).join('\n')}`]);

    const split = chunkDocument(doc(heading(2, 'Rates'), table(rows)), { maxChars: 70, overlapChars: 10 });
    expect(split.length).toBeGreaterThan(2);
    const seen: string[] = [];
    for (const [index, chunk] of split.entries()) {
      expect(chunk.text.length).toBeLessThanOrEqual(70);
      expect(chunk.headingPath).toEqual(['Rates']);
      // No overlap before a table's repeated header: the header is the context.
      const lines = chunk.text.split('\n').filter(Boolean);
      if (index === 0) expect(lines.shift()).toBe('Rates');
      expect(lines[0]).toBe('Name | Days');
      seen.push(...lines.slice(1));
    }
    expect(seen).toEqual(rows.slice(1));
  });

  it('overlap repeats the end of the previous chunk (from a word boundary) within a section, never across a heading', () => {
    const first = 'Alpha beta gamma delta. Epsilon zeta eta theta.';
    const second = 'Iota kappa lambda mu. Nu xi omicron pi.';
    const chunks = chunkDocument(
      doc(heading(1, 'One'), paragraph(first), paragraph(second), heading(1, 'Two'), paragraph('Rho sigma tau.')),
      {
        maxChars: 70,
        overlapChars: 12,
      },
    );
    expect(chunks).toEqual([
      { position: 0, text: `One\n\n${first}`, headingPath: ['One'] },
      { position: 1, text: `eta theta.\n${second}`, headingPath: ['One'] },
      { position: 2, text: 'Two\n\nRho sigma tau.', headingPath: ['Two'] },
    ]);
  });

  it('headings with nothing under them at the end still make a chunk; an empty document makes none', () => {
    expect(chunkDocument(doc(paragraph('Body.'), heading(2, 'Trailing')), { maxChars: 100, overlapChars: 0 })).toEqual([
      { position: 0, text: 'Body.', headingPath: [] },
      { position: 1, text: 'Trailing', headingPath: ['Trailing'] },
    ]);
    expect(chunkDocument(doc(), { maxChars: 100, overlapChars: 0 })).toEqual([]);
  });

  it('options out of range are a programming error, not a silent clamp', () => {
    expect(() => chunkDocument(doc(paragraph('x')), { maxChars: 0, overlapChars: 0 })).toThrow(RangeError);
    expect(() => chunkDocument(doc(paragraph('x')), { maxChars: 100, overlapChars: 60 })).toThrow(RangeError);
    expect(() => chunkDocument(doc(paragraph('x')), { maxChars: 100, overlapChars: -1 })).toThrow(RangeError);
  });

  it('a 10 MB paragraph without a sentence end chunks in one pass', () => {
    const chunks = chunkDocument(doc(paragraph('word '.repeat(2_000_000).trim())), { maxChars: 1000, overlapChars: 100 });
    expect(chunks.length).toBeGreaterThan(10_000);
    expect(chunks.every((chunk, index) => chunk.position === index && chunk.text.length <= 1000)).toBe(true);
  });
});

describe('for any document', () => {
  const word = fc.stringMatching(/^[a-z]{1,14}$/);
  const sentence = fc.array(word, { minLength: 1, maxLength: 30 }).map((words) => `${words.join(' ')}.`);
  const block: fc.Arbitrary<DocumentBlock> = fc.oneof(
    fc.record({ kind: fc.constant('heading' as const), level: fc.integer({ min: 1, max: 4 }), text: word }),
    fc.array(sentence, { minLength: 1, maxLength: 12 }).map((sentences) => ({ kind: 'paragraph' as const, text: sentences.join(' ') })),
    fc.array(fc.array(word, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 15 }).map((lines) => ({
      kind: 'list' as const,
      text: lines.map((line) => `- ${line.join(' ')}`).join('\n'),
    })),
    fc
      .array(fc.tuple(word, word), { minLength: 2, maxLength: 20 })
      .map((rows) => ({ kind: 'table' as const, text: rows.map((row) => row.join(' | ')).join('\n') })),
  );
  const options = fc
    .integer({ min: 40, max: 400 })
    .chain((maxChars) =>
      fc.record({ maxChars: fc.constant(maxChars), overlapChars: fc.integer({ min: 0, max: Math.floor(maxChars / 2) }) }),
    );

  it('chunks fit maxChars, are numbered in order, keep every word in order, and come out the same twice', () => {
    fc.assert(
      fc.property(fc.array(block, { maxLength: 30 }), options, (blocks, chunkOptions) => {
        const chunks = chunkDocument(doc(...blocks), chunkOptions);
        expect(chunkDocument(doc(...blocks), chunkOptions)).toEqual(chunks);
        for (const [index, chunk] of chunks.entries()) {
          expect(chunk.position).toBe(index);
          expect(chunk.text.length).toBeLessThanOrEqual(chunkOptions.maxChars);
          expect(chunk.text.trim()).not.toBe('');
        }
        // Every word of the document appears in the chunks in reading order (overlap and repeated
        // headers only add words, so the document's words are a subsequence of the chunks' words).
        const words = (text: string) => text.split(/[\s|.-]+/).filter(Boolean);
        const expected = blocks.flatMap((b) => words(b.text));
        const actual = chunks.flatMap((chunk) => words(chunk.text));
        let at = 0;
        for (const token of actual) if (token === expected[at]) at++;
        expect(at).toBe(expected.length);
      }),
      { seed: 38, numRuns: 300 },
    );
  });

  it('with chunks smaller than a word, every chunk still fits and holds text', () => {
    const small = fc
      .integer({ min: 1, max: 30 })
      .chain((maxChars) =>
        fc.record({ maxChars: fc.constant(maxChars), overlapChars: fc.integer({ min: 0, max: Math.floor(maxChars / 2) }) }),
      );
    fc.assert(
      fc.property(fc.array(block, { maxLength: 20 }), small, (blocks, chunkOptions) => {
        for (const [index, chunk] of chunkDocument(doc(...blocks), chunkOptions).entries()) {
          expect(chunk.position).toBe(index);
          expect(chunk.text.length).toBeLessThanOrEqual(chunkOptions.maxChars);
          expect(chunk.text.trim()).not.toBe('');
        }
      }),
      { seed: 38, numRuns: 300 },
    );
  });
});
