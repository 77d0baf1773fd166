import { docxBlocks } from './docx.js';
import { htmlBlocks } from './html.js';
import { markdownBlocks } from './markdown.js';
import { PDF_NO_TEXT, pdfBlocks } from './pdf.js';
import { csvBlocks, jsonBlocks } from './tabular.js';
import { checkSourceLength, decodeText, finishDocument, plainTextBlocks } from './text.js';
import { DocumentError, type ExtractedDocument, type ExtractLimits } from './types.js';

export { chunkDocument } from './chunk.js';
export * from './types.js';

/** The formats read, by the media type that names each (docs/knowledge.md, "Reading documents"). */
type DocumentFormat = 'text' | 'markdown' | 'html' | 'pdf' | 'docx' | 'csv' | 'tsv' | 'json';

const MEDIA_TYPES: Record<string, DocumentFormat> = {
  'text/plain': 'text',
  'text/markdown': 'markdown',
  'text/x-markdown': 'markdown',
  'text/html': 'html',
  'application/xhtml+xml': 'html',
  'application/pdf': 'pdf',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'docx',
  'text/csv': 'csv',
  'text/x-csv': 'csv',
  'application/csv': 'csv',
  'text/tab-separated-values': 'tsv',
  'application/json': 'json',
  'text/json': 'json',
};

/** Read by file extension when the media type says nothing (application/octet-stream or none). */
const EXTENSIONS: Record<string, DocumentFormat> = {
  txt: 'text',
  text: 'text',
  log: 'text',
  md: 'markdown',
  markdown: 'markdown',
  mdown: 'markdown',
  mkd: 'markdown',
  html: 'html',
  htm: 'html',
  xhtml: 'html',
  pdf: 'pdf',
  docx: 'docx',
  csv: 'csv',
  tsv: 'tsv',
  json: 'json',
};

const GENERIC_MEDIA_TYPES = new Set(['', 'application/octet-stream', 'binary/octet-stream', 'application/x-download']);

/** Which reader a document gets, or null when none reads it. */
export function documentFormat(mediaType: string, filename?: string): DocumentFormat | null {
  const essence = mediaType.split(';')[0]!.trim().toLowerCase();
  const byType = MEDIA_TYPES[essence] ?? (essence.endsWith('+json') ? 'json' : undefined);
  if (byType) return byType;
  const extension = /\.([A-Za-z0-9]{1,10})$/.exec(filename ?? '')?.[1]?.toLowerCase();
  // Windows browsers upload .csv files as Excel's type (the one Excel registers for them).
  if (essence === 'application/vnd.ms-excel' && (extension === 'csv' || extension === 'tsv')) return extension;
  if (!GENERIC_MEDIA_TYPES.has(essence)) return null;
  return (extension && EXTENSIONS[extension]) || null;
}

/**
 * A document's text as structural blocks (headings, paragraphs, lists, code, tables) and its title.
 * Every failure is a DocumentError whose message says, for a person, why the document cannot be
 * indexed; any other error is a fault of this server.
 */
export async function extractDocument(
  input: { bytes: Uint8Array; mediaType: string; filename?: string },
  limits: ExtractLimits,
): Promise<ExtractedDocument> {
  const format = documentFormat(input.mediaType, input.filename);
  if (!format) {
    throw new DocumentError(
      'unsupported_media_type',
      `${input.mediaType || 'a document without a media type'}${input.filename ? ` (${input.filename})` : ''} cannot be read; the formats read are plain text, Markdown, HTML, PDF, DOCX, CSV, TSV and JSON`,
    );
  }
  const empty = 'the document holds no text';
  switch (format) {
    case 'pdf': {
      const { title, blocks } = await pdfBlocks(input.bytes, limits);
      return finishDocument(title, blocks, limits, PDF_NO_TEXT);
    }
    case 'docx': {
      const { title, blocks } = await docxBlocks(input.bytes, limits);
      return finishDocument(title, blocks, limits, empty);
    }
    default:
  }

  const text = decodeText(input.bytes, charsetOf(input.mediaType), { html: format === 'html' });
  switch (format) {
    case 'text':
      checkSourceLength(text, limits);
      return finishDocument(null, plainTextBlocks(text), limits, empty);
    case 'markdown': {
      checkSourceLength(text, limits);
      const { title, blocks } = markdownBlocks(text);
      return finishDocument(title, blocks, limits, empty);
    }
    case 'html': {
      // Markup outweighs text, but a page many times the text limit is not worth parsing to find out.
      if (text.length > limits.maxTextChars * HTML_MARKUP_FACTOR) {
        throw new DocumentError('document_too_large', `the HTML is over ${limits.maxTextChars * HTML_MARKUP_FACTOR} characters of source`);
      }
      const { title, blocks } = await htmlBlocks(text, { readability: true });
      return finishDocument(title, blocks, limits, 'the page holds no text outside scripts, styles and markup');
    }
    case 'csv':
    case 'tsv':
      checkSourceLength(text, limits);
      return finishDocument(null, csvBlocks(text, format === 'csv' ? ',' : '\t'), limits, empty);
    case 'json':
      checkSourceLength(text, limits);
      return finishDocument(null, jsonBlocks(text, limits), limits, 'the JSON holds no values');
  }
}

/** How many times the text limit an HTML page's source may be. */
const HTML_MARKUP_FACTOR = 4;

function charsetOf(mediaType: string): string | null {
  const match = /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(mediaType);
  return match ? match[1]!.toLowerCase() : null;
}
