import path from 'node:path';
import multipart from '@fastify/multipart';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { create as createContentDisposition } from 'content-disposition';
import type { Db } from '../db/database.js';
import { InvalidInput, NotFound } from '../errors.js';
import { readUploadedFile } from '../http/upload.js';
import { IdParams, Nullable, PageQuery, Timestamp, problems } from '../http/schemas.js';
import { newId, now } from '../ids.js';
import { recordAudit } from '../tenancy/audit.js';
import type { Actor, Principal } from '../tenancy/permissions.js';
import { attachmentsColumn } from './columns.js';
import * as store from './store.js';

/** Attachments: files uploaded once, referenced by id from messages. Stored in the database. */

/** The largest file: an upload, or a file a tool made (a code execution's /output). */
export const MAX_FILE_BYTES = 5 * 1024 * 1024;
/** How many of a conversation's messages with attachments a code execution's /input reads. */
const INPUT_MESSAGES = 100;
/** How much of a text attachment the model sees. */
const MODEL_TEXT_LIMIT = 100_000;

const TEXT_TYPES = /^(text\/|application\/(json|xml|yaml|x-yaml|csv|javascript|x-ndjson)|application\/[\w.+-]+\+(json|xml))/i;

const FileView = Type.Object({
  id: Type.String(),
  name: Type.String(),
  contentType: Type.String(),
  size: Type.Integer({ description: 'bytes' }),
  createdAt: Timestamp,
  runId: Nullable(Type.String({ description: 'the run whose tool made the file (a code execution’s /output); null for an upload' })),
  toolCallId: Nullable(Type.String({ description: 'the tool call that made it; null for an upload' })),
});

const FileList = Type.Object({ files: Type.Array(FileView), total: Type.Integer(), page: Type.Integer(), limit: Type.Integer() });

const FileListQuery = Type.Object(
  { ...PageQuery, runId: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'only the files this run’s tools made' })) },
  { additionalProperties: false },
);

type FileMeta = Pick<store.FileRow, 'id' | 'name' | 'content_type' | 'size' | 'created_at' | 'run_id' | 'tool_call_id'>;

const viewOf = (f: FileMeta) => ({
  id: f.id,
  name: f.name,
  contentType: f.content_type,
  size: f.size,
  createdAt: f.created_at,
  runId: f.run_id,
  toolCallId: f.tool_call_id,
});

/** A file a tool made: its path under the folder it was written to, its media type and bytes. */
export interface MadeFile {
  path: string;
  mediaType: string;
  content: Uint8Array;
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it removes
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f]/g;

/** A made file's name: its path under its folder ('/'-separated), without control characters, at most 255 characters. */
function cleanPath(raw: string): string {
  const segments = raw
    .replace(CONTROL_CHARACTERS, '')
    .split(/[/\\]/)
    .map((segment) => segment.trim())
    .filter((segment) => segment && segment !== '.' && segment !== '..');
  return segments.join('/').slice(-255) || 'file';
}

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
      run_id: null,
      tool_call_id: null,
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
    return viewOf(row);
  }

  /**
   * Records the files a run's tool call made (a code execution's /output) as files of the tenant, with
   * their audit events, in one transaction: all of them or none. Sizes are the caller's to bound
   * (each at most MAX_FILE_BYTES).
   */
  async saveMade(made: { tenantId: string; actor: Actor; runId: string; toolCallId: string | null; files: MadeFile[] }) {
    const at = now();
    const rows: store.FileRow[] = made.files.map((f) => {
      if (f.content.byteLength > MAX_FILE_BYTES) throw new InvalidInput(`${f.path} is over ${MAX_FILE_BYTES} bytes`, []);
      return {
        id: newId(),
        tenant_id: made.tenantId,
        name: cleanPath(f.path),
        content_type: f.mediaType.slice(0, 200) || 'application/octet-stream',
        size: f.content.byteLength,
        data: Buffer.from(f.content.buffer, f.content.byteOffset, f.content.byteLength).toString('base64'),
        created_by: made.actor.id,
        created_at: at,
        run_id: made.runId,
        tool_call_id: made.toolCallId,
      };
    });
    if (!rows.length) return [];
    await this.db.kysely.transaction().execute(async (trx) => {
      for (const row of rows) {
        await store.insertFile(trx, row);
        await recordAudit(trx, {
          tenantId: made.tenantId,
          actor: made.actor,
          action: 'file.created',
          resourceType: 'file',
          resourceId: row.id,
          detail: { name: row.name, size: row.size, runId: made.runId, toolCallId: made.toolCallId },
        });
      }
    });
    return rows.map(viewOf);
  }

  /** A page of the tenant's files, newest first; with `runId`, those that run's tools made. */
  async list(tenantId: string, filter: store.FileFilter, page: number, limit: number) {
    const { rows, total } = await store.listFiles(this.db.kysely, { tenantId, filter, limit, offset: (page - 1) * limit });
    return { files: rows.map(viewOf), total, page, limit };
  }

  /**
   * What a code execution reads at /input: the files the conversation's messages attached (of its last
   * 100 messages with attachments) and the files named, each once. A named id that is no file of the
   * tenant is in `missing` (another tenant's is not told apart from none).
   */
  async inputFiles(tenantId: string, wanted: { conversationId: string | null; ids: string[] }) {
    const attached = wanted.conversationId
      ? (await store.conversationAttachments(this.db.kysely, tenantId, wanted.conversationId, INPUT_MESSAGES)).flatMap((m) =>
          attachmentsColumn(m.attachments),
        )
      : [];
    const ids = [...new Set([...attached, ...wanted.ids])];
    const rows = ids.length ? await store.findFiles(this.db.kysely, tenantId, ids) : [];
    const found = new Set(rows.map((r) => r.id));
    return {
      files: rows.map((r) => ({ id: r.id, name: r.name, contentType: r.content_type, content: Buffer.from(r.data, 'base64') })),
      missing: wanted.ids.filter((id) => !found.has(id)),
    };
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
    async (req) => viewOf(await files.get(req.principal.tenantId, req.params.id)),
  );

  app.get(
    '/api/v1/files',
    {
      config: { permission: 'agents:read' },
      schema: {
        operationId: 'listFiles',
        tags: ['conversations'],
        summary: 'The tenant’s files (metadata), newest first; `runId`: the files that run’s tools made',
        description:
          'Uploads and the files code executions left in /output (docs/code-execution.md). A `runId` of another tenant, or of no run, lists nothing.',
        querystring: FileListQuery,
        response: { 200: FileList, ...problems(400, 401, 403) },
      },
    },
    async (req) => {
      const { page, limit, runId } = req.query;
      return files.list(req.principal.tenantId, { runId }, page, limit);
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
