import type { FastifyRequest } from 'fastify';
import { ProblemError, badRequest } from './errors.js';

/**
 * The one file of a multipart/form-data request, read into memory: 415 when the request is not
 * multipart, 400 when the form holds no file or is malformed (no boundary, cut short), 413 beyond
 * `maxBytes` (the limit the route registered @fastify/multipart with).
 */
export async function readUploadedFile(req: FastifyRequest, maxBytes: number, what = 'files') {
  if (!req.isMultipart()) throw new ProblemError(415, 'unsupported_media_type', 'upload the file as multipart/form-data');
  checkBoundary(String(req.headers['content-type']));
  const part = await req.file().catch(malformed);
  if (!part) throw badRequest('the form holds no file', [{ path: 'body.file', message: 'is required' }]);
  const tooLarge = () => new ProblemError(413, 'payload_too_large', `${what} are limited to ${maxBytes} bytes`);
  let data: Buffer;
  try {
    data = await part.toBuffer();
  } catch (err) {
    if ((err as { code?: string }).code === 'FST_REQ_FILE_TOO_LARGE') throw tooLarge();
    malformed(err);
  }
  // toBuffer() does not throw when the limit is reached with the last chunk: the stream says so.
  if (part.file.truncated) throw tooLarge();
  return { filename: formDataName(part.filename), mimetype: part.mimetype, data };
}

/** RFC 2046 5.1.1: a boundary is 1 to 70 characters; without one the parts cannot be found at all. */
function checkBoundary(contentType: string) {
  const boundary = /;\s*boundary\s*=\s*(?:"([^"]*)"|([^;\s]*))/i.exec(contentType);
  const value = boundary?.[1] ?? boundary?.[2] ?? '';
  if (value.length < 1 || value.length > 70) {
    throw badRequest(
      'a multipart/form-data body needs a boundary of 1 to 70 characters in its Content-Type (multipart/form-data; boundary=...)',
      [{ path: 'headers.content-type', message: 'must name the boundary of the parts' }],
      'invalid_multipart',
    );
  }
}

/**
 * The multipart parser's (busboy's) errors carry no status: a body cut short, or one that does not
 * use the boundary its Content-Type names, is the client's malformed body. The plugin's own errors
 * keep their status (its limits are 413s).
 */
function malformed(err: unknown): never {
  const status = (err as { statusCode?: number }).statusCode;
  if (err instanceof ProblemError || (status !== undefined && status !== 400)) throw err;
  throw badRequest(
    'the multipart/form-data body ended before its parts did: it is cut short, or does not use the boundary its Content-Type names',
    [{ path: 'body', message: 'is not complete multipart/form-data' }],
    'invalid_multipart',
  );
}

/**
 * A file name as the client meant it: browsers and curl send `"`, CR and LF in a multipart file name
 * as %22, %0D and %0A (HTML's multipart/form-data encoding), which busboy leaves as they are.
 */
function formDataName(name: string): string {
  return name.replace(/%(22|0D|0A)/gi, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}
