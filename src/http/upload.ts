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
  try {
    return { filename: part.filename, mimetype: part.mimetype, data: await part.toBuffer() };
  } catch (err) {
    if ((err as { code?: string }).code === 'FST_REQ_FILE_TOO_LARGE') {
      throw new ProblemError(413, 'payload_too_large', `${what} are limited to ${maxBytes} bytes`);
    }
    throw err;
  }
}
