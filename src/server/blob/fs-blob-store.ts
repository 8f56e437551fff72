import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { promisify } from 'node:util';
import {
  type BlobDurabilityStep,
  type BlobEntry,
  BlobHolds,
  BlobStorageError,
  type BlobStore,
  type ByteRange,
  isBlobKey,
  type StoredBlob,
} from './blob-store.ts';

/**
 * The filesystem calls the store makes, as one replaceable object: tests inject EIO or ENOSPC at
 * any step (DUR-7) and record the order of writes, renames and fsyncs, the groundwork of the power-loss
 * simulation DUR-13c (not built yet).
 * File descriptors rather than FileHandles, so a fake needs no class of its own.
 */
export interface BlobFs {
  open(file: string, flags: string, mode?: number): Promise<number>;
  /** Writes part of `buffer` at the current position; resolves with the bytes written (maybe fewer). */
  write(fd: number, buffer: Uint8Array, offset: number, length: number): Promise<number>;
  fsync(fd: number): Promise<void>;
  close(fd: number): Promise<void>;
  rename(from: string, to: string): Promise<void>;
  unlink(file: string): Promise<void>;
  /** Creates one directory level; rejects with EEXIST when it is already there. */
  mkdir(dir: string): Promise<void>;
  /** Removes an empty directory; rejects (ENOTEMPTY, EEXIST) when it holds anything, so it never removes a blob. */
  rmdir(dir: string): Promise<void>;
  stat(file: string): Promise<fs.Stats>;
  readdir(dir: string): Promise<string[]>;
  utimes(file: string, atime: Date, mtime: Date): Promise<void>;
  createReadStream(file: string, options: { start?: number; end?: number }): Readable;
}

/** The real filesystem. */
export const nodeBlobFs: BlobFs = {
  open: promisify(fs.open) as BlobFs['open'],
  write: (fd, buffer, offset, length) =>
    new Promise((resolve, reject) =>
      fs.write(fd, buffer, offset, length, null, (error, written) => (error ? reject(error) : resolve(written))),
    ),
  fsync: promisify(fs.fsync),
  close: promisify(fs.close),
  rename: promisify(fs.rename),
  unlink: promisify(fs.unlink),
  mkdir: async (dir) => {
    await fs.promises.mkdir(dir);
  },
  rmdir: (dir) => fs.promises.rmdir(dir),
  stat: (file) => fs.promises.stat(file),
  readdir: (dir) => fs.promises.readdir(dir),
  utimes: (file, atime, mtime) => fs.promises.utimes(file, atime, mtime),
  createReadStream: (file, options) => fs.createReadStream(file, options),
};

export interface FsBlobStoreOptions {
  /** Filesystem calls; defaults to the real filesystem. */
  fs?: BlobFs;
  /** Called after each durability step of `put`; test builds crash the process there (DUR-13b). */
  onDurabilityStep?: (step: BlobDurabilityStep) => void;
}

const errnoOf = (error: unknown) => (error as NodeJS.ErrnoException | undefined)?.code;

/** The name of a shard folder level: `aa` in `blobs/aa/bb`. */
const SHARD = /^[0-9a-f]{2}$/;

/** ENOSPC and EDQUOT mean "no room"; anything else the filesystem throws is an I/O failure. */
function storageError(operation: string, error: unknown): BlobStorageError {
  const code = errnoOf(error);
  const full = code === 'ENOSPC' || code === 'EDQUOT';
  return new BlobStorageError(full ? 'full' : 'io', `blob store: ${operation} failed (${code ?? 'unknown error'})`, { cause: error });
}

/**
 * Content-addressed blobs in a local folder:
 *
 *     <root>/blobs/aa/bb/<sha256>     immutable, named by their digest (aa, bb: its first two bytes)
 *     <root>/tmp/<uuid>.part          uploads in progress, on the same filesystem so rename is atomic
 *
 * `put` follows DUR-6: write the temp file while hashing, fsync it, rename it into
 * place, fsync the directory (and its parents when they were just created). Only then may the
 * caller commit the row that references the blob.
 */
export class FsBlobStore implements BlobStore {
  readonly location: string;
  private readonly blobsDir: string;
  private readonly tmpDir: string;
  private readonly fs: BlobFs;
  private readonly onDurabilityStep: (step: BlobDurabilityStep) => void;
  /** Directories whose own entry this process has made durable (see makeEntryDurable). */
  private readonly durableDirs = new Set<string>();
  private readonly holds = new BlobHolds();
  /**
   * Shard folders (both levels) a put is making or renaming into right now, with how many puts:
   * no removal touches them, so a put's retry after a vanished folder cannot lose it again.
   */
  private readonly placing = new Map<string, number>();
  /** Folders deletions removed since the last removeEmptyFolders, which reports them. */
  private removedByDeletions = 0;

  constructor(
    private readonly root: string,
    options: FsBlobStoreOptions = {},
  ) {
    this.blobsDir = path.join(root, 'blobs');
    this.tmpDir = path.join(root, 'tmp');
    this.location = `file://${this.blobsDir}`;
    this.fs = options.fs ?? nodeBlobFs;
    this.onDurabilityStep = options.onDurabilityStep ?? (() => {});
  }

  /** The file a blob lives in. Only well-formed digests map to a path, so no key escapes the folder. */
  blobPath(sha256: string): string {
    if (!isBlobKey(sha256)) throw new Error(`not a blob key: ${JSON.stringify(sha256).slice(0, 80)}`);
    return path.join(this.blobsDir, sha256.slice(0, 2), sha256.slice(2, 4), sha256);
  }

  async put(source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>): Promise<StoredBlob> {
    const tempFile = path.join(this.tmpDir, `${randomUUID()}.part`);
    let fd: number | undefined;
    let release: (() => void) | undefined;
    try {
      fd = await this.io('open', () => this.fs.open(tempFile, 'wx', 0o600));
      const hash = createHash('sha256');
      let size = 0;
      for await (const chunk of source) {
        hash.update(chunk);
        size += chunk.byteLength;
        await this.writeAll(fd, chunk);
      }
      // A failed fsync is final: Linux may drop the dirty pages after reporting the error once,
      // so a second fsync could "succeed" without the data (PG-FSYNC). The temp file goes.
      await this.io('fsync', () => this.fs.fsync(fd as number));
      const closing = fd;
      fd = undefined;
      await this.io('close', () => this.fs.close(closing));
      this.onDurabilityStep('after-fsync-file');

      const sha256 = hash.digest('hex');
      release = await this.holds.hold(sha256);
      const target = this.blobPath(sha256);
      const existing = await this.statOrUndefined(target);
      if (existing?.size === size) {
        // Dedupe: the bytes are already stored. Touch the blob so garbage collection's grace
        // period counts from now: the row about to reference it is not committed yet.
        await this.fs.unlink(tempFile).catch(() => {});
        const now = new Date();
        await this.io('utimes', () => this.fs.utimes(target, now, now));
        await this.makeEntryDurable(target);
        return { sha256, size, created: false, release };
      }
      // Absent, or a damaged copy of a different length: the rename replaces it atomically.
      await this.renameIntoShard(tempFile, target);
      this.onDurabilityStep('after-rename');
      await this.makeEntryDurable(target);
      this.onDurabilityStep('after-dir-fsync');
      return { sha256, size, created: true, release };
    } catch (error) {
      release?.();
      if (fd !== undefined) await this.fs.close(fd).catch(() => {});
      await this.fs.unlink(tempFile).catch(() => {});
      throw error;
    }
  }

  async get(sha256: string, range?: ByteRange): Promise<Readable | undefined> {
    const file = this.blobPath(sha256);
    if (!(await this.statOrUndefined(file))) return undefined;
    return this.fs.createReadStream(file, range ? { start: range.start, end: range.end } : {});
  }

  async head(sha256: string): Promise<BlobEntry | undefined> {
    const stats = await this.statOrUndefined(this.blobPath(sha256));
    return stats ? { sha256, size: stats.size, modifiedAt: stats.mtime } : undefined;
  }

  delete(sha256: string, stillGarbage: () => Promise<boolean> = async () => true): Promise<boolean> {
    const file = this.blobPath(sha256);
    return this.holds.delete(sha256, stillGarbage, async () => {
      try {
        await this.fs.unlink(file);
      } catch (error) {
        if (errnoOf(error) === 'ENOENT') return false;
        throw storageError('unlink', error);
      }
      await this.removeEmptyShard(path.dirname(file));
      return true;
    });
  }

  async *list(): AsyncIterable<BlobEntry> {
    for (const first of await this.readdirOrEmpty(this.blobsDir)) {
      if (!SHARD.test(first)) continue;
      for (const second of await this.readdirOrEmpty(path.join(this.blobsDir, first))) {
        if (!SHARD.test(second)) continue;
        for (const name of await this.readdirOrEmpty(path.join(this.blobsDir, first, second))) {
          if (!isBlobKey(name) || !name.startsWith(first + second)) continue;
          const stats = await this.statOrUndefined(path.join(this.blobsDir, first, second, name));
          if (stats?.isFile()) yield { sha256: name, size: stats.size, modifiedAt: stats.mtime };
        }
      }
    }
  }

  /**
   * Tries rmdir on every shard folder `aa/bb`, then on its `aa`: rmdir fails on a folder that holds
   * anything, so no blob goes, and a folder a put is placing a blob in is skipped (see `placing`).
   * A put that started before the rmdir and finds its folder gone makes it again (renameIntoShard).
   * Anything in `blobs/` not named like a shard folder is left alone.
   */
  async removeEmptyFolders(): Promise<number> {
    let removed = this.removedByDeletions;
    this.removedByDeletions = 0;
    for (const first of await this.readdirOrEmpty(this.blobsDir)) {
      if (!SHARD.test(first)) continue;
      const firstDir = path.join(this.blobsDir, first);
      for (const second of await this.readdirOrEmpty(firstDir)) {
        if (SHARD.test(second) && (await this.removeIfEmpty(path.join(firstDir, second)))) removed++;
      }
      if (await this.removeIfEmpty(firstDir)) removed++;
    }
    return removed;
  }

  async recover(): Promise<{ removedTempFiles: number }> {
    await fs.promises.mkdir(this.blobsDir, { recursive: true });
    await fs.promises.mkdir(this.tmpDir, { recursive: true });
    // Every temp file is stale at start-up: the process that wrote it is gone, and only one
    // process owns a data folder (DUR-3). Its blob was never renamed into place, so no row needs it.
    let removedTempFiles = 0;
    for (const name of await this.fs.readdir(this.tmpDir)) {
      if (!name.endsWith('.part')) continue;
      await this.fs.unlink(path.join(this.tmpDir, name));
      removedTempFiles++;
    }
    await this.fsyncDir(this.root);
    return { removedTempFiles };
  }

  /** Runs one filesystem call, turning its failure into a BlobStorageError. */
  private async io<T>(operation: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      throw storageError(operation, error);
    }
  }

  private async writeAll(fd: number, chunk: Uint8Array): Promise<void> {
    let offset = 0;
    while (offset < chunk.byteLength) {
      offset += await this.io('write', () => this.fs.write(fd, chunk, offset, chunk.byteLength - offset));
    }
  }

  private async fsyncDir(dir: string): Promise<void> {
    const fd = await this.io('open directory', () => this.fs.open(dir, 'r'));
    try {
      await this.io('directory fsync', () => this.fs.fsync(fd));
    } finally {
      await this.fs.close(fd).catch(() => {});
    }
  }

  /**
   * Creates `blobs/aa` and `blobs/aa/bb` when missing. A folder this process has made durable
   * costs no mkdir calls unless `force`d. Garbage collection removes shard folders it empties
   * (removeIfEmpty, which drops their mark), so one may vanish at any moment between uploads:
   * a folder made here loses its "durable" mark, so makeEntryDurable fsyncs its parent again
   * (DUR-6), and a parent removed between the two mkdirs (ENOENT) is made once more.
   */
  private async ensureParentDirs(target: string, force = false): Promise<void> {
    const second = path.dirname(target);
    if (!force && this.durableDirs.has(second)) return;
    if (force) for (const dir of [second, path.dirname(second)]) this.durableDirs.delete(dir);
    for (let attempt = 0; ; attempt++) {
      try {
        for (const dir of [path.dirname(second), second]) {
          try {
            await this.fs.mkdir(dir);
            this.durableDirs.delete(dir);
          } catch (error) {
            if (errnoOf(error) !== 'EEXIST') throw error;
          }
        }
        return;
      } catch (error) {
        if (errnoOf(error) !== 'ENOENT' || attempt > 0) throw storageError('mkdir', error);
      }
    }
  }

  /**
   * Renames the finished temp file into its shard folder, made right before. The folders are
   * marked `placing` first, so no removal starts on them; one already under way may still remove
   * the empty folder between that mkdir and the rename (ENOENT): the folder is made again and the
   * rename retried once, and nothing can remove it a second time. The folder cannot vanish after
   * the rename, since rmdir fails on a folder that holds a blob.
   */
  private async renameIntoShard(tempFile: string, target: string): Promise<void> {
    const folders = [path.dirname(target), path.dirname(path.dirname(target))];
    for (const dir of folders) this.placing.set(dir, (this.placing.get(dir) ?? 0) + 1);
    try {
      await this.ensureParentDirs(target);
      try {
        await this.fs.rename(tempFile, target);
      } catch (error) {
        // Only an rmdir already under way when this put marked its folders can have removed them.
        if (errnoOf(error) !== 'ENOENT') throw storageError('rename', error);
        await this.ensureParentDirs(target, true);
        await this.io('rename', () => this.fs.rename(tempFile, target));
      }
    } finally {
      for (const dir of folders) {
        const left = (this.placing.get(dir) ?? 1) - 1;
        if (left > 0) this.placing.set(dir, left);
        else this.placing.delete(dir);
      }
    }
  }

  /**
   * After a deletion: removes the blob's shard folder `aa/bb` and then `aa` if they are now empty.
   * rmdir fails on a folder that is not empty, so a blob an upload renamed in meanwhile keeps its
   * folder; an upload that finds its folder gone makes it again (renameIntoShard). The removal
   * need not be durable: after a crash an empty folder costs one block, nothing more.
   */
  private async removeEmptyShard(second: string): Promise<void> {
    for (const dir of [second, path.dirname(second)]) {
      // Not empty, being placed into, already gone or refused: the folder stays, and so does its
      // parent; the blob itself is deleted, and removeEmptyFolders tries the folder again later.
      if (!(await this.removeIfEmpty(dir).catch(() => false))) return;
      this.removedByDeletions++;
    }
  }

  /** rmdir of a shard folder no put is placing into; false when it is not empty or not there. */
  private async removeIfEmpty(dir: string): Promise<boolean> {
    if (this.placing.has(dir)) return false;
    try {
      await this.fs.rmdir(dir);
    } catch (error) {
      const code = errnoOf(error);
      if (code === 'ENOTEMPTY' || code === 'EEXIST' || code === 'ENOENT' || code === 'ENOTDIR') return false;
      throw storageError('rmdir', error);
    }
    this.durableDirs.delete(dir);
    return true;
  }

  /**
   * A rename is atomic but not durable until the directory holding the new entry is fsynced, and
   * a directory created for it is only durable once its own parent is (DUR-6). The parents are
   * fsynced the first time this process uses each directory rather than only when this call
   * created it: a concurrent upload may have created it without having fsynced the parent yet,
   * and one left by a crashed process may exist in the page cache only.
   */
  private async makeEntryDurable(target: string): Promise<void> {
    const second = path.dirname(target);
    await this.fsyncDir(second);
    for (const dir of [second, path.dirname(second)]) {
      if (this.durableDirs.has(dir)) continue;
      await this.fsyncDir(path.dirname(dir));
      this.durableDirs.add(dir);
    }
  }

  private async statOrUndefined(file: string): Promise<fs.Stats | undefined> {
    try {
      return await this.fs.stat(file);
    } catch (error) {
      if (errnoOf(error) === 'ENOENT') return undefined;
      throw storageError('stat', error);
    }
  }

  private async readdirOrEmpty(dir: string): Promise<string[]> {
    try {
      return await this.fs.readdir(dir);
    } catch (error) {
      if (errnoOf(error) === 'ENOENT') return [];
      throw storageError('readdir', error);
    }
  }
}
