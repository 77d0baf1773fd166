import type { ChunkOptions, DocumentChunk, ExtractedDocument } from './types.js';

/**
 * Chunks that follow the document's structure (docs/knowledge.md, "Chunking"):
 *
 * - blocks accumulate under the current heading path up to `maxChars`; a heading starts a new chunk,
 *   and its text opens the chunk of the content under it (with any headings above it not yet shown);
 * - a block that does not fit the current chunk but fits an empty one moves whole to the next chunk;
 * - a table longer than a chunk is split by rows, its header row repeated at the top of each piece;
 * - a longer paragraph is split at sentence ends, then at spaces, and a single word longer than a
 *   chunk at the size (lists and code: at line ends first);
 * - a chunk that continues a section starts with the last `overlapChars` of the previous chunk (from a
 *   word boundary), never across a heading and never before a table's repeated header.
 *
 * One pass over the text; the same document and options always give the same chunks.
 */
export function chunkDocument(doc: ExtractedDocument, options: ChunkOptions): DocumentChunk[] {
  const { maxChars, overlapChars } = options;
  if (!Number.isInteger(maxChars) || maxChars < 1) throw new RangeError('maxChars must be a positive integer');
  if (!Number.isInteger(overlapChars) || overlapChars < 0 || overlapChars * 2 > maxChars) {
    throw new RangeError('overlapChars must be an integer from 0 to half of maxChars');
  }
  // Any piece this long fits an empty chunk after the overlap and its line break.
  const pieceBudget = overlapChars > 0 ? maxChars - overlapChars - 1 : maxChars;

  const chunks: DocumentChunk[] = [];
  const path: Array<{ level: number; text: string }> = [];
  /** Headings not yet shown in a chunk's text (all since the last content, empty sections' included: no word is lost). */
  let pending: Array<{ level: number; text: string }> = [];
  let parts: string[] = [];
  let length = 0;
  /** Whether a chunk of the current section has been emitted (the next one may overlap it). */
  let sectionContinues = false;
  let previousText = '';
  /** Whether the current chunk already holds part of the block being placed (joined without a blank line). */
  let blockOpen = false;

  const emit = () => {
    if (length === 0) return;
    previousText = parts.join('');
    chunks.push({ position: chunks.length, text: previousText, headingPath: path.map((heading) => heading.text) });
    parts = [];
    length = 0;
    sectionContinues = true;
    blockOpen = false;
  };
  const append = (separator: string, text: string) => {
    if (length > 0) {
      parts.push(separator);
      length += separator.length;
    }
    parts.push(text);
    length += text.length;
  };

  /** The pending headings' text; any past a chunk's size go into chunks of their own first. */
  const takePendingHeadings = (): string => {
    const pieces = splitText(pending.map((heading) => heading.text).join('\n'), maxChars, 'lines', maxChars);
    pending = [];
    for (const piece of pieces.slice(0, -1)) {
      append('', piece);
      emit();
    }
    return pieces[pieces.length - 1] ?? '';
  };

  /** Starts a chunk for a piece of `pieceLength`: pending headings, or else the overlap, first. */
  const open = (pieceLength: number, overlap: boolean): string => {
    emit();
    if (pending.length > 0) {
      const headings = takePendingHeadings();
      append('', headings);
      if (headings.length + 2 + pieceLength <= maxChars) return '\n\n';
      emit();
      return '';
    }
    if (overlap && sectionContinues && overlapChars > 0) {
      const tail = overlapTail(previousText, overlapChars);
      if (tail && tail.length + 1 + pieceLength <= maxChars) {
        append('', tail);
        return '\n';
      }
    }
    return '';
  };

  /** Places one piece (never longer than pieceBudget): in the current chunk if it fits, else in a new one. */
  const place = (piece: string, separatorInBlock: string, overlap = true) => {
    const separator = blockOpen ? separatorInBlock : '\n\n';
    if (length > 0 && pending.length === 0 && length + separator.length + piece.length <= maxChars) {
      append(separator, piece);
    } else {
      const afterPrefix = open(piece.length, overlap);
      append(afterPrefix, piece);
    }
    blockOpen = true;
  };

  for (const block of doc.blocks) {
    if (block.kind === 'heading') {
      emit();
      while (path.length > 0 && path[path.length - 1]!.level >= block.level) path.pop();
      const heading = { level: block.level, text: block.text };
      path.push(heading);
      pending.push(heading);
      sectionContinues = false;
      continue;
    }
    blockOpen = false;
    const text = block.text;
    // Tables never take the overlap (their header is the context), so a whole chunk is theirs.
    const budget = block.kind === 'table' ? maxChars : pieceBudget;
    if (text.length <= budget || (length > 0 && pending.length === 0 && length + 2 + text.length <= maxChars)) {
      place(text, '\n\n', block.kind !== 'table');
    } else if (block.kind === 'table' && tableHeader(text).length * 2 <= maxChars) {
      // By rows: each piece is the header row and as many rows as fit.
      const [header, ...rows] = text.split('\n');
      const rowBudget = maxChars - header!.length - 1;
      let headerChunk = -1;
      for (const row of rows) {
        const pieces = row.length <= rowBudget ? [row] : splitText(row, rowBudget, 'words', maxChars);
        for (const [index, piece] of pieces.entries()) {
          const separator = index === 0 ? '\n' : ' ';
          // The header is in the current chunk when it was placed there and no chunk was emitted since.
          const headerHere = headerChunk === chunks.length && length > 0 && pending.length === 0;
          if (headerHere && length + separator.length + piece.length <= maxChars) {
            append(separator, piece);
          } else if (piece.length <= rowBudget) {
            place(`${header}\n${piece}`, '\n\n', false);
            headerChunk = chunks.length;
          } else {
            // A word too long to follow the header: the header is shown first, on its own.
            if (!headerHere) {
              place(header!, '\n\n', false);
              headerChunk = chunks.length;
            }
            place(piece, '\n', false);
          }
        }
      }
    } else if (block.kind === 'table') {
      for (const piece of splitText(text, maxChars, 'lines', maxChars)) place(piece, '\n', false);
    } else {
      const separator = block.kind === 'paragraph' ? ' ' : '\n';
      for (const piece of splitText(text, pieceBudget, block.kind === 'paragraph' ? 'sentences' : 'lines', maxChars))
        place(piece, separator);
    }
  }
  emit();
  // Headings with nothing under them at the end still belong to the document.
  if (pending.length > 0) {
    append('', takePendingHeadings());
    emit();
  }
  return chunks;
}

/** A table's header row; one taking half a chunk or more leaves no room to repeat it, and the table goes by lines. */
function tableHeader(text: string): string {
  const end = text.indexOf('\n');
  return end < 0 ? text : text.slice(0, end);
}

/**
 * `text` cut into pieces of at most `budget` characters: at sentence ends (or line ends), packing as
 * many as fit into each piece; a sentence longer than the budget at spaces. A single word longer than
 * the budget is a piece of its own, and only one longer than `wordLimit` (a whole chunk) is cut.
 */
function splitText(text: string, budget: number, by: 'sentences' | 'lines' | 'words', wordLimit: number): string[] {
  const units = by === 'sentences' ? sentences(text) : by === 'lines' ? text.split('\n') : [text];
  const pieces: string[] = [];
  let current = '';
  const joiner = by === 'lines' ? '\n' : ' ';
  const push = (unit: string) => {
    if (current && current.length + joiner.length + unit.length <= budget) current += joiner + unit;
    else {
      if (current) pieces.push(current);
      current = unit;
    }
  };
  for (const unit of units) {
    if (unit.length <= budget) {
      if (unit.trim() || by === 'lines') push(unit);
      continue;
    }
    // A unit longer than the budget, at spaces: pieces are slices of it (one per piece, not one
    // string per word), so a 10 MB line costs one scan.
    if (current) pieces.push(current);
    current = '';
    let pieceStart = -1;
    let pieceEnd = -1;
    const words = /\S+/g;
    for (let match = words.exec(unit); match; match = words.exec(unit)) {
      const wordStart = match.index;
      const wordEnd = wordStart + match[0].length;
      if (pieceStart >= 0 && wordEnd - pieceStart <= budget) {
        pieceEnd = wordEnd;
        continue;
      }
      if (pieceStart >= 0) pieces.push(unit.slice(pieceStart, pieceEnd));
      pieceStart = -1;
      if (wordEnd - wordStart <= wordLimit) {
        pieceStart = wordStart;
        pieceEnd = wordEnd;
        continue;
      }
      // Only a word longer than a whole chunk is cut, never between the halves of a surrogate pair.
      for (let start = wordStart; start < wordEnd; ) {
        let end = Math.min(start + wordLimit, wordEnd);
        if (end < wordEnd && end - start > 1 && /[\uDC00-\uDFFF]/.test(unit[end]!)) end--;
        if (end === wordEnd) {
          pieceStart = start;
          pieceEnd = end;
        } else {
          pieces.push(unit.slice(start, end));
        }
        start = end;
      }
    }
    if (pieceStart >= 0) current = unit.slice(pieceStart, pieceEnd);
  }
  if (current) pieces.push(current);
  return pieces;
}

/** Sentences: cut after `.`, `!` or `?` (and any closing quotes or brackets) followed by white space. */
function sentences(text: string): string[] {
  const result: string[] = [];
  let start = 0;
  for (let index = 0; index < text.length; index++) {
    const char = text[index]!;
    if (char !== '.' && char !== '!' && char !== '?') continue;
    let end = index + 1;
    while (end < text.length && '.!?"\')]»”’'.includes(text[end]!)) end++;
    if (end < text.length && /\s/.test(text[end]!)) {
      result.push(text.slice(start, end));
      while (end < text.length && /\s/.test(text[end]!)) end++;
      start = end;
    }
    index = end - 1;
  }
  if (start < text.length) result.push(text.slice(start));
  return result;
}

/** The last `size` characters of `text`, starting at a word boundary when one is in reach. */
function overlapTail(text: string, size: number): string {
  if (text.length <= size) return text;
  const tail = text.slice(text.length - size);
  const space = tail.search(/\s/);
  return (space >= 0 && space < tail.length - 1 ? tail.slice(space) : tail).trim();
}
