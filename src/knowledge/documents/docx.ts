import { htmlBlocks } from './html.js';
import { DocumentError, type DocumentBlock, type ExtractLimits } from './types.js';
import { checkZip } from './zip.js';

const CORE_PROPERTIES = 'docProps/core.xml';

/**
 * DOCX through mammoth, which turns Word's styles into HTML (Heading 1 into <h1>, tables into
 * <table>), then the HTML block walker, so headings and tables survive as blocks. The zip bomb guard
 * runs first: mammoth inflates parts whole, with no limit of its own.
 */
export async function docxBlocks(bytes: Uint8Array, limits: ExtractLimits): Promise<{ title: string | null; blocks: DocumentBlock[] }> {
  const kept = checkZip(bytes, limits, new Set([CORE_PROPERTIES]));
  const { default: mammoth } = await import('mammoth');
  let html: string;
  try {
    // Images are no text: mammoth would otherwise inline each as a base64 data URI.
    const convertImage = mammoth.images.imgElement(async () => ({ src: '' }));
    html = (await mammoth.convertToHtml({ buffer: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) }, { convertImage })).value;
  } catch {
    throw new DocumentError(
      'malformed_document',
      'the file is not a DOCX document that can be read (it has no word/document.xml, or one too damaged or deeply nested to read)',
    );
  }
  const { blocks } = await htmlBlocks(html, { readability: false });
  return { title: coreTitle(kept.get(CORE_PROPERTIES)) ?? blocks.find((block) => block.kind === 'heading')?.text ?? null, blocks };
}

/** The document's title from its core properties (<dc:title>), if it has one. */
function coreTitle(xml: Uint8Array | undefined): string | null {
  if (!xml) return null;
  const match = /<dc:title>([^<]{1,1000})<\/dc:title>/.exec(new TextDecoder().decode(xml));
  if (!match) return null;
  return (
    match[1]!
      .replace(/&lt;/g, '<')
      .replace(/&gt;/g, '>')
      .replace(/&quot;/g, '"')
      .replace(/&apos;/g, "'")
      .replace(/&amp;/g, '&')
      .trim() || null
  );
}
