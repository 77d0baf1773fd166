import { AgentryError, type KnowledgeDocument, type KnowledgeSearchResult } from '@agentry/client';
import { useEffect, useRef } from 'react';
import { messageOf } from '../../api';

/** A passage's citation as search and knowledge_search answer it (docs/knowledge.md). */
export type Citation = KnowledgeSearchResult['passages'][number]['citation'];

export type DocumentStatus = KnowledgeDocument['status'];

/** A document's bytes at most (the server's LIMITS.documentBytes): a larger file is refused before it is sent. */
export const MAX_DOCUMENT_BYTES = 5 * 1024 * 1024;

export const DEFAULT_EMBEDDING_MODEL = 'builtin/hash-embedding';

export const STATUS_COLORS: Record<DocumentStatus, string> = {
  queued: 'gray',
  indexing: 'blue',
  ready: 'green',
  failed: 'red',
};

/** Still being ingested: the page polls while any document is. */
export const unsettled = (status: DocumentStatus) => status === 'queued' || status === 'indexing';

/** How often a page with documents being ingested asks again. */
export const POLL_MS = 1000;

/** Calls `refresh` when fewer documents are under way than at the last render: some settled (not on the first render). */
export function useOnSettled(underWay: number, refresh: () => void) {
  const before = useRef(underWay);
  useEffect(() => {
    if (underWay < before.current) refresh();
    before.current = underWay;
  });
}

/** The words of a query as search reads them (letters and digits), to highlight in snippets. */
export function queryWords(query: string): string[] {
  return [...new Set(query.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [])].filter((w) => w.length > 1);
}

/** Where a citation points: the base's page showing that document's chunk (the same URL on the run page). */
export function passageLink(citation: Pick<Citation, 'knowledgeBaseId' | 'documentId' | 'position'>) {
  return {
    to: '/knowledge/$baseId' as const,
    params: { baseId: citation.knowledgeBaseId },
    search: { document: citation.documentId, position: citation.position },
  };
}

/** A run's citations are JSON the tools gave (runs/citations.ts): those shaped as knowledge_search's. */
export function asCitations(values: readonly unknown[] | undefined): Citation[] {
  return (values ?? []).filter(
    (c): c is Citation =>
      !!c &&
      typeof c === 'object' &&
      typeof (c as Citation).knowledgeBaseId === 'string' &&
      typeof (c as Citation).documentId === 'string' &&
      Number.isInteger((c as Citation).position),
  );
}

/** What went wrong with one file, in words: a 413 says the limit rather than "payload too large". */
export function uploadProblem(file: File, err: unknown): string {
  if (file.size > MAX_DOCUMENT_BYTES || (err instanceof AgentryError && err.status === 413)) return tooLarge(file);
  return `${file.name}: ${messageOf(err)}`;
}

export const tooLarge = (file: File) =>
  `${file.name} is too large: a document may be at most 5 MiB, this file is ${(file.size / 1024 / 1024).toFixed(1)} MiB`;
