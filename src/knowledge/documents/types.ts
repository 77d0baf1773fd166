/**
 * What ingestion asks of a document (docs/knowledge.md, "Documents"): its text as structural blocks,
 * then chunks of it sized for search and embedding, each knowing where in the document it stands.
 */

/** One structural piece of a document, in reading order. */
export type DocumentBlock =
  | { kind: 'heading'; level: number; text: string }
  | { kind: 'paragraph'; text: string }
  | { kind: 'list'; text: string }
  | { kind: 'code'; text: string }
  /** A table as text (rows on lines, cells separated by ` | `), its header row first. */
  | { kind: 'table'; text: string };

export interface ExtractedDocument {
  /** The document's own title (first heading, HTML <title>, PDF or DOCX metadata), if it has one. */
  title: string | null;
  blocks: DocumentBlock[];
}

export interface ExtractLimits {
  /** Extracted text past this many characters fails the document (`document_too_large`). */
  maxTextChars: number;
  /**
   * DOCX: the uncompressed size of its parts; PDF: of its compressed streams but images. Past this
   * the document fails (`document_too_large`), a decompression bomb among them.
   */
  maxUnpackedBytes: number;
  /** PDF: pages past this fail it. */
  maxPages: number;
}

export type DocumentErrorCode = 'unsupported_media_type' | 'invalid_encoding' | 'no_text' | 'document_too_large' | 'malformed_document';

/** Why a document cannot be indexed; its message is shown to people as the document's `failed` reason. */
export class DocumentError extends Error {
  constructor(
    readonly code: DocumentErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'DocumentError';
  }
}

export interface ChunkOptions {
  /** A chunk's target size in characters; a block longer than this is split at sentence, then word, boundaries. */
  maxChars: number;
  /** Characters of the previous chunk repeated at the start of the next (never across a heading change). */
  overlapChars: number;
}

export interface DocumentChunk {
  /** 0-based, in reading order. */
  position: number;
  text: string;
  /** The headings above the chunk, outermost first (shown in citations). */
  headingPath: string[];
}
