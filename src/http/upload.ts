import type { FastifyRequest } from 'fastify';
import { ProblemError, badRequest } from './errors.js';

/**
 * The one file of a multipart/form-data request, read into memory: 415 when the request is not
 * multipart, 400 when the form holds no file, 413 beyond `maxBytes` (the limit the route registered
 * @fastify/multipart with).
 */
export async function readUploadedFile(req: FastifyRequest, maxBytes: number, what = 'files') {
  if (!req.isMultipart()) throw new ProblemError(415, 'unsupported_media_type', 'upload the file as multipart/form-data');
  const part = await req.file();
  if (!part) throw badRequest('the form holds no file', [{ path: 'body.file', message: 'is required' }]);
  const tooLarge = () => new ProblemError(413, 'payload_too_large', `${what} are limited to ${maxBytes} bytes`);
  let data: Buffer;
  try {
    data = await part.toBuffer();
  } catch (err) {
    if ((err as { code?: string }).code === 'FST_REQ_FILE_TOO_LARGE') throw tooLarge();
    throw err;
  }
  // toBuffer() does not throw when the limit is reached with the last chunk: the stream says so.
  if (part.file.truncated) throw tooLarge();
  return { filename: formDataName(part.filename), mimetype: part.mimetype, data };
}

/**
 * A file name as the client meant it: browsers and curl send `"`, CR and LF in a multipart file name
 * as %22, %0D and %0A (HTML's multipart/form-data encoding), which busboy leaves as they are.
 */
function formDataName(name: string): string {
  return name.replace(/%(22|0D|0A)/gi, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}
