import multipart from '@fastify/multipart';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { problems } from '../http/schemas.js';
import { readUploadedFile } from '../http/upload.js';
import {
  ChunkParams,
  CreateKnowledgeBaseBody,
  DocumentBody,
  DocumentListQuery,
  DocumentPage,
  DocumentParams,
  KnowledgeBase,
  KnowledgeBaseParams,
  KnowledgeBasePage,
  KnowledgeChunk,
  KnowledgeDocument,
  LIMITS,
  ListQuery,
  SEARCH_MAX_K,
  SearchBody,
  SearchResult,
  UpdateKnowledgeBaseBody,
} from './schemas.js';
import type { KnowledgeSearch } from './search.js';
import type { KnowledgeService } from './service.js';

const tags = ['knowledge'];

/**
 * Knowledge bases, their documents and search (docs/knowledge.md): /api/v1/knowledge-bases[...].
 * Reading and searching take agents:read, changing agents:write, as files and agents do.
 */
export const knowledgeRoutes: FastifyPluginAsyncTypebox<{ knowledge: KnowledgeService; search: KnowledgeSearch }> = async (
  app,
  { knowledge, search },
) => {
  // One document per upload, at most as large as a document may be.
  await app.register(multipart, { limits: { fileSize: LIMITS.documentBytes, files: 1, fields: 5, parts: 6 } });

  app.post(
    '/api/v1/knowledge-bases',
    {
      config: { permission: 'agents:write' },
      schema: {
        operationId: 'createKnowledgeBase',
        tags,
        summary: 'Create a knowledge base',
        description: `At most ${LIMITS.basesPerTenant} per tenant (409 knowledge_base_limit); names are unique in the tenant (409 knowledge_base_exists).`,
        body: CreateKnowledgeBaseBody,
        response: { 201: KnowledgeBase, ...problems(400, 401, 403, 409, 413, 415) },
      },
    },
    async (req, reply) => reply.code(201).send(await knowledge.createBase(req.principal, req.body)),
  );

  app.get(
    '/api/v1/knowledge-bases',
    {
      config: { permission: 'agents:read' },
      schema: {
        operationId: 'listKnowledgeBases',
        tags,
        summary: 'List the tenant’s knowledge bases, newest first',
        querystring: ListQuery,
        response: { 200: KnowledgeBasePage, ...problems(400, 401, 403) },
      },
    },
    async (req) => knowledge.listBases(req.principal.tenantId, req.query),
  );

  app.get(
    '/api/v1/knowledge-bases/:id',
    {
      config: { permission: 'agents:read' },
      schema: {
        operationId: 'getKnowledgeBase',
        tags,
        summary: 'A knowledge base',
        params: KnowledgeBaseParams,
        response: { 200: KnowledgeBase, ...problems(400, 401, 403, 404) },
      },
    },
    async (req) => knowledge.getBase(req.principal.tenantId, req.params.id),
  );

  app.patch(
    '/api/v1/knowledge-bases/:id',
    {
      config: { permission: 'agents:write' },
      schema: {
        operationId: 'updateKnowledgeBase',
        tags,
        summary: 'Change a knowledge base (the fields given)',
        description:
          'A new embeddingModel or chunking queues every document to be indexed again; each keeps its chunks as they were until its new ones are ready.',
        params: KnowledgeBaseParams,
        body: UpdateKnowledgeBaseBody,
        response: { 200: KnowledgeBase, ...problems(400, 401, 403, 404, 409, 413, 415) },
      },
    },
    async (req) => knowledge.updateBase(req.principal, req.params.id, req.body),
  );

  app.delete(
    '/api/v1/knowledge-bases/:id',
    {
      config: { permission: 'agents:write' },
      schema: {
        operationId: 'deleteKnowledgeBase',
        tags,
        summary: 'Delete a knowledge base, its documents and their chunks',
        params: KnowledgeBaseParams,
        response: { 204: Type.Null(), ...problems(400, 401, 403, 404) },
      },
    },
    async (req, reply) => {
      await knowledge.deleteBase(req.principal, req.params.id);
      return reply.code(204).send(null);
    },
  );

  const documentBodyDescription = `Either fileId (a file uploaded with POST /api/v1/files, its type as mediaType unless given) or content (text, mediaType text/plain unless given). At most ${LIMITS.documentsPerBase} documents per base (409 knowledge_document_limit). Answers 202: the document is queued; its status moves to indexing, then ready or failed (failureReason).`;

  app.post(
    '/api/v1/knowledge-bases/:id/documents',
    {
      config: { permission: 'agents:write' },
      schema: {
        operationId: 'addKnowledgeDocument',
        tags,
        summary: 'Add a document to a knowledge base (queued for ingestion)',
        description: documentBodyDescription,
        params: KnowledgeBaseParams,
        body: DocumentBody,
        response: { 202: KnowledgeDocument, ...problems(400, 401, 403, 404, 409, 413, 415) },
      },
    },
    async (req, reply) => reply.code(202).send(await knowledge.addDocument(req.principal, req.params.id, req.body)),
  );

  app.post(
    '/api/v1/knowledge-bases/:id/documents/upload',
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
                  file: { type: 'string', format: 'binary', description: 'the document; its part’s file name and content type are kept' },
                },
              },
            },
          },
        },
      },
      schema: {
        operationId: 'uploadKnowledgeDocument',
        tags,
        summary: `Upload a document to a knowledge base (multipart/form-data, one file field, at most ${LIMITS.documentBytes / 1024 / 1024} MiB; queued for ingestion)`,
        description:
          'The file’s content type is the document’s media type. Title, tags and metadata are set by replacing the document (PUT) or by adding it through POST .../documents with the fileId of an upload instead.',
        consumes: ['multipart/form-data'],
        params: KnowledgeBaseParams,
        response: { 202: KnowledgeDocument, ...problems(400, 401, 403, 404, 409, 413, 415) },
      },
    },
    async (req, reply) => {
      const file = await readUploadedFile(req, LIMITS.documentBytes, 'documents');
      return reply.code(202).send(await knowledge.addDocument(req.principal, req.params.id, {}, file));
    },
  );

  app.get(
    '/api/v1/knowledge-bases/:id/documents',
    {
      config: { permission: 'agents:read' },
      schema: {
        operationId: 'listKnowledgeDocuments',
        tags,
        summary: 'List a knowledge base’s documents, newest first (optionally those of one status)',
        params: KnowledgeBaseParams,
        querystring: DocumentListQuery,
        response: { 200: DocumentPage, ...problems(400, 401, 403, 404) },
      },
    },
    async (req) => knowledge.listDocuments(req.principal.tenantId, req.params.id, req.query),
  );

  app.get(
    '/api/v1/knowledge-bases/:id/documents/:documentId',
    {
      config: { permission: 'agents:read' },
      schema: {
        operationId: 'getKnowledgeDocument',
        tags,
        summary: 'A document: its status, progress, version and the version search sees',
        params: DocumentParams,
        response: { 200: KnowledgeDocument, ...problems(400, 401, 403, 404) },
      },
    },
    async (req) => knowledge.getDocument(req.principal.tenantId, req.params.id, req.params.documentId),
  );

  app.get(
    '/api/v1/knowledge-bases/:id/documents/:documentId/chunks/:position',
    {
      config: { permission: 'agents:read' },
      schema: {
        operationId: 'getKnowledgeChunk',
        tags,
        summary: 'One chunk of a document: the passage a citation points at (its position)',
        description:
          'The chunk of the version search sees (indexedVersion). 404 when the document has no indexed version yet or no chunk at that position.',
        params: ChunkParams,
        response: { 200: KnowledgeChunk, ...problems(400, 401, 403, 404) },
      },
    },
    async (req) => knowledge.getChunk(req.principal.tenantId, req.params.id, req.params.documentId, req.params.position),
  );

  app.put(
    '/api/v1/knowledge-bases/:id/documents/:documentId',
    {
      config: { permission: 'agents:write' },
      schema: {
        operationId: 'replaceKnowledgeDocument',
        tags,
        summary: 'Replace a document with a new version (version + 1, queued)',
        description: `${documentBodyDescription} The version indexed before stays searchable until the new one is ready; title, sourceUrl, tags and metadata are those given (left out: none).`,
        params: DocumentParams,
        body: DocumentBody,
        response: { 202: KnowledgeDocument, ...problems(400, 401, 403, 404, 413, 415) },
      },
    },
    async (req, reply) =>
      reply.code(202).send(await knowledge.replaceDocument(req.principal, req.params.id, req.params.documentId, req.body)),
  );

  app.delete(
    '/api/v1/knowledge-bases/:id/documents/:documentId',
    {
      config: { permission: 'agents:write' },
      schema: {
        operationId: 'deleteKnowledgeDocument',
        tags,
        summary: 'Delete a document; its chunks leave search at once',
        params: DocumentParams,
        response: { 204: Type.Null(), ...problems(400, 401, 403, 404) },
      },
    },
    async (req, reply) => {
      await knowledge.deleteDocument(req.principal, req.params.id, req.params.documentId);
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/api/v1/knowledge-bases/:id/search',
    {
      config: { permission: 'agents:read' },
      schema: {
        operationId: 'searchKnowledgeBase',
        tags,
        summary: 'Search a knowledge base: passages with citations, best first',
        description: `mode hybrid (default) fuses lexical and vector rankings, by relative score (default) or reciprocal rank (fusion rrf), then re-ranked by the base's rerankModel if it has one (rerank false: not); k 1..${SEARCH_MAX_K} (default 5); filters: tags (any of), metadata (each key equal), documentIds. Only ready versions are searched. 502 embedding_failed: the base's embedding model could not embed the query.`,
        params: KnowledgeBaseParams,
        body: SearchBody,
        response: { 200: SearchResult, ...problems(400, 401, 403, 404, 413, 415, 502) },
      },
    },
    async (req) => search.search(req.principal.tenantId, req.params.id, req.body),
  );
};
