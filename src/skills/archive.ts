import { Readable } from 'node:stream';
import zlib from 'node:zlib';
import tar from 'tar-stream';
import { DomainError, InvalidInput } from '../errors.js';
import { inferLanguage, parseSkillMd, type SkillContent } from './format.js';

/**
 * Reading an uploaded skill folder: a zip, a tar or a gzipped tar holding SKILL.md (at the root or
 * inside one top-level folder), references/ and scripts/. Everything is read in memory, under limits
 * that hold whatever the archive claims about itself:
 *
 * - entry names are checked before anything else: absolute paths, `..` segments, NUL bytes are refused;
 * - only regular files and folders are accepted: symlinks, hard links and devices are refused;
 * - the bytes actually produced by decompression are counted (not the sizes the headers declare), so a
 *   zip or gzip bomb stops at the cap; the number of entries is capped too.
 */

export const ARCHIVE_LIMITS = {
  /** Bytes of the uploaded archive. */
  uploadBytes: 5 * 1024 * 1024,
  /** Bytes of all entries once decompressed. */
  unpackedBytes: 8 * 1024 * 1024,
  entries: 500,
} as const;

export interface ArchiveEntry {
  path: string;
  data: Buffer;
}

const invalid = (detail: string) => new InvalidInput(detail, [{ path: 'archive', message: detail }], 'invalid_archive');
const unsafe = (entry: string, why: string) =>
  new InvalidInput(
    `archive entry "${printable(entry)}" is refused: ${why}`,
    [{ path: `archive.${printable(entry)}`, message: why }],
    'unsafe_archive_entry',
  );
const tooLarge = (detail: string) => new InvalidInput(detail, [{ path: 'archive', message: detail }], 'archive_too_large');

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it replaces
const printable = (s: string) => s.replace(/[\u0000-\u001f\u007f]/g, '?').slice(0, 300);

/** The entry's path relative to the archive root, or a 400 when it could escape it. */
function safeEntryPath(raw: string): string {
  if (raw.includes('\0')) throw unsafe(raw, 'the name contains a NUL byte');
  const name = raw.replace(/\\/g, '/');
  if (name.startsWith('/') || /^[A-Za-z]:/.test(name)) throw unsafe(raw, 'absolute paths are not allowed');
  const segments = name.split('/').filter((s) => s !== '' && s !== '.');
  if (segments.includes('..')) throw unsafe(raw, 'parent-directory (..) segments are not allowed');
  return segments.join('/');
}

export type ArchiveKind = 'zip' | 'gzip' | 'tar';

export function archiveKind(buf: Buffer): ArchiveKind | null {
  if (buf.length >= 4 && buf.readUInt32LE(0) === 0x04034b50) return 'zip';
  // An empty zip is only its end record.
  if (buf.length >= 22 && buf.readUInt32LE(0) === 0x06054b50) return 'zip';
  if (buf.length >= 2 && buf[0] === 0x1f && buf[1] === 0x8b) return 'gzip';
  if (buf.length >= 262 && buf.toString('latin1', 257, 262) === 'ustar') return 'tar';
  return null;
}

/** Bounded accumulation of entries: the caps apply to what is really produced. */
class Budget {
  private bytes = 0;
  private count = 0;
  readonly entries: ArchiveEntry[] = [];
  private readonly seen = new Set<string>();

  entry() {
    if (++this.count > ARCHIVE_LIMITS.entries) throw tooLarge(`the archive holds more than ${ARCHIVE_LIMITS.entries} entries`);
  }

  get remaining() {
    return ARCHIVE_LIMITS.unpackedBytes - this.bytes;
  }

  add(path: string, data: Buffer) {
    this.bytes += data.length;
    if (this.bytes > ARCHIVE_LIMITS.unpackedBytes) throw tooLarge(`the archive unpacks to more than ${ARCHIVE_LIMITS.unpackedBytes} bytes`);
    if (this.seen.has(path)) throw invalid(`the archive holds "${printable(path)}" twice`);
    this.seen.add(path);
    this.entries.push({ path, data });
  }
}

const S_IFMT = 0o170000;
const S_IFREG = 0o100000;
const S_IFDIR = 0o040000;
const S_IFLNK = 0o120000;

/** Zip, read from its central directory; stored and deflated entries only (no ZIP64, no encryption). */
function readZip(buf: Buffer): ArchiveEntry[] {
  const budget = new Budget();
  let eocd = -1;
  for (let i = buf.length - 22; i >= Math.max(0, buf.length - 22 - 0xffff); i--) {
    if (buf.readUInt32LE(i) === 0x06054b50) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) throw invalid('the zip archive has no central directory (truncated or corrupt)');
  const count = buf.readUInt16LE(eocd + 10);
  const cdSize = buf.readUInt32LE(eocd + 12);
  const cdOffset = buf.readUInt32LE(eocd + 16);
  if (count === 0xffff || cdOffset === 0xffffffff || cdSize === 0xffffffff) throw invalid('ZIP64 archives are not supported');
  if (count > ARCHIVE_LIMITS.entries) throw tooLarge(`the archive holds more than ${ARCHIVE_LIMITS.entries} entries`);
  if (cdOffset + cdSize > eocd) throw invalid('the zip central directory is corrupt');

  let p = cdOffset;
  for (let n = 0; n < count; n++) {
    if (p + 46 > buf.length || buf.readUInt32LE(p) !== 0x02014b50) throw invalid('the zip central directory is corrupt');
    const madeBy = buf.readUInt16LE(p + 4);
    const flags = buf.readUInt16LE(p + 8);
    const method = buf.readUInt16LE(p + 10);
    const compressedSize = buf.readUInt32LE(p + 20);
    const nameLength = buf.readUInt16LE(p + 28);
    const extraLength = buf.readUInt16LE(p + 30);
    const commentLength = buf.readUInt16LE(p + 32);
    const externalAttrs = buf.readUInt32LE(p + 38);
    const localOffset = buf.readUInt32LE(p + 42);
    if (p + 46 + nameLength > buf.length) throw invalid('the zip central directory is corrupt');
    const rawName = buf.toString('utf8', p + 46, p + 46 + nameLength);
    p += 46 + nameLength + extraLength + commentLength;

    budget.entry();
    const path = safeEntryPath(rawName);
    // Unix hosts keep the file mode in the high half of the external attributes.
    const mode = madeBy >> 8 === 3 ? (externalAttrs >>> 16) & S_IFMT : 0;
    if (mode === S_IFLNK) throw unsafe(rawName, 'symbolic links are not allowed');
    const isDir = rawName.endsWith('/') || mode === S_IFDIR;
    if (mode && mode !== S_IFREG && mode !== S_IFDIR) throw unsafe(rawName, 'only regular files and folders are allowed');
    if (isDir || !path) continue;
    if (flags & 0x1) throw invalid(`"${printable(rawName)}" is encrypted; encrypted archives are not supported`);

    if (localOffset + 30 > buf.length || buf.readUInt32LE(localOffset) !== 0x04034b50) throw invalid('a zip entry header is corrupt');
    const start = localOffset + 30 + buf.readUInt16LE(localOffset + 26) + buf.readUInt16LE(localOffset + 28);
    if (start + compressedSize > buf.length) throw invalid(`"${printable(rawName)}" runs past the end of the archive`);
    const raw = buf.subarray(start, start + compressedSize);
    let data: Buffer;
    if (method === 0) {
      data = Buffer.from(raw);
    } else if (method === 8) {
      data = inflate(() => zlib.inflateRawSync(raw, { maxOutputLength: Math.max(1, budget.remaining) }), rawName);
    } else {
      throw invalid(`"${printable(rawName)}" uses compression method ${method}; only stored and deflated entries are supported`);
    }
    budget.add(path, data);
  }
  return budget.entries;
}

/** Runs a bounded decompression: output beyond the cap is an archive bomb, a 400. */
function inflate(run: () => Buffer, what: string): Buffer {
  try {
    return run();
  } catch (err) {
    if ((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') {
      throw tooLarge(`the archive unpacks to more than ${ARCHIVE_LIMITS.unpackedBytes} bytes`);
    }
    throw invalid(`"${printable(what)}" could not be decompressed: ${(err as Error).message}`);
  }
}

async function readTar(buf: Buffer): Promise<ArchiveEntry[]> {
  const budget = new Budget();
  const extract = tar.extract();
  const done = new Promise<void>((resolve, reject) => {
    extract.on('entry', (header, stream, next) => {
      // Destroying the extractor destroys the entry stream with the same error; the extractor reports it.
      stream.on('error', () => {});
      const fail = (err: unknown) => {
        stream.resume();
        extract.destroy(err as Error);
      };
      try {
        budget.entry();
        const path = safeEntryPath(header.name);
        if (header.type === 'symlink' || header.type === 'link') throw unsafe(header.name, 'links are not allowed');
        if (header.type === 'directory' || (header.type === 'file' && !path)) {
          stream.resume();
          stream.on('end', next);
          return;
        }
        if (header.type !== 'file' && header.type !== 'contiguous-file')
          throw unsafe(header.name, 'only regular files and folders are allowed');
        const chunks: Buffer[] = [];
        let size = 0;
        stream.on('data', (data: unknown) => {
          const chunk = data as Buffer;
          size += chunk.length;
          if (size > budget.remaining) return fail(tooLarge(`the archive unpacks to more than ${ARCHIVE_LIMITS.unpackedBytes} bytes`));
          chunks.push(chunk);
        });
        stream.on('end', () => {
          try {
            budget.add(path, Buffer.concat(chunks));
            next();
          } catch (err) {
            fail(err);
          }
        });
      } catch (err) {
        fail(err);
      }
    });
    extract.on('finish', resolve);
    extract.on('error', reject);
  });
  Readable.from([buf]).pipe(extract);
  try {
    await done;
  } catch (err) {
    if (err instanceof DomainError) throw err;
    throw invalid(`the tar archive is corrupt: ${(err as Error).message}`);
  }
  return budget.entries;
}

/** The files of a zip, tar or tar.gz archive, under the limits above. */
export async function readArchive(buf: Buffer): Promise<ArchiveEntry[]> {
  if (buf.length > ARCHIVE_LIMITS.uploadBytes) throw tooLarge(`archives are limited to ${ARCHIVE_LIMITS.uploadBytes} bytes`);
  const kind = archiveKind(buf);
  if (kind === 'zip') return readZip(buf);
  if (kind === 'tar') return readTar(buf);
  if (kind === 'gzip') {
    // The tar inside may carry headers and padding besides the files; those count toward the cap too.
    const tarBytes = inflate(
      () => zlib.gunzipSync(buf, { maxOutputLength: ARCHIVE_LIMITS.unpackedBytes + 1024 * 1024 }),
      'the gzip stream',
    );
    if (archiveKind(tarBytes) !== 'tar') throw invalid('the gzip file does not hold a tar archive');
    return readTar(tarBytes);
  }
  throw invalid('the upload is not a zip, tar or tar.gz archive, nor a SKILL.md file');
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

function text(entry: ArchiveEntry): string {
  try {
    return utf8.decode(entry.data).replace(/^\uFEFF/, '');
  } catch {
    throw new InvalidInput(
      `"${printable(entry.path)}" is not UTF-8 text; references and scripts must be text`,
      [{ path: `archive.${printable(entry.path)}`, message: 'is not UTF-8 text' }],
      'invalid_skill_file',
    );
  }
}

/** Files the format does not use and tools add on their own (macOS resource forks, Finder state). */
const isNoise = (path: string) => path.startsWith('__MACOSX/') || path.split('/').some((s) => s.startsWith('.'));

/**
 * A skill from the files of a folder: SKILL.md at the root or inside a single top-level folder (whose
 * name must then be the skill's name, as the format requires), `references/**` and `scripts/**`.
 * Other files (assets/, LICENSE, ...) are ignored.
 */
export function skillFromEntries(all: ArchiveEntry[]): SkillContent {
  const entries = all.filter((e) => !isNoise(e.path));
  let root = '';
  if (!entries.some((e) => e.path === 'SKILL.md')) {
    const nested = entries.filter((e) => /^[^/]+\/SKILL\.md$/.test(e.path));
    const folder = nested.length === 1 ? nested[0].path.split('/')[0] : null;
    if (!folder || !entries.every((e) => e.path.startsWith(`${folder}/`))) {
      throw invalid('the archive must hold SKILL.md at its root, or inside one top-level folder holding everything else');
    }
    root = `${folder}/`;
  }
  const skillMdEntry = entries.find((e) => e.path === `${root}SKILL.md`)!;
  const parsed = parseSkillMd(text(skillMdEntry), `archive.${root}SKILL.md`);
  const folder = root.slice(0, -1);
  if (folder && folder !== parsed.name) {
    throw new InvalidInput(
      `the skill name "${parsed.name}" must match its folder name "${printable(folder)}"`,
      [{ path: `archive.${root}SKILL.md.name`, message: `must match the folder name "${printable(folder)}"` }],
      'invalid_skill_md',
    );
  }
  const under = (dir: string) =>
    entries
      .filter((e) => e.path.startsWith(`${root}${dir}/`))
      .sort((a, b) => a.path.localeCompare(b.path))
      .map((e) => ({ name: e.path.slice(root.length + dir.length + 1), content: text(e) }));
  return {
    ...parsed,
    references: under('references'),
    scripts: under('scripts').map((f) => ({ ...f, language: inferLanguage(f.name) })),
  };
}
