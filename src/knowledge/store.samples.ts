import { exportSample, type StoreSamples } from '../db/sql-samples.js';
import * as store from './store.js';

const at = '2026-01-01T00:00:00.000Z';

const base: store.BaseRow = {
  id: 'base-1',
  tenant_id: 'tenant-1',
  name: 'Handbook',
  description: null,
  embedding_model: 'builtin/hash-embedding',
  rerank_model: null,
  chunk_max_chars: 1200,
  chunk_overlap_chars: 150,
  document_count: 0,
  chunk_count: 0,
  created_at: at,
  updated_at: at,
};

const document: store.DocumentRow = {
  id: 'doc-1',
  tenant_id: 'tenant-1',
  knowledge_base_id: 'base-1',
  file_id: null,
  filename: null,
  title: 'Office',
  source_url: null,
  tags: '[]',
  metadata: '{}',
  media_type: 'text/plain',
  byte_size: 5,
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

const chunk: store.NewChunk = {
  tenant_id: 'tenant-1',
  knowledge_base_id: 'base-1',
  document_id: 'doc-1',
  version: 1,
  position: 0,
  heading_path: '[]',
  text: 'hello',
  char_count: 5,
  token_count: 2,
  embedding_model: 'builtin/hash-embedding',
  embedding: Buffer.alloc(8),
};

const claim = { owner: 'knowledge-1', now: at, leaseUntil: at };
const held = { id: 'doc-1', version: 1, owner: 'knowledge-1' };
const everyDocument: store.ChunkScope = { tenantId: 'tenant-1', baseId: 'base-1' };
/** Two words of a query with their document frequencies: what PostgreSQL's lexical ranking is given. */
const weighted = (office: number, hours: number): store.WeightedWord[] => [
  { word: 'office', df: office, idf: 3.2 },
  { word: 'hours', df: hours, idf: 0.5 },
];
const someDocuments: store.ChunkScope = { tenantId: 'tenant-1', baseId: 'base-1', documentIds: ['doc-1', 'doc-2'] };

export const samples = {
  insertBase: [base],
  findBase: ['tenant-1', 'base-1'],
  listBases: ['tenant-1', { limit: 20, offset: 0 }],
  countBases: ['tenant-1'],
  basesAmong: { 'every base': ['tenant-1', undefined, 100], 'some bases': ['tenant-1', ['base-1', 'base-2'], 100] },
  lockForCreate: ({ db, dialect }) => store.lockForCreate(db, dialect, 'bases/tenant-1'),
  updateBase: ['tenant-1', 'base-1', { name: 'Handbook 2027', updated_at: at }],
  addToBaseCounts: ['base-1', { documents: 1, chunks: 10 }],
  deleteBase: ({ db, dialect }) => store.deleteBase(db, dialect, 'tenant-1', 'base-1'),
  insertDocument: [document, Buffer.from('hello')],
  documentContent: ['doc-1', 1],
  findDocument: ['tenant-1', 'base-1', 'doc-1'],
  listDocuments: {
    every: ['tenant-1', 'base-1', undefined, { limit: 20, offset: 0 }],
    'of a status': ['tenant-1', 'base-1', 'ready', { limit: 20, offset: 0 }],
  },
  countDocuments: ['tenant-1', 'base-1'],
  searchableDocuments: ['tenant-1', 'base-1'],
  documentTitles: ['tenant-1', ['doc-1', 'doc-2']],
  replaceDocument: ['tenant-1', 'doc-1', { version: 2, status: 'queued', updated_at: at }, Buffer.from('hello again')],
  deleteDocument: ({ db, dialect }) => store.deleteDocument(db, dialect, 'tenant-1', 'base-1', 'doc-1'),
  requeueBase: ['tenant-1', 'base-1', at],
  claimDocuments: ({ db, dialect }) => store.claimDocuments(db, dialect, claim, 2),
  renewLeases: [{ owner: 'knowledge-1', ids: ['doc-1'], until: at }],
  updateHeld: [held, { progress: 50 }],
  deleteChunks: ({ db, dialect }) => store.deleteChunks(db, dialect, 'doc-1'),
  documentTermCounts: ['doc-1'],
  addToTermCounts: [
    'base-1',
    new Map([
      ['', 2],
      ['offic', 2],
    ]),
    new Map([
      ['', 1],
      ['hour', 1],
    ]),
  ],
  insertChunks: {
    'sketches only': ({ db, dialect }) => store.insertChunks(db, dialect, [chunk]),
    'with pgvector': ({ db, dialect }) => store.insertChunks(db, dialect, [chunk], true),
  },
  indexable: null,
  hasVectorColumn: [],
  vectorExtension: [],
  createVectorExtension: [],
  addVectorColumn: [],
  createWithoutVectorIndex: [],
  chunksWithoutVector: [0, 1000],
  setVectors: [[{ seq: 1, vector: new Float32Array([0.6, 0.8]) }]],
  vectorDimensions: [],
  tryLockVectorUpkeep: [],
  unlockVectorUpkeep: [],
  createVectorIndex: [384],
  pgvectorNearest: {
    'every document': [everyDocument, 'builtin/hash-embedding', new Float32Array([0.6, 0.8]), 40],
    'some documents': [someDocuments, 'builtin/hash-embedding', new Float32Array([0.6, 0.8]), 40],
  },
  pgvectorExact: {
    'every document': [everyDocument, 'builtin/hash-embedding', new Float32Array([0.6, 0.8]), 40],
    'some documents': [someDocuments, 'builtin/hash-embedding', new Float32Array([0.6, 0.8]), 40],
  },
  lexicalSearch: {
    'every document': [everyDocument, ['office', 'hours'], 40],
    'some documents': [someDocuments, ['office'], 40],
  },
  weighWords: ['base-1', ['office', 'hours']],
  rankWeighted: {
    'every match ranked': [everyDocument, weighted(120, 3000), 40, 5000],
    'bounded: the rarest words, and every word': [everyDocument, weighted(4000, 60000), 40, 5000],
    'bounded, some documents': [someDocuments, weighted(4000, 60000), 40, 5000],
  },
  vectorPage: {
    'every document': [everyDocument, 'builtin/hash-embedding', 0, 2000],
    'some documents': [someDocuments, 'builtin/hash-embedding', 0, 2000],
  },
  nearestVectors: {
    'every document': [everyDocument, 'builtin/hash-embedding', { embedding: Buffer.alloc(8), sketch: Buffer.alloc(2) }, 400, 40],
    'some documents': [someDocuments, 'builtin/hash-embedding', { embedding: Buffer.alloc(8), sketch: Buffer.alloc(2) }, 400, 40],
  },
  sparseVectorCandidates: {
    'every document': [
      everyDocument,
      'builtin/hash-embedding',
      [
        { dimension: 3, weight: 127 },
        { dimension: 40, weight: -64 },
      ],
      400,
    ],
    'some documents': [someDocuments, 'builtin/hash-embedding', [{ dimension: 3, weight: 127 }], 400],
  },
  vectorCandidates: {
    'every document': [everyDocument, 'builtin/hash-embedding', { agree: ['1000', '1000'], oppose: ['0010', '0010'] }, 400],
    'some documents': [someDocuments, 'builtin/hash-embedding', { agree: ['1000', '1000'], oppose: ['0010', '0010'] }, 400],
  },
  findChunk: ['tenant-1', 'base-1', 'doc-1', 1, 0],
  chunksBySeq: ['tenant-1', [1, 2]],
  exportSources: exportSample(store.exportSources),
} satisfies StoreSamples<typeof store>;
