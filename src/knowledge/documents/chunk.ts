import type { ChunkOptions, DocumentChunk, ExtractedDocument } from './types.js';

/** Placeholder until the structural chunker lands: packs blocks up to maxChars. */
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
