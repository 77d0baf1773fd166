import type { FilesService } from '../conversations/files.js';
import type { Db } from '../db/database.js';
import { isUniqueViolation } from '../db/unique-violation.js';
import { Conflict, InvalidInput, NotFound } from '../errors.js';
import { newId, now } from '../ids.js';
import { recordAudit } from '../tenancy/audit.js';
import type { Principal } from '../tenancy/permissions.js';
import { headingPathColumn, metadataColumn, tagsColumn } from './columns.js';
import { type Embeddings, HASH_EMBEDDING_MODEL } from './embeddings.js';
import {
  type CreateKnowledgeBaseBody,
  type DocumentBody,
  type DocumentStatus,
  type KnowledgeBase,
  type KnowledgeChunk,
  type KnowledgeDocument,
  LIMITS,
  type UpdateKnowledgeBaseBody,
} from './schemas.js';
import type { RerankModels } from './rerank.js';
import * as store from './store.js';

/**
 * Knowledge bases and their documents (docs/knowledge.md): the rules of the routes. A document's
 * upload is queued for ingestion (ingestion.ts) in the transaction that records it; the queue is
 * the documents' own status.
 */

const DEFAULT_CHUNKING = { maxChars: 1200, overlapChars: 150 };

const baseView = (row: store.BaseRow): KnowledgeBase => ({
  id: row.id,
  name: row.name,
  description: row.description,
  embeddingModel: row.embedding_model,
  rerankModel: row.rerank_model,
  chunking: { maxChars: row.chunk_max_chars, overlapChars: row.chunk_overlap_chars },
  documentCount: row.document_count,
  chunkCount: row.chunk_count,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
});

const documentView = (row: store.DocumentRow): KnowledgeDocument => ({
  id: row.id,
  knowledgeBaseId: row.knowledge_base_id,
  fileId: row.file_id,
  filename: row.filename,
  title: row.title,
  sourceUrl: row.source_url,
  tags: tagsColumn(row.tags),
  metadata: metadataColumn(row.metadata),
  mediaType: row.media_type,
  byteSize: row.byte_size,
  version: row.version,
  indexedVersion: row.indexed_version,
  status: row.status as DocumentStatus,
  failureReason: row.failure_reason,
  progress: row.progress,
  chunkCount: row.chunk_count,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
  indexedAt: row.indexed_at,
});

/** A document's bytes and how to read them, from the body's text or the file it names. */
interface Upload {
  content: Buffer;
  mediaType: string;
  fileId: string | null;
  filename: string | null;
}

/** A file sent with the request itself (multipart), as the upload helper read it. */
export interface UploadedFile {
  filename: string;
  mimetype: string;
  data: Buffer;
}

export interface KnowledgeServiceOptions {
  db: Db;
  files: FilesService;
  embeddings: Embeddings;
  /** The chat models a base's rerankModel may name. */
  rerankModels: RerankModels;
  /** Tells the ingestion workers, on every replica, that documents were queued. */
  queued: () => void;
}

export class KnowledgeService {
  private readonly db: Db;
  private readonly files: FilesService;
  private readonly embeddings: Embeddings;
  private readonly rerankModels: RerankModels;
  private readonly queued: () => void;

  constructor({ db, files, embeddings, rerankModels, queued }: KnowledgeServiceOptions) {
    this.db = db;
    this.files = files;
    this.embeddings = embeddings;
    this.rerankModels = rerankModels;
    this.queued = queued;
  }

  // ---------------------------------------------------------------- knowledge bases

  async createBase(principal: Principal, body: CreateKnowledgeBaseBody): Promise<KnowledgeBase> {
    const embeddingModel = this.checkModel(body.embeddingModel ?? HASH_EMBEDDING_MODEL);
    const rerankModel = this.checkRerankModel(body.rerankModel ?? null);
    const chunking = this.checkChunking(body.chunking ?? DEFAULT_CHUNKING);
    const at = now();
    const row: store.BaseRow = {
      id: newId(),
      tenant_id: principal.tenantId,
      name: body.name,
      description: body.description ?? null,
      embedding_model: embeddingModel,
      rerank_model: rerankModel,
      chunk_max_chars: chunking.maxChars,
      chunk_overlap_chars: chunking.overlapChars,
      document_count: 0,
      chunk_count: 0,
      created_at: at,
      updated_at: at,
    };
    await this.uniqueName(body.name, () =>
      this.db.kysely.transaction().execute(async (trx) => {
        await store.lockForCreate(trx, this.db.dialect, `bases/${principal.tenantId}`);
        if ((await store.countBases(trx, principal.tenantId)) >= LIMITS.basesPerTenant) {
          throw new Conflict('knowledge_base_limit', `a tenant holds at most ${LIMITS.basesPerTenant} knowledge bases: delete one first`);
        }
        await store.insertBase(trx, row);
        await recordAudit(trx, {
          tenantId: principal.tenantId,
          actor: principal.actor,
          action: 'knowledge_base.created',
          resourceType: 'knowledge_base',
          resourceId: row.id,
          detail: { name: row.name, embeddingModel, rerankModel },
        });
      }),
    );
    return baseView(row);
  }

  async listBases(tenantId: string, { page, limit }: { page: number; limit: number }) {
    const { rows, total } = await store.listBases(this.db.kysely, tenantId, { limit, offset: (page - 1) * limit });
    return { knowledgeBases: rows.map(baseView), total, page, limit };
  }

  async base(tenantId: string, id: string): Promise<store.BaseRow> {
    const row = await store.findBase(this.db.kysely, tenantId, id);
    if (!row) throw new NotFound('knowledge base');
    return row;
  }

  /** The bases an agent may search: those of `ids` that exist (every base of the tenant without `ids`). */
  basesFor(tenantId: string, ids: readonly string[] | undefined): Promise<store.BaseRow[]> {
    if (ids?.length === 0) return Promise.resolve([]);
    return store.basesAmong(this.db.kysely, tenantId, ids && [...ids], LIMITS.basesPerTenant);
  }

  async getBase(tenantId: string, id: string): Promise<KnowledgeBase> {
    return baseView(await this.base(tenantId, id));
  }

  /**
   * Changes the fields given. A new embedding model or chunking queues every document to be indexed
   * again; until each is ready, search keeps answering from its chunks as they were (lexically; its
   * vectors of the old model are not compared with the new model's).
   */
  async updateBase(principal: Principal, id: string, body: UpdateKnowledgeBaseBody): Promise<KnowledgeBase> {
    const { tenantId } = principal;
    const embeddingModel = body.embeddingModel === undefined ? undefined : this.checkModel(body.embeddingModel);
    const rerankModel = body.rerankModel === undefined ? undefined : this.checkRerankModel(body.rerankModel);
    const chunking = body.chunking === undefined ? undefined : this.checkChunking(body.chunking);
    let reindex = false;
    const row = await this.uniqueName(body.name, () =>
      this.db.kysely.transaction().execute(async (trx) => {
        const current = await store.findBase(trx, tenantId, id);
        if (!current) throw new NotFound('knowledge base');
        const at = now();
        const patch = {
          ...(body.name !== undefined ? { name: body.name } : {}),
          ...(body.description !== undefined ? { description: body.description } : {}),
          ...(embeddingModel !== undefined ? { embedding_model: embeddingModel } : {}),
          ...(rerankModel !== undefined ? { rerank_model: rerankModel } : {}),
          ...(chunking ? { chunk_max_chars: chunking.maxChars, chunk_overlap_chars: chunking.overlapChars } : {}),
          updated_at: at,
        };
        const next = { ...current, ...patch };
        reindex =
          next.embedding_model !== current.embedding_model ||
          next.chunk_max_chars !== current.chunk_max_chars ||
          next.chunk_overlap_chars !== current.chunk_overlap_chars;
        // The documents' rows before the base's, the order ingestion's commit takes them in (no deadlock).
        if (reindex) await store.requeueBase(trx, tenantId, id, at);
        await store.updateBase(trx, tenantId, id, patch);
        await recordAudit(trx, {
          tenantId,
          actor: principal.actor,
          action: 'knowledge_base.updated',
          resourceType: 'knowledge_base',
          resourceId: id,
          detail: { fields: Object.keys(body), reindex },
        });
        return next;
      }),
    );
    if (reindex) this.queued();
    return baseView(row);
  }

  async deleteBase(principal: Principal, id: string): Promise<void> {
    await this.db.kysely.transaction().execute(async (trx) => {
      if (!(await store.deleteBase(trx, this.db.dialect, principal.tenantId, id))) throw new NotFound('knowledge base');
      await recordAudit(trx, {
        tenantId: principal.tenantId,
        actor: principal.actor,
        action: 'knowledge_base.deleted',
        resourceType: 'knowledge_base',
        resourceId: id,
        detail: {},
      });
    });
  }

  // ---------------------------------------------------------------- documents

  /** Adds a document from the body's content or fileId, or from a file uploaded with the request (`file`). */
  async addDocument(principal: Principal, baseId: string, body: DocumentBody, file?: UploadedFile): Promise<KnowledgeDocument> {
    const { tenantId } = principal;
    await this.base(tenantId, baseId);
    const upload = file
      ? { content: file.data, mediaType: file.mimetype, fileId: null, filename: file.filename }
      : await this.uploadOf(tenantId, body);
    const at = now();
    const row: store.DocumentRow = {
      id: newId(),
      tenant_id: tenantId,
      knowledge_base_id: baseId,
      file_id: upload.fileId,
      filename: upload.filename,
      title: body.title ?? null,
      source_url: body.sourceUrl ?? null,
      tags: JSON.stringify(body.tags ?? []),
      metadata: this.metadataText(body.metadata),
      media_type: upload.mediaType,
      byte_size: upload.content.length,
      version: 1,
      indexed_version: null,
      status: 'queued',
      failure_reason: null,
      progress: 0,
      chunk_count: 0,
      attempts: 0,
      available_at: at,
      lease_owner: null,
      lease_expires_at: null,
      created_at: at,
      updated_at: at,
      indexed_at: null,
    };
    await this.db.kysely.transaction().execute(async (trx) => {
      await store.lockForCreate(trx, this.db.dialect, `documents/${baseId}`);
      // The base may have been deleted since it was read: its row is what the counts move.
      if (!(await store.findBase(trx, tenantId, baseId))) throw new NotFound('knowledge base');
      if ((await store.countDocuments(trx, tenantId, baseId)) >= LIMITS.documentsPerBase) {
        throw new Conflict(
          'knowledge_document_limit',
          `a knowledge base holds at most ${LIMITS.documentsPerBase} documents: delete some first`,
        );
      }
      await store.insertDocument(trx, row, upload.content);
      await store.addToBaseCounts(trx, baseId, { documents: 1, chunks: 0 });
      await recordAudit(trx, {
        tenantId,
        actor: principal.actor,
        action: 'knowledge_document.created',
        resourceType: 'knowledge_document',
        resourceId: row.id,
        detail: { knowledgeBaseId: baseId, mediaType: row.media_type, bytes: row.byte_size, fileId: row.file_id },
      });
    });
    this.queued();
    return documentView(row);
  }

  /**
   * A new version of the document: queued, version + 1. Its chunks of the version indexed before stay
   * searchable until the new one is ready, when they are swapped in one transaction.
   */
  async replaceDocument(principal: Principal, baseId: string, id: string, body: DocumentBody): Promise<KnowledgeDocument> {
    const { tenantId } = principal;
    await this.base(tenantId, baseId);
    const upload = await this.uploadOf(tenantId, body);
    const row = await this.db.kysely.transaction().execute(async (trx) => {
      const current = await store.findDocument(trx, tenantId, baseId, id);
      if (!current) throw new NotFound('knowledge document');
      const at = now();
      const patch = {
        file_id: upload.fileId,
        filename: upload.filename,
        title: body.title ?? null,
        source_url: body.sourceUrl ?? null,
        tags: JSON.stringify(body.tags ?? []),
        metadata: this.metadataText(body.metadata),
        media_type: upload.mediaType,
        byte_size: upload.content.length,
        version: current.version + 1,
        status: 'queued',
        failure_reason: null,
        progress: 0,
        attempts: 0,
        available_at: at,
        lease_owner: null,
        lease_expires_at: null,
        updated_at: at,
      };
      await store.replaceDocument(trx, tenantId, id, patch, upload.content);
      await recordAudit(trx, {
        tenantId,
        actor: principal.actor,
        action: 'knowledge_document.replaced',
        resourceType: 'knowledge_document',
        resourceId: id,
        detail: { knowledgeBaseId: baseId, version: patch.version, mediaType: patch.media_type, bytes: patch.byte_size },
      });
      return { ...current, ...patch };
    });
    this.queued();
    return documentView(row);
  }

  async listDocuments(tenantId: string, baseId: string, query: { page: number; limit: number; status?: DocumentStatus }) {
    await this.base(tenantId, baseId);
    const { page, limit } = query;
    const { rows, total } = await store.listDocuments(this.db.kysely, tenantId, baseId, query.status, {
      limit,
      offset: (page - 1) * limit,
    });
    return { documents: rows.map(documentView), total, page, limit };
  }

  async getDocument(tenantId: string, baseId: string, id: string): Promise<KnowledgeDocument> {
    await this.base(tenantId, baseId);
    const row = await store.findDocument(this.db.kysely, tenantId, baseId, id);
    if (!row) throw new NotFound('knowledge document');
    return documentView(row);
  }

  /**
   * The chunk at `position` of the version search sees: what a citation points at. A document not yet
   * indexed, or a position past its chunks, is a 404 naming the chunk.
   */
  async getChunk(tenantId: string, baseId: string, documentId: string, position: number): Promise<KnowledgeChunk> {
    await this.base(tenantId, baseId);
    const document = await store.findDocument(this.db.kysely, tenantId, baseId, documentId);
    if (!document) throw new NotFound('knowledge document');
    const version = document.indexed_version;
    const chunk = version === null ? undefined : await store.findChunk(this.db.kysely, tenantId, baseId, documentId, version, position);
    if (version === null || !chunk) {
      throw new NotFound(
        'knowledge chunk',
        version === null
          ? 'knowledge chunk not found: the document has no indexed version yet'
          : `knowledge chunk not found: the document has ${document.chunk_count} chunks (positions 0 to ${document.chunk_count - 1})`,
      );
    }
    return {
      knowledgeBaseId: baseId,
      documentId,
      title: document.title,
      sourceUrl: document.source_url,
      version,
      position: chunk.position,
      chunkCount: document.chunk_count,
      headingPath: headingPathColumn(chunk.heading_path),
      text: chunk.text,
    };
  }

  /** Deletes the document and its chunks at once; an ingestion under way finds it gone and writes nothing. */
  async deleteDocument(principal: Principal, baseId: string, id: string): Promise<void> {
    const { tenantId } = principal;
    await this.base(tenantId, baseId);
    await this.db.kysely.transaction().execute(async (trx) => {
      const deleted = await store.deleteDocument(trx, this.db.dialect, tenantId, baseId, id);
      if (deleted === null) throw new NotFound('knowledge document');
      // The terms before the base's row, as ingestion takes them (store.addToTermCounts).
      if (deleted.terms.size) await store.addToTermCounts(trx, baseId, new Map(), deleted.terms);
      await store.addToBaseCounts(trx, baseId, { documents: -1, chunks: -deleted.chunks });
      await recordAudit(trx, {
        tenantId,
        actor: principal.actor,
        action: 'knowledge_document.deleted',
        resourceType: 'knowledge_document',
        resourceId: id,
        detail: { knowledgeBaseId: baseId },
      });
    });
  }

  // ---------------------------------------------------------------- checks

  private checkModel(model: string): string {
    const why = this.embeddings.unavailable(model);
    if (why) throw new InvalidInput(`embeddingModel ${model} ${why}`, [{ path: 'body.embeddingModel', message: why }]);
    return model;
  }

  /** A re-ranking model must be a chat model this server can call; the built-in echo model ranks nothing. */
  private checkRerankModel(model: string | null): string | null {
    if (model === null) return null;
    const why = model.startsWith('builtin/') ? 'is not a model that can rank passages' : this.rerankModels.unavailable(model);
    if (why) throw new InvalidInput(`rerankModel ${model} ${why}`, [{ path: 'body.rerankModel', message: why }]);
    return model;
  }

  private checkChunking(chunking: { maxChars: number; overlapChars: number }) {
    if (chunking.overlapChars * 2 > chunking.maxChars) {
      throw new InvalidInput('chunking.overlapChars may be at most half of chunking.maxChars', [
        { path: 'body.chunking.overlapChars', message: `must be at most ${Math.floor(chunking.maxChars / 2)} (half of maxChars)` },
      ]);
    }
    return chunking;
  }

  private metadataText(metadata: Record<string, unknown> | undefined): string {
    const text = JSON.stringify(metadata ?? {});
    if (Buffer.byteLength(text) > LIMITS.metadataBytes) {
      throw new InvalidInput(`metadata is over ${LIMITS.metadataBytes} bytes as JSON`, [
        { path: 'body.metadata', message: `must be at most ${LIMITS.metadataBytes} bytes as JSON` },
      ]);
    }
    return text;
  }

  /** The document's bytes: the body's content (UTF-8, of its mediaType, text/plain by default) or the file it names. */
  private async uploadOf(tenantId: string, body: DocumentBody): Promise<Upload> {
    if ((body.fileId === undefined) === (body.content === undefined)) {
      const message = 'give exactly one of fileId and content';
      throw new InvalidInput(`a document needs its bytes: ${message}`, [
        { path: body.fileId === undefined ? 'body.content' : 'body.fileId', message },
      ]);
    }
    if (body.content !== undefined) {
      const content = Buffer.from(body.content, 'utf8');
      this.checkSize(content, 'body.content');
      return { content, mediaType: body.mediaType ?? 'text/plain', fileId: null, filename: null };
    }
    let file: Awaited<ReturnType<FilesService['get']>>;
    try {
      file = await this.files.get(tenantId, body.fileId!);
    } catch (err) {
      if (err instanceof NotFound)
        throw new InvalidInput('fileId names no file of this tenant', [{ path: 'body.fileId', message: 'names no file of this tenant' }]);
      throw err;
    }
    const content = Buffer.from(file.data, 'base64');
    this.checkSize(content, 'body.fileId');
    return { content, mediaType: body.mediaType ?? file.content_type, fileId: file.id, filename: file.name };
  }

  /** Today's routes cannot bring more (a JSON body is at most 1 MiB, a file 5 MiB); the bound holds if they come to. */
  private checkSize(content: Buffer, path: string) {
    if (content.length > LIMITS.documentBytes) {
      throw new InvalidInput(`a document holds at most ${LIMITS.documentBytes} bytes`, [
        { path, message: `must be at most ${LIMITS.documentBytes} bytes` },
      ]);
    }
  }

  /** Runs a write that may meet the unique (tenant, name) index as a 409 naming the name. */
  private async uniqueName<T>(name: string | undefined, write: () => Promise<T>): Promise<T> {
    try {
      return await write();
    } catch (err) {
      if (name !== undefined && isUniqueViolation(err)) {
        throw new Conflict('knowledge_base_exists', `a knowledge base named ${name} exists already`);
      }
      throw err;
    }
  }
}
