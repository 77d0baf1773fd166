import {
  DocumentError,
  type ChunkOptions,
  type DocumentBlock,
  type DocumentChunk,
  type ExtractedDocument,
  type ExtractLimits,
} from './types.js';

export * from './types.js';

/**
 * Placeholder until the document readers land: plain text only, split into paragraphs, and a chunker
 * that packs blocks up to maxChars. The signatures are the contract ingestion is built on.
 */
export async function extractDocument(
  input: { bytes: Uint8Array; mediaType: string; filename?: string },
  limits: ExtractLimits,
): Promise<ExtractedDocument> {
  if (!input.mediaType.startsWith('text/plain')) {
    throw new DocumentError('unsupported_media_type', `${input.mediaType} documents cannot be read yet`);
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(input.bytes);
  } catch {
    throw new DocumentError('invalid_encoding', 'the document is not valid UTF-8');
  }
  if (text.length > limits.maxTextChars) {
    throw new DocumentError('document_too_large', `the document's text is over ${limits.maxTextChars} characters`);
  }
  const blocks: DocumentBlock[] = text
    .split(/\n\s*\n/)
    .map((p) => p.trim())
    .filter(Boolean)
    .map((p) => ({ kind: 'paragraph', text: p }));
  if (blocks.length === 0) throw new DocumentError('no_text', 'the document holds no text');
  return { title: null, blocks };
}

export function chunkDocument(doc: ExtractedDocument, options: ChunkOptions): DocumentChunk[] {
  const chunks: DocumentChunk[] = [];
  let current = '';
  for (const block of doc.blocks) {
    if (current && current.length + block.text.length + 2 > options.maxChars) {
      chunks.push({ position: chunks.length, text: current, headingPath: [] });
      current = '';
    }
    current = current ? `${current}\n\n${block.text}` : block.text;
  }
  if (current) chunks.push({ position: chunks.length, text: current, headingPath: [] });
  return chunks;
}
