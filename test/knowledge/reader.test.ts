import { afterAll, describe, expect, test } from 'vitest';
import { DocumentError } from '../../src/knowledge/documents/index.js';
import { DocumentReader, type ReadRequest } from '../../src/knowledge/documents/reader.js';

/**
 * The document reader's thread (src/knowledge/documents/reader.ts): documents are read off the event
 * loop, and one that takes too long or needs too much memory ends its thread, not the process; the
 * next document gets a new thread.
 */

const readers: DocumentReader[] = [];
const reader = (limits: { timeoutMs: number; memoryMb: number }) => {
  const made = new DocumentReader(limits);
  readers.push(made);
  return made;
};
afterAll(async () => {
  for (const r of readers) await r.close();
});

const request = (mediaType: string, text: string): ReadRequest => ({
  input: { bytes: new TextEncoder().encode(text), mediaType },
  limits: { maxTextChars: 20_000_000, maxUnpackedBytes: 64 * 1024 * 1024, maxPages: 100 },
  chunking: { maxChars: 1200, overlapChars: 100 },
});
const refusal = (promise: Promise<unknown>) =>
  promise.then(
    () => null,
    (err: unknown) => err,
  );

describe('the document reader', () => {
  test('reads a document into chunks in its thread, and goes on reading the next', async () => {
    const r = reader({ timeoutMs: 60_000, memoryMb: 256 });
    const first = await r.read(request('text/markdown', '# Warranty\n\nThe Zelbrin warranty lasts 37 months.\n'));
    expect(first.chunks).toEqual([{ position: 0, text: 'Warranty\n\nThe Zelbrin warranty lasts 37 months.', headingPath: ['Warranty'] }]);
    const second = await r.read(request('text/plain', 'Second document.'));
    expect(second.chunks.map((c) => c.text)).toEqual(['Second document.']);
    // What the readers refuse comes back as their DocumentError.
    const refused = await refusal(r.read(request('application/x-unknown', 'x')));
    expect(refused).toBeInstanceOf(DocumentError);
    expect((refused as DocumentError).code).toBe('unsupported_media_type');
  });

  test('a document read for longer than the limit fails (document_too_large), its thread ended', async () => {
    // No thread starts and reads within a millisecond: this read always runs out of time.
    const r = reader({ timeoutMs: 1, memoryMb: 256 });
    const refused = await refusal(r.read(request('text/plain', 'slow')));
    expect(refused).toBeInstanceOf(DocumentError);
    expect(refused).toMatchObject({ code: 'document_too_large', message: 'reading the document took longer than 0.001 s' });
  });

  test('a document that needs more memory than the thread has fails (document_too_large), the process unharmed', async () => {
    const r = reader({ timeoutMs: 120_000, memoryMb: 32 });
    const page = `<html><body><main>${'<p>Many small paragraphs of a page far larger than its reader may hold.</p>'.repeat(60_000)}</main></body></html>`;
    const refused = await refusal(r.read(request('text/html', page)));
    expect(refused).toMatchObject({ code: 'document_too_large', message: 'reading the document needed more than 32 MB of memory' });
    // The same reader reads the next document in a new thread.
    expect((await r.read(request('text/plain', 'after the fall'))).chunks.map((c) => c.text)).toEqual(['after the fall']);
  });
});
