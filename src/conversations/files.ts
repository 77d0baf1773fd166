import path from 'node:path';
import multipart from '@fastify/multipart';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { create as createContentDisposition } from 'content-disposition';
import type { Db } from '../db/database.js';
import { InvalidInput, NotFound } from '../errors.js';
import { readUploadedFile } from '../http/upload.js';
import { IdParams, Timestamp, problems } from '../http/schemas.js';
import { newId, now } from '../ids.js';
import { recordAudit } from '../tenancy/audit.js';
import type { Principal } from '../tenancy/permissions.js';
import * as store from './store.js';

/** Attachments: files uploaded once, referenced by id from messages. Stored in the database. */

const MAX_FILE_BYTES = 5 * 1024 * 1024;
/** How much of a text attachment the model sees. */
const MODEL_TEXT_LIMIT = 100_000;

const TEXT_TYPES = /^(text\/|application\/(json|xml|yaml|x-yaml|csv|javascript|x-ndjson)|application\/[\w.+-]+\+(json|xml))/i;

const FileView = Type.Object({
  id: Type.String(),
  name: Type.String(),
  contentType: Type.String(),
  size: Type.Integer({ description: 'bytes' }),
  createdAt: Timestamp,
});

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it removes
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f]/g;

/** A safe display name: the last path segment, without control characters, at most 255 characters. */
function cleanFileName(raw: string): string {
  const base = path.posix.basename(raw.replace(/\\/g, '/'));
  const cleaned = base.replace(CONTROL_CHARACTERS, '').trim().slice(0, 255);
  return cleaned && cleaned !== '.' && cleaned !== '..' ? cleaned : 'file';
}

/**
 * `Content-Disposition: attachment` naming the file (RFC 6266): a name that is not plain ASCII goes in
 * `filename*` (RFC 8187, UTF-8, percent-encoded), after an ASCII `filename` for older clients: accents
 * dropped, other characters `_`.
 */
function attachmentDisposition(name: string): string {
  const ascii = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/[^\x20-\x7e]/gu, '_');
  return createContentDisposition(name, { type: 'attachment', fallback: ascii });
}

export class FilesService {
  constructor(private readonly db: Db) {}

  async upload(principal: Principal, name: string, contentType: string, data: Buffer) {
    const row = {
      id: newId(),
      tenant_id: principal.tenantId,
      name: cleanFileName(name),
      content_type: contentType.slice(0, 200) || 'application/octet-stream',
      size: data.length,
      data: data.toString('base64'),
      created_by: principal.actor.id,
      created_at: now(),
    };
    await this.db.kysely.transaction().execute(async (trx) => {
      await store.insertFile(trx, row);
      await recordAudit(trx, {
        tenantId: principal.tenantId,
        actor: principal.actor,
        action: 'file.uploaded',
        resourceType: 'file',
        resourceId: row.id,
        detail: { name: row.name, size: row.size },
      });
    });
    return { id: row.id, name: row.name, contentType: row.content_type, size: row.size, createdAt: row.created_at };
  }

  async get(tenantId: string, id: string) {
    const row = await store.findFile(this.db.kysely, tenantId, id);
    if (!row) throw new NotFound('file');
    return row;
  }

  /**
   * Deletes the file. Messages that name it keep its id (their text already went to the model); its
   * metadata and content then answer 404, as after the tenant's retention removed it.
   */
  async delete(principal: Principal, id: string) {
    await this.db.kysely.transaction().execute(async (trx) => {
      const row = await store.deleteFile(trx, principal.tenantId, id);
      if (!row) throw new NotFound('file');
      await recordAudit(trx, {
        tenantId: principal.tenantId,
        actor: principal.actor,
        action: 'file.deleted',
        resourceType: 'file',
        resourceId: id,
        detail: { name: row.name, size: row.size },
      });
    });
  }

  /** What the model sees of the attachments: text files inline, other files by name and type only. */
  async modelContext(tenantId: string, ids: string[]): Promise<string> {
    const unique = [...new Set(ids)];
    const rows = await store.findFiles(this.db.kysely, tenantId, unique);
    const byId = new Map(rows.map((r) => [r.id, r]));
    const missing = ids.map((id, i) => ({ id, i })).filter((x) => !byId.has(x.id));
    if (missing.length) {
      throw new InvalidInput(
        `attachments.${missing[0].i} names no file of this tenant`,
        missing.map((m) => ({ path: `body.attachments.${m.i}`, message: 'names no file of this tenant' })),
      );
    }
    return unique
      .map((id) => {
        const f = byId.get(id)!;
        if (!TEXT_TYPES.test(f.content_type))
          return `[Attachment ${f.name} (${f.content_type}, ${f.size} bytes): binary content not shown]`;
        let text = Buffer.from(f.data, 'base64').toString('utf8');
        if (text.length > MODEL_TEXT_LIMIT) text = `${text.slice(0, MODEL_TEXT_LIMIT)}\n[... truncated]`;
        return `[Attachment ${f.name}]\n${text}`;
      })
      .join('\n\n');
  }
}

export const filesRoutes: FastifyPluginAsyncTypebox<{ files: FilesService }> = async (app, { files }) => {
  await app.register(multipart, { limits: { fileSize: MAX_FILE_BYTES, files: 1, fields: 5, parts: 6 } });

  app.post(
    '/api/v1/files',
    {
      config: {
        permission: 'agents:write',
        requestBody: {
          required: true,
          content: {
            'multipart/form-data': {
              schema: {
                type: 'object',
                required: ['file'],
                properties: {
                  file: { type: 'string', format: 'binary', description: 'the attachment; its part’s file name and content type are kept' },
                },
              },
            },
          },
        },
      },
      schema: {
        operationId: 'uploadFile',
        tags: ['conversations'],
        summary: `Upload an attachment (multipart/form-data, one file field, at most ${MAX_FILE_BYTES / 1024 / 1024} MiB)`,
        consumes: ['multipart/form-data'],
        response: { 201: FileView, ...problems(400, 401, 403, 413, 415) },
      },
    },
    async (req, reply) => {
      const file = await readUploadedFile(req, MAX_FILE_BYTES);
      return reply.code(201).send(await files.upload(req.principal, file.filename, file.mimetype, file.data));
    },
  );

  app.get(
    '/api/v1/files/:id',
    {
      config: { permission: 'agents:read' },
      schema: {
        operationId: 'getFile',
        tags: ['conversations'],
        summary: 'An attachment’s metadata',
        params: IdParams,
        response: { 200: FileView, ...problems(401, 403, 404) },
      },
    },
    async (req) => {
      const f = await files.get(req.principal.tenantId, req.params.id);
      return { id: f.id, name: f.name, contentType: f.content_type, size: f.size, createdAt: f.created_at };
    },
  );

  app.delete(
    '/api/v1/files/:id',
    {
      config: { permission: 'agents:write' },
      schema: {
        operationId: 'deleteFile',
        tags: ['conversations'],
        summary: 'Delete an attachment',
        description:
          'Messages that name the file keep its id; its metadata and content then answer 404 (as after the tenant’s retention removed it).',
        params: IdParams,
        response: { 204: Type.Null(), ...problems(401, 403, 404) },
      },
    },
    async (req, reply) => {
      await files.delete(req.principal, req.params.id);
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/api/v1/files/:id/content',
    {
      config: { permission: 'agents:read' },
      schema: {
        operationId: 'downloadFile',
        tags: ['conversations'],
        summary: 'Download an attachment',
        params: IdParams,
        description:
          'Answers the file bytes with their content type, as an attachment named by `Content-Disposition` (RFC 6266): `filename*` (RFC 8187, UTF-8) for a name that is not ASCII, after an ASCII `filename` fallback.',
        response: problems(401, 403, 404),
      },
    },
    async (req, reply) => {
      const f = await files.get(req.principal.tenantId, req.params.id);
      return reply
        .header('content-type', f.content_type)
        .header('content-disposition', attachmentDisposition(f.name))
        .header('x-content-type-options', 'nosniff')
        .send(Buffer.from(f.data, 'base64'));
    },
  );
};
