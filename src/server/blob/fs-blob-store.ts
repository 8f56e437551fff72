import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { type BlobFs, errnoOf, nodeBlobFs, storageError } from './blob-fs.ts';
import {
  type BlobDurabilityStep,
  type BlobEntry,
  BlobHolds,
  type BlobStore,
  type ByteRange,
  isBlobKey,
  type StoredBlob,
} from './blob-store.ts';

export { type BlobFs, nodeBlobFs } from './blob-fs.ts';

export interface FsBlobStoreOptions {
  /** Filesystem calls; defaults to the real filesystem. */
  fs?: BlobFs;
  /** Called after each durability step of `put`; test builds crash the process there (DUR-13b). */
  onDurabilityStep?: (step: BlobDurabilityStep) => void;
}

/** Blobs up to this size are hashed in memory before a temp file is written (see put). */
const SMALL_BLOB_MAX_BYTES = 512 * 1024;
/** How many digests the store remembers as durable (about 100 bytes each). */
const DURABLE_BLOBS_KEPT = 16_384;

/** The name of a shard folder level: `aa` in `blobs/aa/bb`. */
const SHARD = /^[0-9a-f]{2}$/;

/**
 * Content-addressed blobs in a local folder:
 *
 *     <root>/blobs/aa/bb/<sha256>     immutable, named by their digest (aa, bb: its first two bytes)
 *     <root>/tmp/<uuid>.part          uploads in progress, on the same filesystem so rename is atomic
 *
 * `put` follows DUR-6: write the temp file while hashing, fsync it, rename it into
 * place, fsync the directory (and its parents when they were just created). Only then may the
 * caller commit the row that references the blob. A small blob is hashed before its temp file is
 * written, so bytes already stored are not written again.
 */
export class FsBlobStore implements BlobStore {
  readonly kind = 'files';
  readonly location: string;
  private readonly blobsDir: string;
  private readonly tmpDir: string;
  private readonly fs: BlobFs;
  private readonly onDurabilityStep: (step: BlobDurabilityStep) => void;
  /** Directories whose own entry this process has made durable (see makeEntryDurable). */
  private readonly durableDirs = new Set<string>();
  /**
   * Blobs whose directory entry this process has made durable, the most recent DURABLE_BLOBS_KEPT:
   * stored again, they need no directory fsync. A deletion through this store drops the mark first.
   */
  private readonly durableBlobs = new Set<string>();
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
    const temp: { fd?: number } = {};
    let release: (() => void) | undefined;
    try {
      const { sha256, size, small } = await this.spool(source, tempFile, temp);
      const target = this.blobPath(sha256);
      if (small) {
        release = await this.holds.hold(sha256);
        // A blob this process made durable and has not deleted since is there, whole: no stat.
        if (this.durableBlobs.has(sha256) || (await this.isStored(target, size))) {
          await this.reuse(target, sha256);
          return { sha256, size, created: false, release };
        }
        temp.fd = await this.io('open', () => this.fs.open(tempFile, 'wx', 0o600));
        await this.writeAll(temp.fd, Buffer.concat(small, size));
      }
      await this.syncAndClose(temp);
      release ??= await this.holds.hold(sha256);
      if (!small && (await this.isStored(target, size))) {
        await this.fs.unlink(tempFile).catch(() => {});
        await this.reuse(target, sha256);
        return { sha256, size, created: false, release };
      }
      // Absent, or a damaged copy of a different length: the rename replaces it atomically.
      await this.renameIntoShard(tempFile, target);
      this.onDurabilityStep('after-rename');
      await this.makeEntryDurable(target);
      this.markDurable(sha256);
      this.onDurabilityStep('after-dir-fsync');
      return { sha256, size, created: true, release };
    } catch (error) {
      release?.();
      if (temp.fd !== undefined) await this.fs.close(temp.fd).catch(() => {});
      await this.fs.unlink(tempFile).catch(() => {});
      throw error;
    }
  }

  /**
   * Hashes the bytes as they come. A blob that ends within SMALL_BLOB_MAX_BYTES is hashed in memory
   * before anything is written (`small`): bytes already stored then cost no temp file at all, and
   * new ones a single write. A larger one is written to the temp file (opened into `temp`) as it comes.
   */
  private async spool(
    source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
    tempFile: string,
    temp: { fd?: number },
  ): Promise<{ sha256: string; size: number; small: Uint8Array[] | undefined }> {
    const hash = createHash('sha256');
    let size = 0;
    let small: Uint8Array[] | undefined = [];
    for await (const chunk of source) {
      hash.update(chunk);
      size += chunk.byteLength;
      if (small && size <= SMALL_BLOB_MAX_BYTES) {
        small.push(chunk);
        continue;
      }
      if (temp.fd === undefined) temp.fd = await this.io('open', () => this.fs.open(tempFile, 'wx', 0o600));
      for (const held of small ?? []) await this.writeAll(temp.fd, held);
      small = undefined;
      await this.writeAll(temp.fd, chunk);
    }
    return { sha256: hash.digest('hex'), size, small };
  }

  /**
   * Makes the temp file durable and closes it. A failed fsync is final: Linux may drop the dirty
   * pages after reporting the error once, so a second fsync could "succeed" without the data
   * (PG-FSYNC). The temp file goes.
   */
  private async syncAndClose(temp: { fd?: number }): Promise<void> {
    await this.io('fsync', () => this.fs.fsync(temp.fd as number));
    const closing = temp.fd as number;
    temp.fd = undefined;
    await this.io('close', () => this.fs.close(closing));
    this.onDurabilityStep('after-fsync-file');
  }

  /** Whether the blob is stored with this size; a copy of another length is damaged and gets replaced. */
  private async isStored(target: string, size: number): Promise<boolean> {
    return (await this.statOrUndefined(target))?.size === size;
  }

  /**
   * Dedupe: the bytes are already stored. Its directory entry is made durable unless this process
   * already did so (a concurrent put may have renamed it without having fsynced its folder yet, and
   * a crashed process may have left it in the page cache only). The blob is not touched: garbage
   * collection skips every digest an upload holds until its row commits (`BlobHolds`, DUR-10), so
   * an old orphan found again needs no fresh modification time to survive.
   */
  private async reuse(target: string, sha256: string): Promise<void> {
    if (this.durableBlobs.has(sha256)) return;
    await this.makeEntryDurable(target);
    this.markDurable(sha256);
  }

  private markDurable(sha256: string): void {
    if (this.durableBlobs.size >= DURABLE_BLOBS_KEPT) this.durableBlobs.delete(this.durableBlobs.values().next().value as string);
    this.durableBlobs.add(sha256);
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
      this.durableBlobs.delete(sha256);
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

  async ping(): Promise<void> {
    await this.io('access', () => fs.promises.access(this.blobsDir, fs.constants.R_OK | fs.constants.W_OK));
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
