import fs from 'node:fs';
import type { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { BlobStorageError } from './blob-store.ts';

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
  createReadStream: (file, options) => fs.createReadStream(file, options),
};

export const errnoOf = (error: unknown) => (error as NodeJS.ErrnoException | undefined)?.code;

export /** ENOSPC and EDQUOT mean "no room"; anything else the filesystem throws is an I/O failure. */
function storageError(operation: string, error: unknown): BlobStorageError {
  const code = errnoOf(error);
  const full = code === 'ENOSPC' || code === 'EDQUOT';
  return new BlobStorageError(full ? 'full' : 'io', `blob store: ${operation} failed (${code ?? 'unknown error'})`, { cause: error });
}
