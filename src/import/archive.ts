import path from 'node:path';
import yauzl from 'yauzl';
import { ImportInputError } from './model.ts';

/** What an uploaded archive may expand to (IMP-5, IMP-7): each is a configuration option of the server. */
export interface ArchiveLimits {
  /** Most entries (files and folders). */
  maxEntries: number;
  /** Most bytes all files expand to together. */
  maxExpandedBytes: number;
  /** Most bytes an entry that is a report (`isReport`) may declare; larger ones are refused before they are expanded. */
  maxReportBytes?: number;
  /** Whether an entry is a report, from its name and its first {@link HEAD_BYTES} bytes (all of it when shorter). */
  isReport?: (name: string, head: Uint8Array) => boolean;
}

/** What is expanded of an entry to tell whether it is a report. */
export const HEAD_BYTES = 4096;

/**
 * Deflate cannot shrink data more than about 1,032 to 1; real reports and screenshots stay far
 * below 100. An entry of over 1 MiB declaring more than this is a decompression bomb.
 */
const MAX_RATIO = 200;
const RATIO_FLOOR_BYTES = 1024 * 1024;

/** Why an entry name is refused, or undefined for a plain relative path. */
function unsafeName(name: string): string | undefined {
  if (name.includes('\0')) return 'holds a NUL character';
  if (name.includes('\\')) return 'uses a backslash (only / separates folders in a ZIP)';
  if (name.startsWith('/') || /^[a-zA-Z]:/.test(name)) return 'is an absolute path';
  if (name.split('/').some((segment) => segment === '..')) return 'climbs out of the archive with ..';
  return undefined;
}

/** An entry's first check: its name, and whether its declared sizes make it a bomb. */
function checkEntry(file: string, entry: yauzl.Entry, names: Set<string>): void {
  const name = entry.fileName;
  const why = unsafeName(name);
  if (why) throw new ImportInputError(file, `entry "${name.slice(0, 200)}" ${why}`);
  if (names.has(name)) throw new ImportInputError(file, `entry "${name.slice(0, 200)}" appears twice`);
  names.add(name);
  if (entry.isEncrypted()) throw new ImportInputError(file, `entry "${name.slice(0, 200)}" is encrypted`);
  const ratio = entry.uncompressedSize / Math.max(entry.compressedSize, 1);
  if (entry.uncompressedSize > RATIO_FLOOR_BYTES && ratio > MAX_RATIO) {
    throw new ImportInputError(file, `entry "${name.slice(0, 200)}" would expand ${Math.round(ratio)} times (a decompression bomb)`);
  }
}

/** What yauzl says of a broken archive or a lying entry, as the input error it is. */
function archiveFault(file: string, error: unknown): ImportInputError {
  if (error instanceof ImportInputError) return error;
  const message = (error as Error).message ?? String(error);
  if (/absolute path/.test(message)) return new ImportInputError(file, `has an entry with an absolute path (${message})`);
  if (/relative path/.test(message)) return new ImportInputError(file, `has an entry that climbs out of the archive with .. (${message})`);
  if (/too many bytes/.test(message))
    return new ImportInputError(file, `has an entry that expands beyond the size it declares (${message})`);
  return new ImportInputError(file, `is not a readable ZIP archive (${message})`);
}

/** The first `count` bytes an entry expands to: its stream is destroyed as soon as they are in, the rest never inflated. */
async function headOf(zip: yauzl.ZipFile, entry: yauzl.Entry, count: number): Promise<Uint8Array> {
  const chunks: Buffer[] = [];
  let size = 0;
  // Leaving the loop destroys the stream (and its inflater).
  for await (const chunk of await zip.openReadStreamPromise(entry)) {
    chunks.push(chunk as Buffer);
    size += (chunk as Buffer).length;
    if (size >= count) break;
  }
  return Buffer.concat(chunks).subarray(0, count);
}

/**
 * An entry expanded into one array of exactly its declared size (no chunks held twice, and an array
 * of its own: the worker hands it over without a copy). yauzl refuses the first byte past the
 * declared size and an entry that ends short of it; `budget` is the bytes the whole archive may
 * still expand to, counted on the bytes themselves, whatever the headers say.
 */
async function expand(file: string, zip: yauzl.ZipFile, entry: yauzl.Entry, budget: number): Promise<Uint8Array> {
  const out = new Uint8Array(entry.uncompressedSize);
  let at = 0;
  for await (const chunk of await zip.openReadStreamPromise(entry)) {
    const bytes = chunk as Buffer;
    if (at + bytes.length > Math.min(budget, out.length)) {
      throw new ImportInputError(file, `entry "${entry.fileName.slice(0, 200)}" expands beyond the size it declares or the upload's limit`);
    }
    out.set(bytes, at);
    at += bytes.length;
  }
  return out;
}

/**
 * The files of a ZIP, by their path inside it. Every entry is checked before anything is
 * expanded: names are plain relative paths, the count and the declared sizes are within the
 * limits, no entry is a bomb, and no report declares more than a report may be (its first 4 KB
 * are expanded to tell a report from an attachment). Expanding then runs through zlib's streams
 * and stops at once when an entry passes its declared size or the archive passes its limit, so a
 * lying header costs no more than the checked numbers. A broken archive is an ImportInputError.
 */
export async function readArchive(file: string, bytes: Uint8Array, limits: ArchiveLimits): Promise<Map<string, Uint8Array>> {
  let zip: yauzl.ZipFile;
  try {
    const buffer = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    zip = await yauzl.fromBufferPromise(buffer, { validateEntrySizes: true, strictFileNames: false });
  } catch (error) {
    throw archiveFault(file, error);
  }
  try {
    if (zip.entryCount === 0) throw new ImportInputError(file, 'is an empty ZIP archive');
    if (zip.entryCount > limits.maxEntries) {
      throw new ImportInputError(file, `holds ${zip.entryCount} entries; an import takes at most ${limits.maxEntries}`);
    }
    const entries: yauzl.Entry[] = [];
    const names = new Set<string>();
    let expanded = 0;
    for await (const entry of zip.eachEntry()) {
      checkEntry(file, entry, names);
      expanded += entry.uncompressedSize;
      if (!entry.fileName.endsWith('/')) entries.push(entry);
    }
    if (expanded > limits.maxExpandedBytes) {
      throw new ImportInputError(file, `expands to ${expanded} bytes; an import takes at most ${limits.maxExpandedBytes}`);
    }
    const { maxReportBytes, isReport } = limits;
    if (maxReportBytes !== undefined && isReport) {
      for (const entry of entries) {
        if (entry.uncompressedSize <= maxReportBytes || !isReport(entry.fileName, await headOf(zip, entry, HEAD_BYTES))) continue;
        throw new ImportInputError(
          file,
          `entry "${entry.fileName.slice(0, 200)}" declares ${entry.uncompressedSize} bytes; a report file may be at most ${maxReportBytes}`,
        );
      }
    }
    const files = new Map<string, Uint8Array>();
    let budget = limits.maxExpandedBytes;
    for (const entry of entries) {
      const expandedEntry = await expand(file, zip, entry, budget);
      budget -= expandedEntry.length;
      files.set(entry.fileName, expandedEntry);
    }
    return files;
  } catch (error) {
    throw archiveFault(file, error);
  } finally {
    zip.close();
  }
}

/** An archive's files by their last path segment, built once: each lookup then compares only entries of that name. */
export class ArchiveIndex {
  private readonly byName = new Map<string, string[]>();

  constructor(readonly files: ReadonlyMap<string, Uint8Array>) {
    for (const entry of files.keys()) {
      const name = entry.slice(entry.lastIndexOf('/') + 1);
      const list = this.byName.get(name);
      if (list) list.push(entry);
      else this.byName.set(name, [entry]);
    }
  }

  entriesNamed(name: string): readonly string[] {
    return this.byName.get(name) ?? [];
  }
}

/**
 * The archive path of a file a report names (IMP-2), or undefined. Tried in order: relative to
 * the report's folder, relative to the archive's root, then the entry sharing the longest tail of
 * path segments with it: Playwright writes absolute paths of the machine that ran the tests
 * (`/builds/app/test-results/login-chromium/test-failed-1.png`), which only match by their tail.
 * Nothing outside the archive is ever read.
 */
export function resolveAttachment(index: ArchiveIndex, reportPath: string, named: string): string | undefined {
  const { files } = index;
  const wanted = named.replaceAll('\\', '/');
  if (!path.posix.isAbsolute(wanted) && !/^[a-zA-Z]:/.test(wanted)) {
    for (const candidate of [path.posix.join(path.posix.dirname(reportPath), wanted), path.posix.normalize(wanted)]) {
      if (!candidate.startsWith('../') && files.has(candidate)) return candidate;
    }
  }
  const segments = wanted.split('/').filter((s) => s !== '' && s !== '.' && !/^[a-zA-Z]:$/.test(s));
  let best: { entry: string; shared: number; tied: boolean } | undefined;
  // Only entries with the same file name can share a tail with it.
  for (const entry of index.entriesNamed(segments[segments.length - 1] ?? '')) {
    const parts = entry.split('/');
    let shared = 0;
    while (
      shared < parts.length &&
      shared < segments.length &&
      parts[parts.length - 1 - shared] === segments[segments.length - 1 - shared]
    ) {
      shared++;
    }
    if (best === undefined || shared > best.shared) best = { entry, shared, tied: false };
    else if (shared === best.shared) best.tied = true;
  }
  // Two entries matching equally well (two tests' `test-failed-1.png`, no folder to tell them
  // apart) is no answer: a wrong screenshot on a run is worse than a missing one.
  return best?.tied ? undefined : best?.entry;
}
