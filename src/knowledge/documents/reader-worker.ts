import { parentPort } from 'node:worker_threads';
import { chunkDocument, DocumentError, extractDocument } from './index.js';
import type { ReadRequest, ReadResponse } from './reader.js';

/**
 * The document reader's thread (reader.ts): reads one document at a time into chunks, off the server's
 * event loop. Errors other than a DocumentError are the reader's own faults, told as such.
 */
parentPort?.on('message', async (request: ReadRequest) => {
  let response: ReadResponse;
  try {
    const extracted = await extractDocument(request.input, request.limits);
    response = { ok: true, title: extracted.title, chunks: chunkDocument(extracted, request.chunking) };
  } catch (err) {
    response =
      err instanceof DocumentError
        ? { ok: false, code: err.code, message: err.message }
        : { ok: false, code: 'malformed_document', message: `the document could not be read: ${(err as Error)?.message ?? String(err)}` };
  }
  parentPort?.postMessage(response);
});
