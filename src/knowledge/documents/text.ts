import { type DocumentBlock, DocumentError, type ExtractedDocument, type ExtractLimits } from './types.js';

/**
 * Decodes a text document strictly: invalid bytes fail it rather than turning into U+FFFD, since an
 * index of replacement characters answers no search. The encoding is, in the order browsers use: a
 * byte order mark (UTF-8, UTF-16), the charset the media type names, the one an HTML page declares
 * in its first 1,024 bytes (`html`), else UTF-8.
 */
export function decodeText(bytes: Uint8Array, charset: string | null, options: { html?: boolean } = {}): string {
  const label = bomEncoding(bytes) ?? charset ?? (options.html ? declaredHtmlCharset(bytes) : null) ?? 'utf-8';
  let decoder: InstanceType<typeof TextDecoder>;
  try {
    decoder = new TextDecoder(label, { fatal: true });
  } catch {
    throw new DocumentError('unsupported_media_type', `the character set ${JSON.stringify(label)} is not one this server can read`);
  }
  try {
    return decoder.decode(bytes);
  } catch {
    throw new DocumentError(
      'invalid_encoding',
      `the document is not valid ${decoder.encoding === 'utf-8' ? 'UTF-8' : decoder.encoding} text`,
    );
  }
}

function bomEncoding(bytes: Uint8Array): string | null {
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return 'utf-8';
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return 'utf-16le';
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return 'utf-16be';
  return null;
}

/** `<meta charset="...">` or `<meta http-equiv="Content-Type" content="...; charset=...">` near the start. */
function declaredHtmlCharset(bytes: Uint8Array): string | null {
  const head = new TextDecoder('latin1').decode(bytes.subarray(0, 1024));
  const match = /<meta[^>]{0,200}?charset\s*=\s*["']?\s*([A-Za-z0-9._:-]{1,40})/i.exec(head);
  return match ? match[1]!.toLowerCase() : null;
}

/** Fails a text format whose source alone is past the limit, before any parsing spends time on it. */
export function checkSourceLength(text: string, limits: ExtractLimits): void {
  if (text.length > limits.maxTextChars) throw tooLarge(limits);
}

export function tooLarge(limits: ExtractLimits): DocumentError {
  return new DocumentError('document_too_large', `the document's text is over the limit of ${limits.maxTextChars} characters`);
}

/**
 * The last step of every reader: empty blocks dropped, the text limit checked over what was kept, and
 * a document with nothing left refused as `no_text`.
 */
export function finishDocument(
  title: string | null,
  blocks: DocumentBlock[],
  limits: ExtractLimits,
  emptyReason: string,
): ExtractedDocument {
  const kept: DocumentBlock[] = [];
  let total = 0;
  for (const block of blocks) {
    if (block.text.trim() === '') continue;
    total += block.text.length;
    if (total > limits.maxTextChars) throw tooLarge(limits);
    kept.push(block);
  }
  if (kept.length === 0) throw new DocumentError('no_text', emptyReason);
  const cleanTitle = title?.replace(/\s+/g, ' ').trim().slice(0, 500) || null;
  return { title: cleanTitle, blocks: kept };
}

/** Plain text: paragraphs are separated by blank lines; a paragraph keeps its own line breaks. */
export function plainTextBlocks(text: string): DocumentBlock[] {
  return text
    .replace(/\r\n?/g, '\n')
    .split(/\n[ \t]*\n/)
    .map((paragraph) => paragraph.trim())
    .filter(Boolean)
    .map((paragraph) => ({ kind: 'paragraph', text: paragraph }));
}
