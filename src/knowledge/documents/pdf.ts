import { DocumentError, type DocumentBlock, type ExtractLimits } from './types.js';
import { tooLarge } from './text.js';

/**
 * A PDF's text layer through unpdf (pdf.js built for servers), page by page so the page and text
 * limits stop the work early. Each page's text is one or more paragraphs: lines joined by spaces (a
 * PDF's line breaks are layout, not meaning), words hyphenated across lines joined again.
 */
export async function pdfBlocks(bytes: Uint8Array, limits: ExtractLimits): Promise<{ title: string | null; blocks: DocumentBlock[] }> {
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
