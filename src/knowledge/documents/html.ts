import { type DocumentBlock, DocumentError } from './types.js';

/**
 * HTML to blocks. A page's main content is found by Mozilla's Readability (the Firefox reader view)
 * over linkedom's DOM; headings, paragraphs, lists, tables and preformatted text become blocks, and
 * scripts, styles and other non-text never reach the text.
 *
 * Readability's cost over linkedom grows faster than the page (about a second for 2,000 elements,
 * seconds for 1,000 nested divs), and it runs on the event loop, so it reads only pages of at most
 * READABILITY_MAX_ELEMENTS elements nested at most READABILITY_MAX_DEPTH deep. Larger pages, and pages
 * where it finds no article, are read in one linear pass: the page's <main> (or its only <article>)
 * if it has one, else its body, with page furniture left out (nav, header, footer, aside, forms,
 * ARIA navigation/banner/complementary/contentinfo regions, and elements whose class or id names a
 * cookie notice, sidebar, share bar, advert...). The walker keeps its own stack, so no depth of
 * nesting reaches the call stack.
 */
const READABILITY_MAX_ELEMENTS = 1500;
const READABILITY_MAX_DEPTH = 32;

/**
 * linkedom's parser costs time in the square of the nesting depth (100,000 nested elements: 5 s;
 * 200,000, a 1 MB page: 44 s), so a page is refused before parsing when its tags would nest past this.
 */
const MAX_DEPTH = 10_000;
/** Void elements, and elements whose end tag parsers imply (an unclosed <p> or <li> nests nothing). */
const NOT_NESTING = new Set(
  'area base br col embed hr img input link meta param source track wbr p li dt dd tr td th thead tbody tfoot option optgroup colgroup caption rp rt html head body'.split(
    ' ',
  ),
);

/**
 * How deep the page's tags nest, counted in one pass over the source without parsing: opening tags
 * less closing ones, leaving out NOT_NESTING and self-closed tags. An estimate (tags inside scripts
 * count too), enough to tell a page from a nesting bomb.
 */
function estimatedDepth(source: string): number {
  let depth = 0;
  let deepest = 0;
  // [^<>]* stops at the next tag's start, so a "<" without a ">" costs no scan to the end.
  const tag = /<(\/?)([A-Za-z][A-Za-z0-9:-]{0,40})[^<>]*>/g;
  for (let match = tag.exec(source); match; match = tag.exec(source)) {
    if (NOT_NESTING.has(match[2]!.toLowerCase())) continue;
    if (match[1]) {
      if (depth > 0) depth--;
    } else if (!match[0].endsWith('/>')) {
      depth++;
      if (depth > deepest) deepest = depth;
    }
  }
  return deepest;
}

// linkedom's DOM types are its own; the walker needs only this much of a node.
interface DomNode {
  nodeType: number;
  nodeName: string;
  textContent: string | null;
  firstChild: DomNode | null;
  nextSibling: DomNode | null;
  parentNode: DomNode | null;
  getAttribute?(name: string): string | null;
}

const ELEMENT = 1;
const TEXT = 3;

/** Upper case whatever the namespace: linkedom keeps SVG's and MathML's names as written. */
function nameOf(node: DomNode): string {
  return node.nodeName.toUpperCase();
}

/** Never text: their content is code, styling or embedded objects. */
const SKIPPED = new Set([
  'SCRIPT',
  'STYLE',
  'NOSCRIPT',
  'TEMPLATE',
  'SVG',
  'MATH',
  'HEAD',
  'IFRAME',
  'OBJECT',
  'EMBED',
  'CANVAS',
  'SELECT',
  'BUTTON',
]);
/** Page furniture, left out when the page is read whole. */
const FURNITURE = new Set(['NAV', 'HEADER', 'FOOTER', 'ASIDE', 'FORM']);
const FURNITURE_ROLES = new Set(['navigation', 'banner', 'complementary', 'contentinfo', 'search', 'dialog', 'alertdialog']);
/** A class or id that starts with one of these words (`sidebar-left`, not `has-sidebar`). */
const FURNITURE_NAMES =
  /^(cookies?|consent|sidebar|share|sharing|social|related|advert|ads?|promo|newsletter|breadcrumbs?|skip-?link)([_-]|$)/i;

/** Whether an element is page furniture rather than content (read only when a page is read whole). */
function isFurniture(node: DomNode, name: string): boolean {
  if (FURNITURE.has(name)) return true;
  const role = node.getAttribute?.('role');
  if (role && FURNITURE_ROLES.has(role.toLowerCase())) return true;
  const names = `${node.getAttribute?.('class') ?? ''} ${node.getAttribute?.('id') ?? ''}`;
  return names.length < 500 && names.split(/\s+/).some((token) => FURNITURE_NAMES.test(token));
}
const HEADINGS: Record<string, number> = { H1: 1, H2: 2, H3: 3, H4: 4, H5: 5, H6: 6 };
/** Elements whose text is one paragraph. */
const PARAGRAPHS = new Set(['P', 'DT', 'DD', 'FIGCAPTION', 'CAPTION', 'SUMMARY', 'ADDRESS']);
/** Elements that break the flow of inline text without being a block of their own. */
const BREAKS = new Set([
  'DIV',
  'SECTION',
  'ARTICLE',
  'MAIN',
  'BODY',
  'BLOCKQUOTE',
  'FIGURE',
  'DL',
  'DETAILS',
  'CENTER',
  'HR',
  'BR',
  'LI',
  'NAV',
  'HEADER',
  'FOOTER',
  'ASIDE',
  'FORM',
  'FIELDSET',
]);

export async function htmlBlocks(
  source: string,
  options: { readability: boolean },
): Promise<{ title: string | null; blocks: DocumentBlock[] }> {
  const depth = estimatedDepth(source);
  if (depth > MAX_DEPTH) {
    throw new DocumentError(
      'malformed_document',
      `the HTML nests elements about ${depth} deep, past the ${MAX_DEPTH} a page can be read at`,
    );
  }
  const { parseHTML } = await import('linkedom');
  // linkedom reads a fragment (no <html>, no <body>) into a tree without a body; a page it is.
  if (!/<(html|body)[\s>]/i.test(source)) source = `<!doctype html><html><body>${source}</body></html>`;
  const { document } = parseHTML(source);
  const pageTitle = (document.querySelector('title')?.textContent ?? '').trim() || null;
  const body = (document.body ?? document.documentElement) as unknown as DomNode | null;
  if (!body) return { title: pageTitle, blocks: [] };

  if (options.readability) {
    const shape = measure(body);
    if (shape.elements <= READABILITY_MAX_ELEMENTS && shape.depth <= READABILITY_MAX_DEPTH) {
      const { Readability } = await import('@mozilla/readability');
      // Readability rewrites the DOM it reads; it gets a copy of its own.
      const article = new Readability(parseHTML(source).document as unknown as Document).parse();
      if (article?.content && (article.textContent ?? '').trim().length >= 100) {
        const content = parseHTML(`<!doctype html><html><body>${article.content}</body></html>`).document;
        const blocks = walkBlocks(content.body as unknown as DomNode, false);
        return { title: article.title?.trim() || pageTitle || firstHeading(blocks), blocks };
      }
    }
  }
  if (!options.readability) {
    const blocks = walkBlocks(body, false);
    return { title: pageTitle || firstHeading(blocks), blocks };
  }
  const mains = document.querySelectorAll('main, [role="main"]');
  const articles = mains.length === 1 ? [] : document.querySelectorAll('article');
  const root = (mains.length === 1 ? mains[0] : articles.length === 1 ? articles[0] : body) as unknown as DomNode;
  let blocks = walkBlocks(root, true);
  // Furniture rules that left nothing were wrong about this page: it is read whole instead.
  if (blocks.length === 0) blocks = walkBlocks(body, false);
  return { title: pageTitle || firstHeading(blocks), blocks };
}

function firstHeading(blocks: DocumentBlock[]): string | null {
  return blocks.find((block) => block.kind === 'heading')?.text ?? null;
}

/** Element count and nesting depth, walked without recursion. */
function measure(root: DomNode): { elements: number; depth: number } {
  let elements = 0;
  let maxDepth = 0;
  walk(root, (node, depth) => {
    if (node.nodeType === ELEMENT) {
      elements++;
      if (depth > maxDepth) maxDepth = depth;
    }
    return true;
  });
  return { elements, depth: maxDepth };
}

/**
 * Depth-first over `root`'s descendants with an explicit position instead of recursion. `visit`
 * answers whether to descend into the node; `leave` is called after a node's descendants.
 */
function walk(root: DomNode, visit: (node: DomNode, depth: number) => boolean, leave?: (node: DomNode) => void): void {
  let node = root.firstChild;
  let depth = 1;
  while (node) {
    if (visit(node, depth) && node.firstChild) {
      node = node.firstChild;
      depth++;
      continue;
    }
    leave?.(node);
    while (node && !node.nextSibling) {
      node = node.parentNode;
      depth--;
      if (!node || node === root) return;
      leave?.(node);
    }
    node = node?.nextSibling ?? null;
  }
}

/** The text of an element, inline, with skipped elements left out (`br` and block edges as spaces). */
function textOf(root: DomNode, preformatted = false): string {
  const parts: string[] = [];
  walk(root, (node) => {
    if (node.nodeType === TEXT) parts.push(node.textContent ?? '');
    else if (node.nodeType === ELEMENT) {
      if (SKIPPED.has(nameOf(node))) return false;
      if (nameOf(node) === 'BR') parts.push('\n');
      else if (!preformatted && (BREAKS.has(nameOf(node)) || PARAGRAPHS.has(nameOf(node)) || nameOf(node) in HEADINGS)) parts.push(' ');
    }
    return true;
  });
  const text = parts.join('');
  return preformatted ? text.replace(/^\n+|\s+$/g, '') : text.replace(/\s+/g, ' ').trim();
}

function tableText(table: DomNode): string {
  const rows: string[] = [];
  const rowsOf = (parent: DomNode) => {
    for (let child = parent.firstChild; child; child = child.nextSibling) {
      if (nameOf(child) === 'TR') {
        const cells: string[] = [];
        for (let cell = child.firstChild; cell; cell = cell.nextSibling) {
          if (nameOf(cell) === 'TD' || nameOf(cell) === 'TH') cells.push(textOf(cell).replace(/\|/g, '/'));
        }
        if (cells.some(Boolean)) rows.push(cells.join(' | '));
      } else if (nameOf(child) === 'THEAD' || nameOf(child) === 'TBODY' || nameOf(child) === 'TFOOT') {
        rowsOf(child);
      }
    }
  };
  rowsOf(table);
  return rows.join('\n');
}

/** A list as lines: one item a line, `- ` or `1. `, nested lists indented two spaces a level. */
function listText(list: DomNode): string {
  const lines: string[] = [];
  let current: string[] | null = null;
  let prefix = '';
  const counters: number[] = [];
  const flush = () => {
    if (current) {
      const text = current.join('').replace(/\s+/g, ' ').trim();
      if (text) lines.push(prefix + text);
    }
    current = null;
    prefix = '';
  };
  const ordered = (node: DomNode) => nameOf(node) === 'OL';
  counters.push(0);
  const kinds: boolean[] = [ordered(list)];
  walk(
    list,
    (node) => {
      if (node.nodeType === TEXT) {
        current ??= [];
        current.push(node.textContent ?? '');
        return false;
      }
      if (node.nodeType !== ELEMENT || SKIPPED.has(nameOf(node))) return false;
      if (nameOf(node) === 'UL' || nameOf(node) === 'OL') {
        flush();
        counters.push(0);
        kinds.push(ordered(node));
      } else if (nameOf(node) === 'LI') {
        flush();
        const level = counters.length - 1;
        counters[level]!++;
        const bullet = kinds[level] ? `${counters[level]}.` : '-';
        prefix = `${'  '.repeat(Math.min(level, 8))}${bullet} `;
        current = [];
      } else if (BREAKS.has(nameOf(node)) || PARAGRAPHS.has(nameOf(node))) {
        current?.push(' ');
      }
      return true;
    },
    (node) => {
      if (nameOf(node) === 'UL' || nameOf(node) === 'OL') {
        flush();
        counters.pop();
        kinds.pop();
      }
    },
  );
  flush();
  return lines.join('\n');
}

/**
 * The blocks of `root` in reading order. Elements that are blocks (headings, paragraphs, lists,
 * tables, pre) are read whole and not descended into; inline text between them gathers into
 * paragraphs that the edges of containers (div, section, li...) end.
 */
function walkBlocks(root: DomNode, dropFurniture: boolean): DocumentBlock[] {
  const blocks: DocumentBlock[] = [];
  let inline: string[] = [];
  const flushInline = () => {
    const text = inline.join('').replace(/\s+/g, ' ').trim();
    if (text) blocks.push({ kind: 'paragraph', text });
    inline = [];
  };
  walk(
    root,
    (node) => {
      if (node.nodeType === TEXT) {
        inline.push(node.textContent ?? '');
        return false;
      }
      if (node.nodeType !== ELEMENT) return false;
      const name = nameOf(node);
      if (SKIPPED.has(name) || (dropFurniture && isFurniture(node, name))) return false;
      const level = HEADINGS[name];
      if (level !== undefined) {
        flushInline();
        blocks.push({ kind: 'heading', level, text: textOf(node) });
        return false;
      }
      if (PARAGRAPHS.has(name)) {
        flushInline();
        blocks.push({ kind: 'paragraph', text: textOf(node) });
        return false;
      }
      if (name === 'UL' || name === 'OL') {
        flushInline();
        blocks.push({ kind: 'list', text: listText(node) });
        return false;
      }
      if (name === 'TABLE') {
        flushInline();
        blocks.push({ kind: 'table', text: tableText(node) });
        return false;
      }
      if (name === 'PRE') {
        flushInline();
        blocks.push({ kind: 'code', text: textOf(node, true) });
        return false;
      }
      if (BREAKS.has(name)) flushInline();
      return true;
    },
    (node) => {
      if (BREAKS.has(nameOf(node))) flushInline();
    },
  );
  flushInline();
  return blocks;
}
