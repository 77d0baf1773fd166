import { Worker } from 'node:worker_threads';
import { type ChunkOptions, type DocumentChunk, DocumentError, type DocumentErrorCode, type ExtractLimits } from './types.js';

/**
 * Documents are read in a worker thread, one at a time per reader: reading is synchronous CPU work
 * (HTML about a second per megabyte, docs/knowledge.md) that would otherwise stall every request of the
 * server, and a document that makes the reader use too much memory or time costs that thread, not the
 * process: it is ended, the document fails with the reason, and the next document gets a new thread.
 */

export interface ReadRequest {
  input: { bytes: Uint8Array; mediaType: string; filename?: string };
  limits: ExtractLimits;
  chunking: ChunkOptions;
}

export type ReadResponse =
  | { ok: true; title: string | null; chunks: DocumentChunk[] }
  | { ok: false; code: DocumentErrorCode; message: string };

export interface ReaderLimits {
  /** A document whose reading takes longer fails (`document_too_large`) and its thread is ended. */
  timeoutMs: number;
  /** The thread's heap; a document that needs more fails (`document_too_large`). */
  memoryMb: number;
}

/**
 * The worker's module: the built one beside this file, or, from the sources (the tests run them), the
 * build's copy (`npm test` builds first).
 */
const WORKER_URL = import.meta.url.endsWith('.ts')
  ? new URL('../../../dist/knowledge/documents/reader-worker.js', import.meta.url)
  : new URL('./reader-worker.js', import.meta.url);

export class DocumentReader {
  private worker: Worker | undefined;
  /** One document at a time per thread: a read waits for the one before it. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly limits: ReaderLimits) {}

  read(request: ReadRequest): Promise<{ title: string | null; chunks: DocumentChunk[] }> {
    const result = this.queue.then(() => this.readNow(request));
    this.queue = result.catch(() => {});
    return result;
  }

  private readNow(request: ReadRequest): Promise<{ title: string | null; chunks: DocumentChunk[] }> {
    const worker = this.thread();
    return new Promise((resolve, reject) => {
      const settle = (outcome: () => void) => {
        clearTimeout(timer);
        worker.off('message', onMessage);
        worker.off('error', onError);
        worker.off('exit', onExit);
        worker.unref();
        outcome();
      };
      const end = (code: DocumentErrorCode, message: string) => {
        // The thread is spent: the next document gets a new one.
        if (this.worker === worker) this.worker = undefined;
        void worker.terminate();
        settle(() => reject(new DocumentError(code, message)));
      };
      const onMessage = (response: ReadResponse) =>
        settle(() =>
          response.ok
            ? resolve({ title: response.title, chunks: response.chunks })
            : reject(new DocumentError(response.code, response.message)),
        );
      const onError = (err: Error & { code?: string }) =>
        err.code === 'ERR_WORKER_OUT_OF_MEMORY'
          ? end('document_too_large', `reading the document needed more than ${this.limits.memoryMb} MB of memory`)
          : end('malformed_document', `the document could not be read: ${err.message}`);
      const onExit = () => end('malformed_document', 'the document reader stopped while reading it');
      const timer = setTimeout(
        () => end('document_too_large', `reading the document took longer than ${this.limits.timeoutMs / 1000} s`),
        this.limits.timeoutMs,
      );
      worker.on('message', onMessage);
      worker.on('error', onError);
      worker.on('exit', onExit);
      // While a document is read the thread keeps the process alive; idle, it does not.
      worker.ref();
      worker.postMessage(request);
    });
  }

  private thread(): Worker {
    this.worker ??= new Worker(WORKER_URL, { resourceLimits: { maxOldGenerationSizeMb: this.limits.memoryMb } });
    return this.worker;
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    await worker?.terminate();
  }
}
