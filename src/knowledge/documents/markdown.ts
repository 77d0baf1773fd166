import type { DocumentBlock } from './types.js';

/**
 * A Markdown reader for search, not for rendering: one pass over the lines, no recursion, every
 * pattern linear, so a hostile document (10,000 nested quotes or list levels, a table of 20,000
 * columns, a 10 MB line) costs time in proportion to its size. General-purpose parsers (marked was
 * tried) nest a call per quote or list level and overflow the stack or the heap on such input.
 *
 * Kept as blocks: ATX and setext headings, paragraphs, lists (one item a line, nesting as indent),
 * fenced and indented code, pipe tables (cells joined by ` | `), block quotes (as paragraphs). Inline
 * markup (emphasis, links, images, code spans, HTML tags, escapes) is reduced to its text.
 */
export function markdownBlocks(source: string): { title: string | null; blocks: DocumentBlock[] } {
  const lines = source.replace(/\r\n?/g, '\n').split('\n');
  const blocks: DocumentBlock[] = [];
  let title: string | null = null;
  let i = 0;

  // YAML front matter: only its title is kept.
  if (lines[0]?.trim() === '---') {
    const end = lines.findIndex((line, index) => index > 0 && index < 200 && (line.trim() === '---' || line.trim() === '...'));
    if (end > 0) {
      for (const line of lines.slice(1, end)) {
        const match = /^title:\s*(.*)$/.exec(line);
        if (match) title = match[1]!.trim().replace(/^(["'])(.*)\1$/, '$2') || null;
      }
      i = end + 1;
    }
  }

  let paragraph: string[] = [];
  const flushParagraph = () => {
    if (paragraph.length > 0) blocks.push({ kind: 'paragraph', text: inlineText(paragraph.join(' ')) });
    paragraph = [];
  };

  while (i < lines.length) {
    const line = lines[i]!;
    if (isBlank(line)) {
      flushParagraph();
      i++;
      continue;
    }

    const fence = /^ {0,3}(`{3,}|~{3,})/.exec(line);
    if (fence) {
      flushParagraph();
      const marker = fence[1]!;
      const code: string[] = [];
      i++;
      while (i < lines.length && !isClosingFence(lines[i]!, marker)) code.push(lines[i++]!);
      i++; // the closing fence (or the end of the document: an unclosed fence runs to it)
      while (code.length > 0 && isBlank(code[code.length - 1]!)) code.pop();
      blocks.push({ kind: 'code', text: code.join('\n') });
      continue;
    }

    const heading = atxHeading(line);
    if (heading) {
      flushParagraph();
      blocks.push({ kind: 'heading', level: heading.level, text: inlineText(heading.text) });
      i++;
      continue;
    }

    // A setext underline turns the paragraph above it into a heading.
    if (paragraph.length > 0 && /^ {0,3}(=+|-+)[ \t]*$/.test(line)) {
      blocks.push({ kind: 'heading', level: line.trim().startsWith('=') ? 1 : 2, text: inlineText(paragraph.join(' ')) });
      paragraph = [];
      i++;
      continue;
    }

    if (isThematicBreak(line)) {
      flushParagraph();
      i++;
      continue;
    }

    const header = i + 1 < lines.length && line.includes('|') ? tableHeader(line, lines[i + 1]!) : null;
    if (header) {
      flushParagraph();
      const rows = [header.join(' | ')];
      i += 2;
      while (i < lines.length && !isBlank(lines[i]!) && !startsOtherBlock(lines[i]!)) {
        rows.push(splitRow(lines[i]!).join(' | '));
        i++;
      }
      blocks.push({ kind: 'table', text: rows.join('\n') });
      continue;
    }

    if (/^ {0,3}>/.test(line)) {
      flushParagraph();
      const quoted: string[] = [];
      while (i < lines.length && !isBlank(lines[i]!) && (/^ {0,3}>/.test(lines[i]!) || quoted.length > 0)) {
        const inner = stripQuoteMarkers(lines[i]!);
        if (!/^ {0,3}>/.test(lines[i]!) && startsOtherBlock(lines[i]!)) break;
        if (inner.trim()) quoted.push(inner.trim());
        i++;
      }
      if (quoted.length > 0) blocks.push({ kind: 'paragraph', text: inlineText(quoted.join(' ')) });
      continue;
    }

    if (listMarker(line)) {
      flushParagraph();
      const items: string[] = [];
      while (i < lines.length) {
        const current = lines[i]!;
        if (isBlank(current)) {
          // A blank line ends the list unless an item or an indented continuation follows it.
          let next = i + 1;
          while (next < lines.length && isBlank(lines[next]!)) next++;
          if (next < lines.length && (listMarker(lines[next]!) || /^( {2,}|\t)/.test(lines[next]!))) {
            i = next;
            continue;
          }
          break;
        }
        const marker = listMarker(current);
        if (marker) {
          items.push(`${' '.repeat(Math.min(marker.indent, 16))}${marker.bullet} ${inlineText(marker.rest)}`);
        } else if (items.length > 0 && !startsOtherBlock(current)) {
          items[items.length - 1] += ` ${inlineText(current.trim())}`;
        } else {
          break;
        }
        i++;
      }
      blocks.push({ kind: 'list', text: items.join('\n') });
      continue;
    }

    // Indented code: four spaces or a tab, not continuing a paragraph.
    if (paragraph.length === 0 && /^( {4}|\t)/.test(line)) {
      const code: string[] = [];
      while (i < lines.length && (/^( {4}|\t)/.test(lines[i]!) || isBlank(lines[i]!))) code.push(lines[i++]!.replace(/^( {4}|\t)/, ''));
      while (code.length > 0 && isBlank(code[code.length - 1]!)) code.pop();
      blocks.push({ kind: 'code', text: code.join('\n') });
      continue;
    }

    paragraph.push(line.trim());
    i++;
  }
  flushParagraph();

  const firstHeading = blocks.find((block) => block.kind === 'heading');
  return { title: title ?? firstHeading?.text ?? null, blocks };
}

function isBlank(line: string): boolean {
  return line.trim() === '';
}

function isClosingFence(line: string, marker: string): boolean {
  const trimmed = line.trim();
  if (!trimmed.startsWith(marker[0]!.repeat(marker.length))) return false;
  for (const char of trimmed) if (char !== marker[0]) return false;
  return line.length - line.trimStart().length <= 3;
}

function atxHeading(line: string): { level: number; text: string } | null {
  const match = /^ {0,3}(#{1,6})(?=[ \t]|$)/.exec(line);
  if (!match) return null;
  let text = line.slice(match[0].length).trim();
  // A closing run of #s (after a space) is decoration.
  let end = text.length;
  while (end > 0 && text[end - 1] === '#') end--;
  if (end === 0 || text[end - 1] === ' ' || text[end - 1] === '\t') text = text.slice(0, end).trim();
  return { level: match[1]!.length, text };
}

function isThematicBreak(line: string): boolean {
  if (line.length > 1000) return false;
  const compact = line.replace(/[ \t]/g, '');
  return compact.length >= 3 && /^(?:-+|\*+|_+)$/.test(compact) && line.length - line.trimStart().length <= 3;
}

function listMarker(line: string): { indent: number; bullet: string; rest: string } | null {
  const match = /^([ \t]*)([-*+]|\d{1,9}[.)])(?:[ \t]+|$)/.exec(line);
  if (!match) return null;
  return { indent: match[1]!.replace(/\t/g, '    ').length, bullet: match[2]!, rest: line.slice(match[0].length) };
}

/** Whether a line inside a paragraph-like run begins a block of another kind, which ends the run. */
function startsOtherBlock(line: string): boolean {
  return /^ {0,3}(`{3,}|~{3,}|#{1,6}(?:[ \t]|$)|>)/.test(line) || isThematicBreak(line);
}

function stripQuoteMarkers(line: string): string {
  let start = 0;
  // A loop rather than a pattern: a line of 10,000 nested markers costs one pass.
  for (;;) {
    while (start < line.length && (line[start] === ' ' || line[start] === '\t')) start++;
    if (line[start] !== '>') break;
    start++;
  }
  return line.slice(start);
}

/** The header cells when `line` and `delimiter` open a pipe table, else null. */
function tableHeader(line: string, delimiter: string): string[] | null {
  if (!delimiter.includes('-')) return null;
  const delimiterCells = splitCells(delimiter);
  if (delimiterCells.length === 0 || !delimiterCells.every((cell) => /^:?-+:?$/.test(cell.trim()))) return null;
  const header = splitRow(line);
  return header.length === delimiterCells.length ? header : null;
}

function splitRow(line: string): string[] {
  // A pipe inside a cell becomes `/`, as in every table block: ` | ` separates cells.
  return splitCells(line).map((cell) => inlineText(cell.trim().replace(/\\\|/g, '/')));
}

/** A row's cells: split on pipes not escaped by a backslash, the outer pipes optional. */
function splitCells(line: string): string[] {
  let text = line.trim();
  if (text.startsWith('|')) text = text.slice(1);
  if (text.endsWith('|') && !text.endsWith('\\|')) text = text.slice(0, -1);
  const cells: string[] = [];
  let start = 0;
  for (let index = 0; index < text.length; index++) {
    if (text[index] === '\\') index++;
    else if (text[index] === '|') {
      cells.push(text.slice(start, index));
      start = index + 1;
    }
  }
  cells.push(text.slice(start));
  return cells;
}

/**
 * Inline markup reduced to text. Each pattern stops at the characters that could start the next
 * match (or at a bounded length), so none of them backtracks over the line.
 */
function inlineText(text: string): string {
  // Most text holds no markup: one scan decides, and the patterns below are skipped.
  if (!/[[\]<>`*_~\\]/.test(text)) return text.replace(/\s+/g, ' ').trim();
  return (
    text
      // images and links keep their text: ![alt](url), [text](url "title"), [text][ref]
      .replace(/!?\[([^[\]\n]{0,1000})\]\([^()\s]{0,2000}(?:[ \t]+"[^"\n]{0,500}")?\)/g, '$1')
      .replace(/!?\[([^[\]\n]{0,1000})\]\[[^[\]\n]{0,200}\]/g, '$1')
      // autolinks keep the address
      .replace(/<((?:https?|mailto):[^<>\s]{1,2000})>/gi, '$1')
      // HTML tags are dropped, their text kept
      .replace(/<\/?[A-Za-z][^<>\n]{0,1000}>/g, '')
      // code spans keep their content (the backticks go; a pattern pairing them backtracks over long runs)
      .replace(/`+/g, '')
      // emphasis markers at the edge of a word (not snake_case's inner underscores)
      .replace(/(^|[\s([{"'])[*_~]+(?=\S)/g, '$1')
      .replace(/([^\s\\])[*_~]+(?=[\s)\]}"'.,;:!?]|$)/g, '$1')
      // backslash escapes
      .replace(/\\([\\`*_{}[\]()#+\-.!|>~<])/g, '$1')
      .replace(/\s+/g, ' ')
      .trim()
  );
}
