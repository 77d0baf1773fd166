import type { Client } from 'openapi-fetch';
import type { paths } from '../../packages/client/src/generated/openapi.js';

/**
 * POST /api/v1/files through the typed client: one file as multipart/form-data. The generated type has
 * the file part as a string (the schema's binary format); the form sent carries the bytes themselves.
 */
export function uploadFile(api: Client<paths>, fileName: string, data: Buffer | string, contentType = 'application/octet-stream') {
  const form = new FormData();
  form.append('file', new Blob([typeof data === 'string' ? data : new Uint8Array(data)], { type: contentType }), fileName);
  return api.POST('/api/v1/files', { body: { file: fileName }, bodySerializer: () => form });
}
