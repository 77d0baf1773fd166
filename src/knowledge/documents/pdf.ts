import { Unzlib } from 'fflate';
import { tooLarge } from './text.js';
import { DocumentError, type DocumentBlock, type ExtractLimits } from './types.js';

/**
 * A PDF's text layer through unpdf (pdf.js built for servers), page by page so the page and text
 * limits stop the work early. Each page's text is one or more paragraphs: lines joined by spaces (a
 * PDF's line breaks are layout, not meaning), words hyphenated across lines joined again.
 */
export async function pdfBlocks(bytes: Uint8Array, limits: ExtractLimits): Promise<{ title: string | null; blocks: DocumentBlock[] }> {
  checkStreams(bytes, limits);
  const { getDocumentProxy } = await import('unpdf');
  let pdf: Awaited<ReturnType<typeof getDocumentProxy>>;
  try {
    // pdf.js may detach the buffer it is given; it gets a copy. verbosity 0: its warnings are not ours to log.
    pdf = await getDocumentProxy(bytes.slice(), { verbosity: 0, isEvalSupported: false });
  } catch (error) {
    const name = (error as Error)?.name;
    if (name === 'PasswordException')
      throw new DocumentError('malformed_document', 'the PDF is protected by a password; upload it unlocked');
    throw new DocumentError('malformed_document', 'the file is not a PDF that can be read (its structure is damaged or it is not a PDF)');
  }
  try {
    if (pdf.numPages > limits.maxPages) {
      throw new DocumentError('document_too_large', `the PDF has ${pdf.numPages} pages, over the limit of ${limits.maxPages}`);
    }
    let title: string | null = null;
    try {
      const meta = await pdf.getMetadata();
      const info = meta.info as { Title?: unknown } | undefined;
      if (typeof info?.Title === 'string' && info.Title.trim()) title = info.Title;
    } catch {
      // Damaged metadata costs the title only.
    }
    const blocks: DocumentBlock[] = [];
    let total = 0;
    for (let number = 1; number <= pdf.numPages; number++) {
      const page = await pdf.getPage(number);
      const content = await page.getTextContent();
      const parts: string[] = [];
      for (const item of content.items) {
        if (!('str' in item)) continue;
        parts.push(item.str);
        if (item.hasEOL) parts.push('\n');
      }
      page.cleanup();
      const text = parts.join('');
      total += text.length;
      if (total > limits.maxTextChars) throw tooLarge(limits);
      for (const paragraph of text.split(/\n[ \t]*\n/)) {
        const joined = paragraph
          .replace(/(\p{L})-\n(?=\p{Ll})/gu, '$1')
          .replace(/\s+/g, ' ')
          .trim();
        if (joined) blocks.push({ kind: 'paragraph', text: joined });
      }
    }
    return { title, blocks };
  } catch (error) {
    if (error instanceof DocumentError) throw error;
    throw new DocumentError('malformed_document', 'the PDF could not be read to its end (part of it is damaged)');
  } finally {
    await pdf.destroy();
  }
}

export const PDF_NO_TEXT =
  'the PDF has no text layer (it is probably scanned pages, which are images); run it through OCR (text recognition) and upload the result';

/**
 * A decompression bomb guard, as for DOCX: pdf.js inflates a page's content stream whole (a 300 KB PDF
 * whose page is 300 MB of deflated white space cost it 5 s and 650 MB). Every stream but images (which
 * text extraction never decodes, and which legitimately inflate large) is inflated here first in 1 KiB
 * steps, its output counted and dropped, and the PDF refused once the total passes maxUnpackedBytes.
 * Streams that are not zlib data (other filters, or none) are passed over. A stream's end is its
 * direct /Length, else the next `endstream`.
 */
/**
 * Inflating a stream costs 30-90 µs however small it is, so a file of 300,000 tiny streams would hold
 * the guard for seconds; a 1,000-page PDF holds a few thousand.
 */
const MAX_COMPRESSED_STREAMS = 20_000;

function checkStreams(bytes: Uint8Array, limits: ExtractLimits): void {
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1');
  const keyword = /stream(?:\r\n|\n|\r)/g;
  let total = 0;
  let streams = 0;
  let previousEnd = 0;
  for (let match = keyword.exec(text); match; match = keyword.exec(text)) {
    if (text.slice(match.index - 3, match.index) === 'end') {
      previousEnd = match.index;
      continue;
    }
    const start = match.index + match[0].length;
    // The stream's dictionary: back to its `obj`, within what follows the previous stream (so the
    // look-backs never overlap: one pass over the file, however many `stream` keywords it holds).
    const before = text.slice(Math.max(previousEnd, match.index - 4096), match.index);
    const dictionary = before.slice(Math.max(0, before.lastIndexOf('obj')));
    // A direct length only: `/Length 12 0 R` names another object.
    const direct = /\/Length\s+(\d{1,12})(?!\d)(?!\s+\d+\s+R)/.exec(dictionary);
    let end = direct ? start + Number(direct[1]) : -1;
    if (end < start || end > bytes.length) end = text.indexOf('endstream', start);
    if (end < 0) end = bytes.length;
    keyword.lastIndex = Math.max(keyword.lastIndex, end);
    previousEnd = Math.max(previousEnd, end);
    if (/\/Subtype\s*\/Image\b/.test(dictionary)) continue;
    // Not zlib data (its two-byte header says deflate and checks out): nothing pdf.js could inflate.
    if (end - start < 2 || (bytes[start]! & 0x0f) !== 8 || ((bytes[start]! << 8) | bytes[start + 1]!) % 31 !== 0) continue;
    if (++streams > MAX_COMPRESSED_STREAMS) {
      throw new DocumentError('document_too_large', `the PDF holds over ${MAX_COMPRESSED_STREAMS} compressed streams`);
    }
    const inflate = new Unzlib((chunk) => {
      total += chunk.length;
      if (total > limits.maxUnpackedBytes) {
        throw new DocumentError(
          'document_too_large',
          `the PDF's compressed contents unpack to over ${limits.maxUnpackedBytes} bytes (the limit for a compressed document's contents)`,
        );
      }
    });
    try {
      for (let offset = start; offset < end; offset += 1024)
        inflate.push(bytes.subarray(offset, Math.min(offset + 1024, end)), offset + 1024 >= end);
    } catch (error) {
      if (error instanceof DocumentError) throw error;
      // Not zlib data, or damaged: pdf.js decides what it makes of it.
    }
  }
}
