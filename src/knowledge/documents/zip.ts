import { Inflate } from 'fflate';
import { DocumentError, type ExtractLimits } from './types.js';

/**
 * A zip bomb guard for DOCX (and any zip-based format), run BEFORE a library inflates the archive:
 * the sizes the central directory declares are added up, then every entry is inflated in small steps
 * and its real output counted (a forged header can declare less than the data expands to), stopping
 * as soon as the total passes `maxUnpackedBytes`. Output is counted and dropped, never kept, so a
 * bomb costs at most the cap's worth of CPU and a step's worth of memory. Entries named in `keep` are
 * returned whole (small metadata parts).
 */
export function checkZip(bytes: Uint8Array, limits: ExtractLimits, keep: ReadonlySet<string> = new Set()): Map<string, Uint8Array> {
  const entries = centralDirectory(bytes);
  const declared = entries.reduce((sum, entry) => sum + entry.uncompressedSize, 0);
  if (declared > limits.maxUnpackedBytes) throw unpackedTooLarge(limits);

  const kept = new Map<string, Uint8Array>();
  let total = 0;
  for (const entry of entries) {
    const data = entryData(bytes, entry);
    const parts: Uint8Array[] = [];
    const keepIt = keep.has(entry.name);
    const count = (chunk: Uint8Array) => {
      total += chunk.length;
      if (total > limits.maxUnpackedBytes) throw unpackedTooLarge(limits);
      if (keepIt) parts.push(chunk.slice());
    };
    if (entry.method === 0) {
      count(data);
    } else {
      const inflate = new Inflate((chunk) => count(chunk));
      // 1 KiB of deflate expands to at most about 1 MiB, so each step's output stays small.
      const step = 1024;
      try {
        for (let offset = 0; offset < data.length; offset += step) {
          inflate.push(data.subarray(offset, offset + step), offset + step >= data.length);
        }
      } catch (error) {
        if (error instanceof DocumentError) throw error;
        throw new DocumentError('malformed_document', `the file is not a readable zip archive (its part ${entry.name} is damaged)`);
      }
    }
    if (keepIt) kept.set(entry.name, concat(parts));
  }
  return kept;
}

interface ZipEntry {
  name: string;
  method: number;
  compressedSize: number;
  uncompressedSize: number;
  localHeaderOffset: number;
}

const MAX_ENTRIES = 10_000;

function centralDirectory(bytes: Uint8Array): ZipEntry[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const notZip = () => new DocumentError('malformed_document', 'the file is not a readable zip archive (a DOCX file is one)');
  // The end-of-central-directory record: 22 bytes, then a comment of up to 65,535 bytes.
  let end = -1;
  for (let offset = bytes.length - 22; offset >= Math.max(0, bytes.length - 22 - 65_535); offset--) {
    if (view.getUint32(offset, true) === 0x06054b50) {
      end = offset;
      break;
    }
  }
  if (end < 0) throw notZip();
  const count = view.getUint16(end + 10, true);
  const directoryOffset = view.getUint32(end + 16, true);
  if (count > MAX_ENTRIES) throw new DocumentError('document_too_large', `the archive holds over ${MAX_ENTRIES} parts`);
  const entries: ZipEntry[] = [];
  let offset = directoryOffset;
  for (let index = 0; index < count; index++) {
    if (offset + 46 > bytes.length || view.getUint32(offset, true) !== 0x02014b50) throw notZip();
    const nameLength = view.getUint16(offset + 28, true);
    const entry: ZipEntry = {
      method: view.getUint16(offset + 10, true),
      compressedSize: view.getUint32(offset + 20, true),
      uncompressedSize: view.getUint32(offset + 24, true),
      name: new TextDecoder().decode(bytes.subarray(offset + 46, offset + 46 + nameLength)),
      localHeaderOffset: view.getUint32(offset + 42, true),
    };
    // ZIP64 marks sizes past 4 GiB; no document this server reads is near that.
    if (entry.uncompressedSize === 0xffffffff || entry.compressedSize === 0xffffffff) {
      throw new DocumentError('document_too_large', 'the archive declares a part over 4 GiB');
    }
    if (entry.method !== 0 && entry.method !== 8) {
      throw new DocumentError('malformed_document', `the archive's part ${entry.name} uses a compression method other than deflate`);
    }
    entries.push(entry);
    offset += 46 + nameLength + view.getUint16(offset + 30, true) + view.getUint16(offset + 32, true);
  }
  return entries;
}

function entryData(bytes: Uint8Array, entry: ZipEntry): Uint8Array {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const at = entry.localHeaderOffset;
  if (at + 30 > bytes.length || view.getUint32(at, true) !== 0x04034b50) {
    throw new DocumentError('malformed_document', `the file is not a readable zip archive (its part ${entry.name} is missing)`);
  }
  const start = at + 30 + view.getUint16(at + 26, true) + view.getUint16(at + 28, true);
  if (start + entry.compressedSize > bytes.length) {
    throw new DocumentError('malformed_document', `the file is not a readable zip archive (its part ${entry.name} is cut short)`);
  }
  return bytes.subarray(start, start + entry.compressedSize);
}

function unpackedTooLarge(limits: ExtractLimits): DocumentError {
  return new DocumentError(
    'document_too_large',
    `the document unpacks to over ${limits.maxUnpackedBytes} bytes (the limit for a compressed document's contents)`,
  );
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}
