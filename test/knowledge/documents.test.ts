import { describe, expect, it } from 'vitest';
import {
  DocumentError,
  type DocumentErrorCode,
  documentFormat,
  type ExtractLimits,
  extractDocument,
} from '../../src/knowledge/documents/index.js';
import { deflatedZeros, docxSample, pdfSample, wParagraph, wTable, zipSample } from '../fixtures/knowledge/samples.js';

const limits: ExtractLimits = { maxTextChars: 2_000_000, maxUnpackedBytes: 20 * 1024 * 1024, maxPages: 50 };
const utf8 = (text: string) => new TextEncoder().encode(text);
const read = (text: string | Uint8Array, mediaType: string, filename?: string, custom: Partial<ExtractLimits> = {}) =>
  extractDocument({ bytes: typeof text === 'string' ? utf8(text) : text, mediaType, filename }, { ...limits, ...custom });

/** The DocumentError a read fails with (a test fails if it succeeds or fails otherwise). */
async function failure(promise: Promise<unknown>): Promise<{ code: DocumentErrorCode; message: string }> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof DocumentError) return { code: error.code, message: error.message };
    throw error;
  }
  throw new Error('the document was read, yet it should have failed');
}

describe('which reader a document gets', () => {
  it('by media type (parameters and case aside), and by extension only when the type is generic', () => {
    expect(documentFormat('text/markdown; charset=utf-8')).toBe('markdown');
    expect(documentFormat('TEXT/HTML')).toBe('html');
    expect(documentFormat('application/vnd.openxmlformats-officedocument.wordprocessingml.document')).toBe('docx');
    expect(documentFormat('application/ld+json')).toBe('json');
    expect(documentFormat('application/octet-stream', 'notes.MD')).toBe('markdown');
    expect(documentFormat('application/octet-stream', 'report.pdf')).toBe('pdf');
    expect(documentFormat('', 'data.tsv')).toBe('tsv');
    expect(documentFormat('application/octet-stream', 'archive.zip')).toBeNull();
    // Windows browsers send a .csv as Excel's type; a real .xls stays unread.
    expect(documentFormat('application/vnd.ms-excel', 'export.CSV')).toBe('csv');
    expect(documentFormat('application/vnd.ms-excel', 'sheet.xls')).toBeNull();
    expect(documentFormat('text/x-csv')).toBe('csv');
    // A specific type is believed over the file's name.
    expect(documentFormat('image/png', 'notes.md')).toBeNull();
  });

  it('an unknown type fails as unsupported_media_type, naming it and the formats read', async () => {
    const error = await failure(read('x', 'image/png', 'scan.png'));
    expect(error.code).toBe('unsupported_media_type');
    expect(error.message).toContain('image/png (scan.png) cannot be read');
    expect(error.message).toContain('PDF, DOCX');
  });
});

describe('plain text', () => {
  it('paragraphs at blank lines, each keeping its line breaks; no title', async () => {
    const doc = await read('\uFEFFFirst line\nsame paragraph\r\n\r\n  \nSecond paragraph.\n', 'text/plain');
    expect(doc).toEqual({
      title: null,
      blocks: [
        { kind: 'paragraph', text: 'First line\nsame paragraph' },
        { kind: 'paragraph', text: 'Second paragraph.' },
      ],
    });
  });

  it('invalid UTF-8 is invalid_encoding, not replacement characters; a named charset is honoured', async () => {
    const bytes = new Uint8Array([0x48, 0x69, 0x20, 0xc3, 0x28, 0x0a]);
    expect(await failure(read(bytes, 'text/plain'))).toEqual({ code: 'invalid_encoding', message: 'the document is not valid UTF-8 text' });
    expect(await failure(read(bytes, 'text/markdown'))).toMatchObject({ code: 'invalid_encoding' });
    expect(await failure(read(bytes, 'text/html'))).toMatchObject({ code: 'invalid_encoding' });
    expect(await failure(read(bytes, 'text/csv'))).toMatchObject({ code: 'invalid_encoding' });
    const latin1 = new Uint8Array([0x43, 0x61, 0x66, 0xe9]);
    expect((await read(latin1, 'text/plain; charset=ISO-8859-1')).blocks).toEqual([{ kind: 'paragraph', text: 'Café' }]);
    expect(await failure(read('x', 'text/plain; charset=klingon'))).toMatchObject({ code: 'unsupported_media_type' });
  });

  it('the encoding follows a byte order mark, then the media type, then (HTML) the page’s own declaration', async () => {
    const utf16 = new Uint8Array([0xff, 0xfe, ...[...'Grüße'].flatMap((char) => [char.charCodeAt(0), 0])]);
    expect((await read(utf16, 'text/plain')).blocks).toEqual([{ kind: 'paragraph', text: 'Grüße' }]);
    const declared = new Uint8Array([
      ...utf8('<html><head><meta charset="windows-1252"><title>T</title></head><body><p>Caf'),
      0xe9,
      ...utf8('</p></body></html>'),
    ]);
    expect((await read(declared, 'text/html')).blocks).toEqual([{ kind: 'paragraph', text: 'Café' }]);
    const httpEquiv = new Uint8Array([
      ...utf8('<meta http-equiv="Content-Type" content="text/html; charset=ISO-8859-1"><p>na'),
      0xef,
      ...utf8('ve</p>'),
    ]);
    expect((await read(httpEquiv, 'text/html')).blocks).toEqual([{ kind: 'paragraph', text: 'naïve' }]);
    // The media type's charset wins over the page's; a page declaring nothing is UTF-8.
    expect(await failure(read(declared, 'text/html; charset=utf-8'))).toMatchObject({ code: 'invalid_encoding' });
    expect(await failure(read(new Uint8Array([...utf8('<p>Caf'), 0xe9, ...utf8('</p>')]), 'text/html'))).toMatchObject({
      code: 'invalid_encoding',
    });
    // The declaration is HTML's alone: in Markdown it is text.
    expect(await failure(read(declared, 'text/markdown'))).toMatchObject({ code: 'invalid_encoding' });
  });

  it('empty or blank text is no_text; text past the limit is document_too_large', async () => {
    expect(await failure(read(' \n\n\t\n', 'text/plain'))).toEqual({ code: 'no_text', message: 'the document holds no text' });
    expect(await failure(read('x'.repeat(101), 'text/plain', undefined, { maxTextChars: 100 }))).toEqual({
      code: 'document_too_large',
      message: "the document's text is over the limit of 100 characters",
    });
  });

  it('a 10 MB single line is read in one pass', async () => {
    const doc = await read('word '.repeat(2_000_000), 'text/plain', undefined, { maxTextChars: 20_000_000 });
    expect(doc.blocks).toHaveLength(1);
    expect(doc.blocks[0]!.text.length).toBe(9_999_999);
  });
});

describe('Markdown', () => {
  it('headings, paragraphs, lists, code fences and pipe tables become blocks; inline markup becomes text', async () => {
    const markdown = [
      '---',
      'title: "Handbook"',
      'tags: [a]',
      '---',
      '# Returns *policy*',
      '',
      'Items may be **returned** within [30 days](https://example.com/returns "terms")',
      'of purchase, with a `receipt`. snake_case_name stays.',
      '',
      '## Steps ##',
      '',
      '- pack the item',
      '- print the label',
      '  - keep a copy',
      '1. drop it off',
      '',
      '```sh',
      'ship --label 42',
      '',
      '# not a heading',
      '```',
      '',
      '| Region | Days |',
      '|:-------|-----:|',
      '| EU \\| UK | 30 |',
      '| US | 14 |',
      '',
      'Setext heading',
      '--------------',
      '',
      '> quoted',
      '> > deeper',
      '',
      '***',
      '',
      '    indented code',
      '',
      'Last <b>bold</b> line.',
    ].join('\n');
    const doc = await read(markdown, 'text/markdown');
    expect(doc.title).toBe('Handbook');
    expect(doc.blocks).toEqual([
      { kind: 'heading', level: 1, text: 'Returns policy' },
      { kind: 'paragraph', text: 'Items may be returned within 30 days of purchase, with a receipt. snake_case_name stays.' },
      { kind: 'heading', level: 2, text: 'Steps' },
      { kind: 'list', text: '- pack the item\n- print the label\n  - keep a copy\n1. drop it off' },
      { kind: 'code', text: 'ship --label 42\n\n# not a heading' },
      { kind: 'table', text: 'Region | Days\nEU / UK | 30\nUS | 14' },
      { kind: 'heading', level: 2, text: 'Setext heading' },
      { kind: 'paragraph', text: 'quoted deeper' },
      { kind: 'code', text: 'indented code' },
      { kind: 'paragraph', text: 'Last bold line.' },
    ]);
  });

  it('the title is the first heading without front matter', async () => {
    expect((await read('intro\n\n## First\n\n# Second', 'text/markdown')).title).toBe('First');
  });

  it('hostile Markdown (10,000 nested quotes, 3,000 list levels, a table of 20,000 columns, unclosed markup) is read without recursion or backtracking', async () => {
    const quotes = await read(`${'> '.repeat(10_000)}deep`, 'text/markdown');
    expect(quotes.blocks).toEqual([{ kind: 'paragraph', text: 'deep' }]);
    const lists = await read(
      Array.from({ length: 3_000 }, (_, level) => `${' '.repeat(level * 2)}- level ${level}`).join('\n'),
      'text/markdown',
      undefined,
      {
        maxTextChars: 20_000_000,
      },
    );
    expect(lists.blocks).toHaveLength(1);
    expect(lists.blocks[0]!.text.split('\n')).toHaveLength(3_000);
    const wide = await read(
      `|${' a |'.repeat(20_000)}\n|${'---|'.repeat(20_000)}\n${`|${' b |'.repeat(20_000)}\n`.repeat(20)}`,
      'text/markdown',
    );
    expect(wide.blocks).toHaveLength(1);
    expect(wide.blocks[0]!.kind).toBe('table');
    expect(wide.blocks[0]!.text.split('\n')).toHaveLength(21);
    const unclosed = await read(
      `${'['.repeat(50_000)}x${'*a'.repeat(50_000)}${'`'.repeat(50_000)}${'<div'.repeat(20_000)}`,
      'text/markdown',
    );
    expect(unclosed.blocks).toHaveLength(1);
    const fence = await read(`\`\`\`\n${'code\n'.repeat(100_000)}`, 'text/markdown');
    expect(fence.blocks).toHaveLength(1);
    expect(fence.blocks[0]!.text === 'code\n'.repeat(100_000).slice(0, -1)).toBe(true);
  });
});

describe('HTML', () => {
  const article = (extra = '') =>
    '<!doctype html><html><head><title>Shipping guide</title><style>.x { color: red }</style><script>var secret = "script text";</script></head>' +
    '<body><nav><a href="/">Home</a> <a href="/about">About us</a></nav>' +
    '<main><article><h1>Shipping</h1>' +
    `<p>Parcels leave the warehouse every weekday morning. ${'Orders placed before noon ship the same day. '.repeat(6)}</p>` +
    '<h2>Rates</h2><p>Rates depend on weight and distance, as the table below shows for the common cases.</p>' +
    '<table><thead><tr><th>Weight</th><th>Price</th></tr></thead><tbody><tr><td>1 kg</td><td>4 | 5 EUR</td></tr><tr><td>5 kg</td><td>9 EUR</td></tr></tbody></table>' +
    '<ul><li>Tracked</li><li>Insured<ul><li>up to 500 EUR</li></ul></li></ul><ol><li>first</li><li>second</li></ol>' +
    '<pre>curl https://example.com/track\n  --id 7</pre>' +
    `<script>document.write("never text")</script>${extra}</article></main>` +
    '<footer>Copyright footer</footer></body></html>';

  it('the main content through Readability: title, headings, paragraphs, lists, tables, pre; never scripts, styles or navigation', async () => {
    const doc = await read(article(), 'text/html');
    expect(doc.title).toBe('Shipping guide');
    const kinds = doc.blocks.map((block) => block.kind);
    // Readability drops a first heading that repeats the page's title ("Shipping" in "Shipping guide").
    expect(kinds).toEqual(['paragraph', 'heading', 'paragraph', 'table', 'list', 'list', 'code']);
    expect(doc.blocks.find((block) => block.kind === 'table')!.text).toBe('Weight | Price\n1 kg | 4 / 5 EUR\n5 kg | 9 EUR');
    expect(doc.blocks.filter((block) => block.kind === 'list').map((block) => block.text)).toEqual([
      '- Tracked\n- Insured\n  - up to 500 EUR',
      '1. first\n2. second',
    ]);
    expect(doc.blocks.find((block) => block.kind === 'code')!.text).toBe('curl https://example.com/track\n  --id 7');
    const text = doc.blocks.map((block) => block.text).join('\n');
    for (const absent of ['script text', 'never text', 'color: red', 'About us', 'Copyright footer']) expect(text).not.toContain(absent);
  });

  it('a page too large or too deep for Readability is read whole, without furniture, scripts or styles; 9,000 nested divs do not reach the stack', async () => {
    const deep = `<html><head><title>Deep</title></head><body><nav>menu</nav>${'<div>'.repeat(9_000)}<h2>Bottom</h2><p>found it</p><script>x()</script>${'</div>'.repeat(9_000)}</body></html>`;
    const doc = await read(deep, 'text/html');
    expect(doc).toEqual({
      title: 'Deep',
      blocks: [
        { kind: 'heading', level: 2, text: 'Bottom' },
        { kind: 'paragraph', text: 'found it' },
      ],
    });
  });

  it('a nesting bomb (50,000 unclosed elements, which the parser would take seconds over) is refused before parsing', async () => {
    const bomb = `<html><body>${'<div><span>'.repeat(25_000)}x</body></html>`;
    expect(await failure(read(bomb, 'text/html'))).toEqual({
      code: 'malformed_document',
      message: 'the HTML nests elements about 50000 deep, past the 10000 a page can be read at',
    });
    // Elements whose end tags are implied, void and self-closed ones nest nothing.
    const flat = `<html><body>${'<p>para<li>item<br><img src=x><hr/><x-icon/>'.repeat(20_000)}</body></html>`;
    expect((await read(flat, 'text/html')).blocks.length).toBeGreaterThan(0);
  });

  it('a page past the Readability limit is read in one pass: its <main>, without cookie notices, sidebars or ARIA navigation', async () => {
    const filler = Array.from({ length: 1600 }, (_, index) => `<span>cell ${index}</span>`).join(' ');
    const page =
      '<html><head><title>Big page</title></head><body><div class="cookie-banner">We use cookies</div>' +
      '<div role="navigation">Menu entries</div><div class="layout has-sidebar"><div id="sidebar-left">Popular posts</div>' +
      `<main><h1>Report</h1><p>The main finding.</p><div class="share-bar">Share this</div><p>${filler}</p></main></div>` +
      '<footer>Copyright</footer></body></html>';
    const doc = await read(page, 'text/html');
    expect(doc.title).toBe('Big page');
    expect(doc.blocks.slice(0, 2)).toEqual([
      { kind: 'heading', level: 1, text: 'Report' },
      { kind: 'paragraph', text: 'The main finding.' },
    ]);
    expect(doc.blocks).toHaveLength(3);
    expect(doc.blocks[2]!.text).toMatch(/^cell 0 cell 1 .* cell 1599$/);
    // Without a <main>, the body, furniture left out; a page whose every part looks like furniture is read whole.
    const noMain = await read(page.replace('<main>', '<div>').replace('</main>', '</div>'), 'text/html');
    const text = noMain.blocks.map((block) => block.text).join('\n');
    for (const absent of ['We use cookies', 'Menu entries', 'Popular posts', 'Share this', 'Copyright']) expect(text).not.toContain(absent);
    expect(text).toContain('The main finding.');
    const allFurniture = await read(
      `<html><body><aside>Only an aside</aside>${filler}</body></html>`.replace(filler, `<nav>${filler}</nav>`),
      'text/html',
    );
    expect(allFurniture.blocks.map((block) => block.text).join(' ')).toContain('Only an aside');
  });

  it('a fragment without html or body, text between blocks as paragraphs, and a page of only scripts (no_text)', async () => {
    const doc = await read('Loose text <b>bold</b><br>next<div>in a div</div><p>para</p> tail', 'text/html');
    expect(doc.blocks.map((block) => block.text)).toEqual(['Loose text bold', 'next', 'in a div', 'para', 'tail']);
    expect(await failure(read('<html><head><script>a()</script></head><body><style>p{}</style></body></html>', 'text/html'))).toEqual({
      code: 'no_text',
      message: 'the page holds no text outside scripts, styles and markup',
    });
  });

  it('a page whose source is many times the text limit is refused before parsing', async () => {
    expect(await failure(read(`<p>${'<b></b>'.repeat(100)}</p>`, 'text/html', undefined, { maxTextChars: 100 }))).toMatchObject({
      code: 'document_too_large',
    });
  });
});

describe('PDF', () => {
  it('the text layer page by page, lines joined, hyphenation undone; the title from the metadata', async () => {
    const pdf = pdfSample(
      [
        ['The warranty covers parts', 'and labour for two years.'],
        ['Claims need the serial num-', 'ber and a receipt (dated).'],
      ],
      {
        title: 'Warranty terms',
      },
    );
    const doc = await read(pdf, 'application/pdf');
    expect(doc).toEqual({
      title: 'Warranty terms',
      blocks: [
        { kind: 'paragraph', text: 'The warranty covers parts and labour for two years.' },
        { kind: 'paragraph', text: 'Claims need the serial number and a receipt (dated).' },
      ],
    });
  });

  it('a PDF with no text layer (scanned pages) is no_text with a reason a person understands', async () => {
    const error = await failure(read(pdfSample([null, null]), 'application/pdf'));
    expect(error.code).toBe('no_text');
    expect(error.message).toContain('no text layer');
    expect(error.message).toContain('OCR');
  });

  it('a decompression bomb (a page of 300 MB of deflated white space in 300 KB) is refused before pdf.js inflates it', async () => {
    // A small one passes: the guard counts, it does not refuse compression.
    expect((await read(pdfSample([null, ['Real text.']], { bombBytes: 1000 }), 'application/pdf')).blocks).toEqual([
      { kind: 'paragraph', text: 'Real text.' },
    ]);
    const bomb = pdfSample([null, ['Real text.']], { bombBytes: 300 * 1024 * 1024 });
    expect(bomb.length).toBeLessThan(400 * 1024);
    const rssBefore = process.memoryUsage().rss;
    expect(await failure(read(bomb, 'application/pdf'))).toEqual({
      code: 'document_too_large',
      message: `the PDF's compressed contents unpack to over ${limits.maxUnpackedBytes} bytes (the limit for a compressed document's contents)`,
    });
    // pdf.js, left to it, held 650 MB.
    expect(process.memoryUsage().rss - rssBefore).toBeLessThan(100 * 1024 * 1024);
    // Many tiny compressed streams, each cheap to write and dear to inflate, are refused by count.
    const tiny = `%PDF-1.4\n${'1 0 obj << /Length 5 >> stream\nx\u009cxxx\nendstream\n'.repeat(20_001)}`;
    expect(await failure(read(new Uint8Array(Buffer.from(tiny, 'latin1')), 'application/pdf'))).toEqual({
      code: 'document_too_large',
      message: 'the PDF holds over 20000 compressed streams',
    });
  });

  it('pages past the limit are document_too_large; text past the limit too; a damaged file is malformed_document', async () => {
    expect(await failure(read(pdfSample([['a'], ['b'], ['c']]), 'application/pdf', undefined, { maxPages: 2 }))).toEqual({
      code: 'document_too_large',
      message: 'the PDF has 3 pages, over the limit of 2',
    });
    expect(
      await failure(read(pdfSample([['x'.repeat(80)], ['y'.repeat(80)]]), 'application/pdf', undefined, { maxTextChars: 100 })),
    ).toMatchObject({
      code: 'document_too_large',
    });
    expect(await failure(read('%PDF-1.4\nnot really', 'application/pdf'))).toEqual({
      code: 'malformed_document',
      message: 'the file is not a PDF that can be read (its structure is damaged or it is not a PDF)',
    });
  });
});

describe('DOCX', () => {
  it('headings and tables survive (through mammoth and the HTML walker); the title from the core properties', async () => {
    const body =
      wParagraph('Travel policy', 'Heading1') +
      wParagraph('Staff book travel through the portal.') +
      wParagraph('Allowances', 'Heading2') +
      wTable([
        ['City', 'Per day'],
        ['Oslo', '90 EUR'],
      ]) +
      wParagraph('Receipts are kept for seven years.');
    const doc = await read(
      docxSample(body, { title: 'Travel &amp; expenses' }),
      'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
    );
    expect(doc).toEqual({
      title: 'Travel & expenses',
      blocks: [
        { kind: 'heading', level: 1, text: 'Travel policy' },
        { kind: 'paragraph', text: 'Staff book travel through the portal.' },
        { kind: 'heading', level: 2, text: 'Allowances' },
        { kind: 'table', text: 'City | Per day\nOslo | 90 EUR' },
        { kind: 'paragraph', text: 'Receipts are kept for seven years.' },
      ],
    });
  });

  it('read by extension when uploaded as application/octet-stream; the first heading is the title without core properties', async () => {
    const doc = await read(
      docxSample(wParagraph('Only heading', 'Heading1') + wParagraph('text')),
      'application/octet-stream',
      'memo.docx',
    );
    expect(doc.title).toBe('Only heading');
  });

  it('a zip bomb (300 MB of document.xml in 300 KB) is refused before inflating, whether its header says so or lies', async () => {
    const bomb = deflatedZeros(300 * 1024 * 1024);
    expect(bomb.bytes.length).toBeLessThan(400 * 1024);
    for (const declaredSize of [undefined, 1000]) {
      const docx = docxSample('', { documentXml: { name: 'word/document.xml', data: '', deflated: bomb, declaredSize } });
      const rssBefore = process.memoryUsage().rss;
      const error = await failure(read(docx, 'application/vnd.openxmlformats-officedocument.wordprocessingml.document'));
      expect(error).toEqual({
        code: 'document_too_large',
        message: `the document unpacks to over ${limits.maxUnpackedBytes} bytes (the limit for a compressed document's contents)`,
      });
      // Refused with little memory: far less than the 300 MB the part expands to.
      expect(process.memoryUsage().rss - rssBefore).toBeLessThan(100 * 1024 * 1024);
    }
  });

  it('an entity expansion bomb (a billion laughs) in document.xml is malformed_document, not expanded', async () => {
    let entities = '<!ENTITY a0 "lol">';
    for (let level = 1; level <= 9; level++) entities += `<!ENTITY a${level} "${`&a${level - 1};`.repeat(10)}">`;
    const xml = `<?xml version="1.0" encoding="UTF-8"?><!DOCTYPE w:document [${entities}]><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>&a9;</w:t></w:r></w:p></w:body></w:document>`;
    const docx = docxSample('', { documentXml: { name: 'word/document.xml', data: xml } });
    expect(await failure(read(docx, 'application/octet-stream', 'laughs.docx'))).toMatchObject({ code: 'malformed_document' });
  });

  it('not a zip, a zip without a document, a damaged part: malformed_document', async () => {
    const type = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
    expect(await failure(read('PK but not a zip', type))).toEqual({
      code: 'malformed_document',
      message: 'the file is not a readable zip archive (a DOCX file is one)',
    });
    expect(await failure(read(zipSample([{ name: 'hello.txt', data: 'hi' }]), type))).toMatchObject({ code: 'malformed_document' });
    const damaged = docxSample('', {
      documentXml: { name: 'word/document.xml', data: '', deflated: { bytes: new Uint8Array([0xff, 0xff, 0xff]), size: 10 } },
    });
    expect(await failure(read(damaged, type))).toEqual({
      code: 'malformed_document',
      message: 'the file is not a readable zip archive (its part word/document.xml is damaged)',
    });
  });
});

describe('CSV and JSON', () => {
  it('CSV: the header row and rows in table blocks of 20, each repeating the header; quoted fields with commas, quotes and line breaks', async () => {
    const rows = Array.from({ length: 45 }, (_, index) => `item ${index},${index * 2}`);
    const csv = `name,"notes, quoted"\r\n"Widget, large","says ""hi""\nover two lines"\r\n\r\n${rows.join('\n')}\n`;
    const doc = await read(csv, 'text/csv');
    expect(doc.blocks).toHaveLength(3);
    expect(doc.blocks.every((block) => block.kind === 'table' && block.text.startsWith('name | notes, quoted\n'))).toBe(true);
    expect(doc.blocks[0]!.text.split('\n')).toHaveLength(21);
    expect(doc.blocks[0]!.text.split('\n')[1]).toBe('Widget, large | says "hi" over two lines');
    expect(doc.blocks[2]!.text.split('\n').slice(1)).toEqual([
      'item 39 | 78',
      'item 40 | 80',
      'item 41 | 82',
      'item 42 | 84',
      'item 43 | 86',
      'item 44 | 88',
    ]);
    expect((await read('a\tb\n1\t2', 'text/tab-separated-values')).blocks).toEqual([{ kind: 'table', text: 'a | b\n1 | 2' }]);
    expect(await failure(read('a,b\n"open,2\n3,4', 'text/csv'))).toEqual({
      code: 'malformed_document',
      message: 'the CSV has a quoted field opened on line 2 that never closes',
    });
  });

  it('JSON: `path: value` lines, one block per top-level entry; invalid JSON is malformed_document', async () => {
    const doc = await read(
      JSON.stringify({ product: { name: 'Zelbrin', sizes: [1, { cm: 20 }], tags: [] }, 'odd key': 'multi\nline', ok: true }),
      'application/json',
    );
    expect(doc.blocks).toEqual([
      { kind: 'list', text: 'product.name: Zelbrin\nproduct.sizes[0]: 1\nproduct.sizes[1].cm: 20\nproduct.tags: []' },
      { kind: 'list', text: '["odd key"]: multi line' },
      { kind: 'list', text: 'ok: true' },
    ]);
    expect((await read('[{"a":1},{"a":2}]', 'application/json')).blocks.map((block) => block.text)).toEqual(['[0].a: 1', '[1].a: 2']);
    const invalid = await failure(read('{"a": 1,,}', 'application/json'));
    expect(invalid.code).toBe('malformed_document');
    expect(invalid.message).toMatch(/^the document is not valid JSON \(/);
    expect(await failure(read('[]', 'application/json'))).toEqual({ code: 'no_text', message: 'the JSON holds no values' });
  });

  it('JSON nested 10,000 arrays deep is read without recursion; one whose paths outgrow the limit stops early', async () => {
    const deep = await read(`${'['.repeat(10_000)}"bottom"${']'.repeat(10_000)}`, 'application/json');
    expect(deep.blocks).toHaveLength(1);
    expect(deep.blocks[0]!.text === `${'[0]'.repeat(10_000)}: bottom`).toBe(true);
    const wide = `${'['.repeat(5_000)}${'1,'.repeat(10_000)}1${']'.repeat(5_000)}`;
    expect(await failure(read(wide, 'application/json', undefined, { maxTextChars: 100_000 }))).toMatchObject({
      code: 'document_too_large',
    });
  });
});
