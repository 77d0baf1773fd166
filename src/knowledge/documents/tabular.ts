import { DocumentError, type DocumentBlock, type ExtractLimits } from './types.js';
import { tooLarge } from './text.js';

/** Rows per table block: a group small enough to keep its header within a chunk when chunked. */
const CSV_ROWS_PER_BLOCK = 20;

/**
 * CSV (RFC 4180: quoted fields, "" as a quote inside one, line breaks inside quotes) and TSV. The
 * first row is the header; the rows follow in groups of CSV_ROWS_PER_BLOCK, each group a `table` block
 * that repeats the header, so every chunk of the file says what its columns are.
 */
export function csvBlocks(text: string, separator: ',' | '\t'): DocumentBlock[] {
  const rows = parseCsv(text, separator);
  if (rows.length === 0) return [];
  const cell = (value: string) => value.replace(/\s+/g, ' ').trim().replace(/\|/g, '/');
  const header = rows[0]!.map(cell).join(' | ');
  const blocks: DocumentBlock[] = [];
  if (rows.length === 1) return [{ kind: 'table', text: header }];
  for (let start = 1; start < rows.length; start += CSV_ROWS_PER_BLOCK) {
    const group = rows.slice(start, start + CSV_ROWS_PER_BLOCK).map((row) => row.map(cell).join(' | '));
    blocks.push({ kind: 'table', text: [header, ...group].join('\n') });
  }
  return blocks;
}

function parseCsv(text: string, separator: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let index = 0;
  let line = 1;
  const separatorCode = separator.charCodeAt(0);
  const endRow = () => {
    row.push(field);
    field = '';
    // Blank lines are not rows.
    if (row.length > 1 || row[0] !== '') rows.push(row);
    row = [];
  };
  while (index < text.length) {
    const char = text[index]!;
    if (char === '"' && field === '') {
      const start = line;
      index++;
      let closed = false;
      let from = index;
      const pieces: string[] = [];
      while (index < text.length) {
        const next = text.indexOf('"', index);
        if (next < 0) break;
        for (let scan = index; scan < next; scan++) if (text[scan] === '\n') line++;
        if (text[next + 1] === '"') {
          pieces.push(text.slice(from, next + 1));
          index = next + 2;
          from = index;
          continue;
        }
        pieces.push(text.slice(from, next));
        index = next + 1;
        closed = true;
        break;
      }
      if (!closed) throw new DocumentError('malformed_document', `the CSV has a quoted field opened on line ${start} that never closes`);
      field = pieces.join('');
      // Text after the closing quote belongs to the same field (lenient, as spreadsheets are).
      continue;
    }
    if (char === separator) {
      row.push(field);
      field = '';
      index++;
    } else if (char === '\n' || char === '\r') {
      if (char === '\r' && text[index + 1] === '\n') index++;
      endRow();
      line++;
      index++;
    } else {
      // An unquoted run up to the next separator or line end, taken as one slice.
      let end = index + 1;
      while (end < text.length) {
        const code = text.charCodeAt(end);
        if (code === separatorCode || code === 10 || code === 13) break;
        end++;
      }
      field += text.slice(index, end);
      index = end;
    }
  }
  if (field !== '' || row.length > 0) endRow();
  return rows;
}

/**
 * JSON as lines of `path: value` (`a.b[2].c: value`), one block per top-level entry (a key of the root
 * object or an element of the root array), so one record stays together. The walk keeps its own stack
 * (10,000 nested arrays cost no call depth) and stops as soon as the text passes the limit.
 */
export function jsonBlocks(text: string, limits: ExtractLimits): DocumentBlock[] {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new DocumentError('malformed_document', `the document is not valid JSON (${(error as Error).message})`);
  }
  const blocks: DocumentBlock[] = [];
  let total = 0;
  const linesOf = (root: unknown, rootPath: string): string[] => {
    const lines: string[] = [];
    const stack: Array<{ path: string; value: unknown }> = [{ path: rootPath, value: root }];
    while (stack.length > 0) {
      const { path, value: current } = stack.pop()!;
      let line: string | null = null;
      if (Array.isArray(current)) {
        if (current.length === 0) line = `${path || '(root)'}: []`;
        for (let index = current.length - 1; index >= 0; index--) stack.push({ path: `${path}[${index}]`, value: current[index] });
      } else if (current !== null && typeof current === 'object') {
        const keys = Object.keys(current);
        if (keys.length === 0) line = `${path || '(root)'}: {}`;
        for (let index = keys.length - 1; index >= 0; index--) {
          const key = keys[index]!;
          const step = /^[A-Za-z_$][\w$-]*$/.test(key) ? (path ? `.${key}` : key) : `[${JSON.stringify(key)}]`;
          stack.push({ path: `${path}${step}`, value: (current as Record<string, unknown>)[key] });
        }
      } else {
        const shown = typeof current === 'string' ? current.replace(/\s+/g, ' ').trim() : String(current);
        line = path ? `${path}: ${shown}` : shown;
      }
      if (line !== null) {
        total += line.length + 1;
        if (total > limits.maxTextChars) throw tooLarge(limits);
        lines.push(line);
      }
    }
    return lines;
  };
  if (Array.isArray(value) && value.length > 0) {
    for (const [index, element] of value.entries()) blocks.push({ kind: 'list', text: linesOf(element, `[${index}]`).join('\n') });
  } else if (value !== null && typeof value === 'object' && !Array.isArray(value) && Object.keys(value).length > 0) {
    for (const [key, element] of Object.entries(value)) {
      const path = /^[A-Za-z_$][\w$-]*$/.test(key) ? key : `[${JSON.stringify(key)}]`;
      blocks.push({ kind: 'list', text: linesOf(element, path).join('\n') });
    }
  } else if (value === null || typeof value !== 'object') {
    blocks.push({ kind: 'list', text: linesOf(value, '').join('\n') });
  }
  return blocks;
}
