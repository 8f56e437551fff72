import path from 'node:path';
import { unzipSync } from 'fflate';
import { ImportInputError } from './model.ts';

/** What an uploaded archive may expand to (IMP-5): each is a configuration option of the server. */
export interface ArchiveLimits {
  /** Most entries (files and folders). */
  maxEntries: number;
  /** Most bytes all files expand to together. */
  maxExpandedBytes: number;
}

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

/**
 * The files of a ZIP, by their path inside it, after checking every entry before anything is
 * expanded: names are plain relative paths, the count and the declared sizes are within the
 * limits, and no entry is a bomb. An entry that expands beyond what it declared is cut at the
 * declared size (fflate writes into a buffer of that size), so memory stays bounded by checked
 * numbers even when the headers lie. A broken archive is an ImportInputError.
 */
export function readArchive(file: string, bytes: Uint8Array, limits: ArchiveLimits): Map<string, Uint8Array> {
  const entries: { name: string; size: number; originalSize: number }[] = [];
  const open = (filter: (entry: { name: string; size: number; originalSize: number }) => boolean) => {
    try {
      return unzipSync(bytes, { filter });
    } catch (error) {
      throw new ImportInputError(file, `is not a readable ZIP archive (${(error as Error).message})`);
    }
  };
  open((entry) => {
    entries.push(entry);
    return false;
  });
  if (entries.length === 0) throw new ImportInputError(file, 'is an empty ZIP archive');
  if (entries.length > limits.maxEntries) {
    throw new ImportInputError(file, `holds ${entries.length} entries; an import takes at most ${limits.maxEntries}`);
  }
  const names = new Set<string>();
  let expanded = 0;
  for (const entry of entries) {
    const why = unsafeName(entry.name);
    if (why) throw new ImportInputError(file, `entry "${entry.name.slice(0, 200)}" ${why}`);
    if (names.has(entry.name)) throw new ImportInputError(file, `entry "${entry.name.slice(0, 200)}" appears twice`);
    names.add(entry.name);
    expanded += entry.originalSize;
    if (entry.originalSize > RATIO_FLOOR_BYTES && entry.originalSize > MAX_RATIO * Math.max(entry.size, 1)) {
      throw new ImportInputError(
        file,
        `entry "${entry.name.slice(0, 200)}" would expand ${Math.round(entry.originalSize / Math.max(entry.size, 1))} times (a decompression bomb)`,
      );
    }
  }
  if (expanded > limits.maxExpandedBytes) {
    throw new ImportInputError(file, `expands to ${expanded} bytes; an import takes at most ${limits.maxExpandedBytes}`);
  }
  const files = open((entry) => !entry.name.endsWith('/'));
  return new Map(Object.entries(files));
}

/**
 * The archive path of a file a report names (IMP-2), or undefined. Tried in order: relative to
 * the report's folder, relative to the archive's root, then the entry sharing the longest tail of
 * path segments with it: Playwright writes absolute paths of the machine that ran the tests
 * (`/builds/app/test-results/login-chromium/test-failed-1.png`), which only match by their tail.
 * Nothing outside the archive is ever read.
 */
export function resolveAttachment(files: ReadonlyMap<string, Uint8Array>, reportPath: string, named: string): string | undefined {
  const wanted = named.replaceAll('\\', '/');
  if (!path.posix.isAbsolute(wanted) && !/^[a-zA-Z]:/.test(wanted)) {
    for (const candidate of [path.posix.join(path.posix.dirname(reportPath), wanted), path.posix.normalize(wanted)]) {
      if (!candidate.startsWith('../') && files.has(candidate)) return candidate;
    }
  }
  const segments = wanted.split('/').filter((s) => s !== '' && s !== '.' && !/^[a-zA-Z]:$/.test(s));
  let best: { entry: string; shared: number; tied: boolean } | undefined;
  for (const entry of files.keys()) {
    const parts = entry.split('/');
    let shared = 0;
    while (
      shared < parts.length &&
      shared < segments.length &&
      parts[parts.length - 1 - shared] === segments[segments.length - 1 - shared]
    ) {
      shared++;
    }
    if (shared === 0) continue;
    if (best === undefined || shared > best.shared) best = { entry, shared, tied: false };
    else if (shared === best.shared) best.tied = true;
  }
  // Two entries matching equally well (two tests' `test-failed-1.png`, no folder to tell them
  // apart) is no answer: a wrong screenshot on a run is worse than a missing one.
  return best?.tied ? undefined : best?.entry;
}
