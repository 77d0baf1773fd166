import { type Static, Type } from 'typebox';
import { Id, Literals, Nullable, PageQuery, Timestamp } from '../http/schemas.js';

/** Sizes and counts a tenant's knowledge is held to (docs/knowledge.md, "Sizes and limits"). */
export const LIMITS = {
  basesPerTenant: 100,
  documentsPerBase: 10_000,
  /** A document's bytes (as the files API keeps at most 5 MiB). */
  documentBytes: 5 * 1024 * 1024,
  /** Text extracted from one document. */
  documentTextChars: 2_000_000,
  chunksPerDocument: 5_000,
  tags: 32,
  metadataBytes: 8 * 1024,
} as const;

const DOCUMENT_STATUSES = ['queued', 'indexing', 'ready', 'failed'] as const;
export type DocumentStatus = (typeof DOCUMENT_STATUSES)[number];
const SEARCH_MODES = ['hybrid', 'lexical', 'vector'] as const;
export type SearchMode = (typeof SEARCH_MODES)[number];
const SEARCH_FUSIONS = ['relative_score', 'rrf'] as const;
export type SearchFusion = (typeof SEARCH_FUSIONS)[number];

const Name = Type.String({ minLength: 1, maxLength: 200, description: 'unique in the tenant' });
const Description = Type.String({ maxLength: 2000 });
const EmbeddingModel = Type.String({
  minLength: 3,
  maxLength: 200,
  description: 'builtin/hash-embedding (the default: offline, a baseline), openai/<model> or openai-compatible/<model>',
});
const Chunking = Type.Object(
  {
    maxChars: Type.Integer({ minimum: 200, maximum: 8000, description: 'a chunk’s target size in characters (default 1200)' }),
    overlapChars: Type.Integer({ minimum: 0, maximum: 2000, description: 'characters repeated from the chunk before (default 150)' }),
  },
  { additionalProperties: false },
);

export const KnowledgeBaseParams = Type.Object({ id: Id });
export const DocumentParams = Type.Object({ id: Id, documentId: Id });

const RerankModel = Type.String({
  minLength: 3,
  maxLength: 200,
  description: 'a chat model (openai/<model>, anthropic/<model>, openai-compatible/<model>) that re-ranks search candidates',
});

export const CreateKnowledgeBaseBody = Type.Object(
  {
    name: Name,
    description: Type.Optional(Nullable(Description)),
    embeddingModel: Type.Optional(EmbeddingModel),
    rerankModel: Type.Optional(Nullable(RerankModel)),
    chunking: Type.Optional(Chunking),
  },
  { additionalProperties: false },
);
export type CreateKnowledgeBaseBody = Static<typeof CreateKnowledgeBaseBody>;

export const UpdateKnowledgeBaseBody = Type.Object(
  {
    name: Type.Optional(Name),
    description: Type.Optional(Nullable(Description)),
    embeddingModel: Type.Optional(EmbeddingModel),
    rerankModel: Type.Optional(Nullable(RerankModel)),
    chunking: Type.Optional(Chunking),
  },
  { additionalProperties: false },
);
export type UpdateKnowledgeBaseBody = Static<typeof UpdateKnowledgeBaseBody>;

export const KnowledgeBase = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Nullable(Type.String()),
  embeddingModel: Type.String(),
  rerankModel: Nullable(Type.String({ description: 'the model that re-ranks search candidates; null: none' })),
  chunking: Type.Object({ maxChars: Type.Integer(), overlapChars: Type.Integer() }),
  documentCount: Type.Integer(),
  chunkCount: Type.Integer({ description: 'searchable chunks' }),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});
export type KnowledgeBase = Static<typeof KnowledgeBase>;

export const KnowledgeBasePage = Type.Object({
  knowledgeBases: Type.Array(KnowledgeBase),
  total: Type.Integer(),
  page: Type.Integer(),
  limit: Type.Integer(),
});

export const ListQuery = Type.Object({ ...PageQuery }, { additionalProperties: false });

const Tags = Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: LIMITS.tags, uniqueItems: true });
const Metadata = Type.Record(
  Type.String({ maxLength: 64 }),
  Type.Union([Type.String({ maxLength: 1000 }), Type.Number(), Type.Boolean(), Type.Null()]),
  {
    maxProperties: 32,
    description: 'flat JSON: strings, numbers, booleans, null (search filters match them by equality)',
  },
);
const MediaType = Type.String({ minLength: 3, maxLength: 200, pattern: '^[\\w.+-]+/[\\w.+-]+(\\s*;.*)?$', examples: ['text/plain'] });

export const DocumentBody = Type.Object(
  {
    fileId: Type.Optional(
      Type.String({ minLength: 1, maxLength: 64, description: 'a file uploaded with POST /api/v1/files; or give content' }),
    ),
    content: Type.Optional(Type.String({ minLength: 1, description: 'the document’s text; or give fileId' })),
    mediaType: Type.Optional(MediaType),
    title: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 500 }))),
    sourceUrl: Type.Optional(Nullable(Type.String({ format: 'uri', maxLength: 2048 }))),
    tags: Type.Optional(Tags),
    metadata: Type.Optional(Metadata),
  },
  { additionalProperties: false },
);
export type DocumentBody = Static<typeof DocumentBody>;

export const KnowledgeDocument = Type.Object({
  id: Type.String(),
  knowledgeBaseId: Type.String(),
  fileId: Nullable(Type.String()),
  filename: Nullable(Type.String()),
  title: Nullable(Type.String()),
  sourceUrl: Nullable(Type.String()),
  tags: Type.Array(Type.String()),
  metadata: Type.Record(Type.String(), Type.Unknown()),
  mediaType: Type.String(),
  byteSize: Type.Integer(),
  version: Type.Integer({ description: 'counts uploads: 1, then one more at each replacement' }),
  indexedVersion: Nullable(Type.Integer({ description: 'the version search sees; null until one is ready' })),
  status: Literals(DOCUMENT_STATUSES, { description: 'of `version`' }),
  failureReason: Nullable(Type.String()),
  progress: Type.Integer({ minimum: 0, maximum: 100, description: 'percent of `version`’s ingestion done' }),
  chunkCount: Type.Integer({ description: 'chunks of the indexed version' }),
  createdAt: Timestamp,
  updatedAt: Timestamp,
  indexedAt: Nullable(Timestamp),
});
export type KnowledgeDocument = Static<typeof KnowledgeDocument>;

export const DocumentPage = Type.Object({
  documents: Type.Array(KnowledgeDocument),
  total: Type.Integer(),
  page: Type.Integer(),
  limit: Type.Integer(),
});

export const ChunkParams = Type.Object({
  id: Id,
  documentId: Id,
  position: Type.Integer({ minimum: 0, maximum: LIMITS.chunksPerDocument - 1, description: 'the chunk’s place in its document, from 0' }),
});

export const KnowledgeChunk = Type.Object({
  knowledgeBaseId: Type.String(),
  documentId: Type.String(),
  title: Nullable(Type.String()),
  sourceUrl: Nullable(Type.String()),
  version: Type.Integer({ description: 'the document’s version this chunk is of (its indexedVersion)' }),
  position: Type.Integer({ description: 'the chunk’s place in its document, from 0' }),
  chunkCount: Type.Integer({ description: 'chunks of that version: positions run from 0 to chunkCount - 1' }),
  headingPath: Type.Array(Type.String()),
  text: Type.String(),
});
export type KnowledgeChunk = Static<typeof KnowledgeChunk>;

export const DocumentListQuery = Type.Object(
  { ...PageQuery, status: Type.Optional(Literals(DOCUMENT_STATUSES)) },
  { additionalProperties: false },
);

export const SearchFilters = Type.Object(
  {
    tags: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: LIMITS.tags, description: 'documents with any of these tags' }),
    ),
    metadata: Type.Optional(Metadata),
    documentIds: Type.Optional(Type.Array(Id, { maxItems: 100, description: 'only these documents' })),
  },
  { additionalProperties: false },
);
export type SearchFilters = Static<typeof SearchFilters>;

export const SEARCH_MAX_K = 50;
/** Candidates a re-ranking model is shown at most (the fused ranking's best). */
export const RERANK_CANDIDATES = 20;

export const SearchBody = Type.Object(
  {
    query: Type.String({ minLength: 1, maxLength: 2000 }),
    k: Type.Optional(Type.Integer({ minimum: 1, maximum: SEARCH_MAX_K, default: 5, description: 'passages to answer (default 5)' })),
    mode: Type.Optional(Literals(SEARCH_MODES, { description: 'hybrid (default): lexical and vector rankings fused' })),
    fusion: Type.Optional(
      Literals(SEARCH_FUSIONS, {
        description:
          'how hybrid fuses its two rankings: relative_score (default), each ranking’s scores scaled to 0..1 over its candidates and added; rrf, reciprocal rank (1 / (60 + rank))',
      }),
    ),
    filters: Type.Optional(SearchFilters),
    exact: Type.Optional(
      Type.Boolean({
        description:
          'compare the query with every vector of the base, without the first pass over sketches (default false): slower, to check what the first pass keeps',
      }),
    ),
    rerank: Type.Optional(
      Type.Boolean({
        description: `re-rank the best ${RERANK_CANDIDATES} candidates with the base's rerankModel (default: true when the base has one)`,
      }),
    ),
  },
  { additionalProperties: false },
);
export type SearchBody = Static<typeof SearchBody>;

const Citation = Type.Object({
  knowledgeBaseId: Type.String(),
  documentId: Type.String(),
  title: Nullable(Type.String()),
  sourceUrl: Nullable(Type.String()),
  position: Type.Integer({ description: 'the chunk’s place in its document, from 0' }),
  headingPath: Type.Array(Type.String()),
  score: Type.Number(),
  snippet: Type.String(),
});

export const Passage = Type.Object({
  text: Type.String(),
  citation: Citation,
});
export type Passage = Static<typeof Passage>;

export const SearchResult = Type.Object({
  mode: Literals(SEARCH_MODES),
  fusion: Type.Union([Literals(SEARCH_FUSIONS), Type.Null()], { description: 'the fusion hybrid used; null for lexical and vector' }),
  vectorIndex: Type.Union(
    [
      Type.Literal('sqlite-vec'),
      Type.Literal('pgvector'),
      Type.Literal('int8'),
      Type.Literal('level-bits'),
      Type.Literal('exact'),
      Type.Literal('none'),
    ],
    {
      description:
        'how vectors were compared: sqlite-vec (SQLite: candidates by int8 sketches, then their exact cosine), pgvector (PostgreSQL with the pgvector extension: candidates by its HNSW index, then their exact cosine), int8 (PostgreSQL without pgvector, or vectors beyond its HNSW’s 2,000 dimensions: a query of at most 64 non-zero components: candidates by the int8 sketches at those, then their exact cosine in process), level-bits (the same, a denser query: candidates by each component’s sign and strength as bits, then their exact cosine), exact (every vector in process: asked for with exact, or SQLite where sqlite-vec did not load), or none (lexical search)',
    },
  ),
  rerank: Type.Union(
    [
      Type.Object({
        model: Type.String(),
        status: Literals(['reranked', 'failed'] as const, {
          description: 'failed: the model could not be asked or its answer was not a ranking; the passages are in the fused order',
        }),
        candidates: Type.Integer({ description: 'passages the model was shown' }),
        error: Nullable(Type.String()),
      }),
      Type.Null(),
    ],
    { description: 'how the candidates were re-ranked; null: they were not (no rerankModel, or rerank false)' },
  ),
  passages: Type.Array(Passage),
});
export type SearchResult = Static<typeof SearchResult>;
