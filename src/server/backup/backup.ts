import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { type BlobStore, isBlobKey } from '../blob/blob-store.ts';
import { blobReferencesIn, copySqliteSnapshot, sqliteIntegrity } from '../db/sqlite-copy.ts';

const blobPath = (dataDir: string, sha256: string) => path.join(dataDir, 'blobs', sha256.slice(0, 2), sha256.slice(2, 4), sha256);

/** The blobs a database copy references, with the size its rows record (-1 where none does, as in verify). */
function referencedIn(file: string): Map<string, number> {
  const sizes = new Map<string, number>();
  for (const { key, size } of blobReferencesIn(file)) if (isBlobKey(key) && (size >= 0 || !sizes.has(key))) sizes.set(key, Number(size));
  return sizes;
}

/** The SHA-256 of a file, read in chunks. */
function sha256OfFile(file: string): string {
  const hash = createHash('sha256');
  const fd = fs.openSync(file, 'r');
  try {
    const buffer = Buffer.alloc(1024 * 1024);
    for (let read = fs.readSync(fd, buffer); read > 0; read = fs.readSync(fd, buffer)) hash.update(buffer.subarray(0, read));
  } finally {
    fs.closeSync(fd);
  }
  return hash.digest('hex');
}

/** fsync on a file, or on a folder to make its new entries durable. */
function fsyncPath(target: string): void {
  const fd = fs.openSync(target, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Writes files so they survive a power loss, as uploads do (DUR-6): each file is fsynced once
 * written, and `flush` then fsyncs every folder that gained an entry, namely the folder of each
 * file and the parent of each folder created here. A backup or restore is complete only after `flush`.
 */
function durableWriter() {
  const changedFolders = new Set<string>();
  const mkdir = (folder: string) => {
    const first = fs.mkdirSync(folder, { recursive: true });
    if (first === undefined) return;
    // Every folder from `first` down to `folder` is new, so each one's parent gained an entry.
    const top = path.resolve(first);
    for (let created = path.resolve(folder); ; created = path.dirname(created)) {
      changedFolders.add(path.dirname(created));
      if (created === top || created === path.dirname(created)) break;
    }
  };
  /** Makes a file just written durable (its bytes now, its folder entry at `flush`). */
  const written = (file: string) => {
    fsyncPath(file);
    changedFolders.add(path.dirname(path.resolve(file)));
  };
  return {
    mkdir,
    written,
    copy(from: string, to: string, mode?: number) {
      mkdir(path.dirname(to));
      fs.copyFileSync(from, to, mode);
      written(to);
    },
    flush() {
      for (const folder of changedFolders) fsyncPath(folder);
    },
  };
}

/**
 * A blob of a bucket into a new file of the backup, made durable like a copied one. A file of
 * another size than its rows record (`size`, -1 when they record none) fails the backup: the
 * object is damaged, or the store answered short.
 */
async function download(bucket: BlobStore, key: string, size: number, to: string, out: ReturnType<typeof durableWriter>): Promise<void> {
  const source = await bucket.get(key);
  if (!source) throw new Error(`not in ${bucket.location}`);
  out.mkdir(path.dirname(to));
  await pipeline(source, fs.createWriteStream(to, { flags: 'wx', mode: 0o600 }));
  const written = fs.statSync(to).size;
  if (size >= 0 && written !== size) throw new Error(`${written} bytes downloaded where its database records ${size}`);
  out.written(to);
}

/**
 * Written last, once everything else in the backup is durable: a folder without it is a backup
 * that was interrupted, and restore refuses it.
 */
const MANIFEST = 'attest-backup.json';

export interface BackupReport {
  database: string;
  blobs: number;
  bytes: number;
}

/**
 * Online backup of an embedded instance (DUR-12): SQLite's backup API takes a
 * consistent snapshot while the server keeps writing, then the blobs that snapshot references are
 * copied. Blobs are immutable and content-addressed, so copying them after the snapshot yields
 * every blob it needs. A referenced blob that vanished meanwhile (its rows deleted and collected
 * after the snapshot) fails the backup rather than producing one that does not restore.
 * The blobs are the data folder's files, or, given `bucket` (an instance whose blobs are in an
 * S3-compatible bucket), that store's objects, downloaded into the backup: either way the backup
 * holds every blob, in the same layout.
 */
export async function backupEmbedded(
  dataDir: string,
  destination: string,
  onProgress?: (done: number, total: number) => void,
  bucket?: BlobStore,
): Promise<BackupReport> {
  const source = path.join(dataDir, 'attest.db');
  if (!fs.existsSync(source)) throw new Error(`no Attest database in ${dataDir}`);
  if (fs.existsSync(destination) && fs.readdirSync(destination).length > 0) throw new Error(`${destination} is not empty`);
  const out = durableWriter();
  out.mkdir(destination);
  const target = path.join(destination, 'attest.db');
  await copySqliteSnapshot(source, target);
  const sizes = referencedIn(target);
  const keys = [...sizes.keys()];
  out.written(target);
  let bytes = 0;
  for (const [index, key] of keys.entries()) {
    const to = blobPath(destination, key);
    try {
      if (bucket) await download(bucket, key, sizes.get(key) ?? -1, to, out);
      else out.copy(blobPath(dataDir, key), to, fs.constants.COPYFILE_EXCL);
    } catch (error) {
      throw new Error(
        `blob ${key} referenced by the snapshot could not be copied (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}); run the backup again`,
      );
    }
    bytes += fs.statSync(to).size;
    onProgress?.(index + 1, keys.length);
  }
  out.flush();
  const manifest = path.join(destination, MANIFEST);
  fs.writeFileSync(manifest, `${JSON.stringify({ format: 1, createdAt: new Date().toISOString(), blobs: keys.length, bytes })}\n`);
  out.written(manifest);
  out.flush();
  return { database: target, blobs: keys.length, bytes };
}

/** Where a restore builds its copy, inside the data folder (which may be a mount point). */
export const RESTORE_STAGING = '.restoring';

/** The backup's manifest, once the folder is checked to be a complete Attest backup. */
function readBackupManifest(backupDir: string): { blobs?: number } {
  if (!fs.existsSync(backupDir)) throw new Error(`the backup folder ${backupDir} does not exist`);
  if (!fs.existsSync(path.join(backupDir, 'attest.db'))) throw new Error(`${backupDir} holds no attest.db; it is not an Attest backup`);
  if (!fs.existsSync(path.join(backupDir, MANIFEST)))
    throw new Error(`${backupDir} is an incomplete backup (no ${MANIFEST}: it was interrupted); take the backup again`);
  return JSON.parse(fs.readFileSync(path.join(backupDir, MANIFEST), 'utf8')) as { blobs?: number };
}

/**
 * Checks every blob (its size against the rows, its content against its SHA-256 name), all
 * before anything moves into the data folder or the bucket: a damaged backup restores nothing.
 * Into the data folder, each is checked as copied to the staging folder; into a bucket, in the
 * backup, and then uploaded (bytes the bucket holds already are not sent again). Answers the bytes.
 */
async function restoreBlobs(
  from: { backupDir: string; staging: string; expected: Map<string, number> },
  out: ReturnType<typeof durableWriter>,
  damaged: (what: string) => Error,
  onProgress: ((done: number, total: number) => void) | undefined,
  bucket: BlobStore | undefined,
): Promise<number> {
  const { backupDir, staging, expected } = from;
  let bytes = 0;
  let index = 0;
  for (const [key, size] of expected) {
    const source = blobPath(backupDir, key);
    if (!fs.existsSync(source)) throw damaged(`blob ${key}, which its database references, is missing`);
    const checked = bucket ? source : blobPath(staging, key);
    if (!bucket) out.copy(source, checked);
    const actual = fs.statSync(checked).size;
    if (size >= 0 && actual !== size) throw damaged(`blob ${key} holds ${actual} bytes where its database records ${size}`);
    if (sha256OfFile(checked) !== key) throw damaged(`blob ${key} does not match its SHA-256 (its bytes changed)`);
    bytes += actual;
    if (!bucket) onProgress?.(++index, expected.size);
  }
  if (bucket) {
    for (const key of expected.keys()) {
      (await bucket.put(fs.createReadStream(blobPath(backupDir, key)))).release();
      onProgress?.(++index, expected.size);
    }
  }
  return bytes;
}

/**
 * Restores a complete backup into an empty (or absent) data folder; the server then starts on it
 * as usual. The copy is built in `<data folder>/.restoring` and moved into place once durable,
 * blobs before the database, so no database ever points at blobs that are not there yet. A failed
 * restore removes its copy; one cut off by a crash leaves `.restoring`, which the server refuses to
 * start beside (see database.ts) and which a new restore replaces. Given `bucket` (an instance whose
 * blobs are in an S3-compatible bucket), the blobs are uploaded into it instead, before the database
 * moves into place; a restore that fails after some uploads leaves them as orphans for garbage
 * collection.
 */
export async function restoreEmbedded(
  backupDir: string,
  dataDir: string,
  onProgress?: (done: number, total: number) => void,
  bucket?: BlobStore,
): Promise<BackupReport> {
  const manifest = readBackupManifest(backupDir);
  const target = path.resolve(dataDir);
  const staging = path.join(target, RESTORE_STAGING);
  if (fs.existsSync(target) && fs.readdirSync(target).some((entry) => entry !== RESTORE_STAGING))
    throw new Error(`the data folder ${dataDir} is not empty; restore into a new one`);
  // What an interrupted restore left behind.
  fs.rmSync(staging, { recursive: true, force: true });
  const damaged = (what: string) => new Error(`the backup ${backupDir} is damaged: ${what}; nothing was restored (take a new backup)`);
  try {
    const out = durableWriter();
    out.mkdir(staging);
    out.copy(path.join(backupDir, 'attest.db'), path.join(staging, 'attest.db'));
    const integrity = sqliteIntegrity(path.join(staging, 'attest.db'));
    if (integrity !== 'ok') throw damaged(`its database fails SQLite's integrity check (${integrity})`);
    const expected = referencedIn(path.join(staging, 'attest.db'));
    if (manifest.blobs !== undefined && manifest.blobs !== expected.size)
      throw damaged(`${MANIFEST} lists ${manifest.blobs} blobs, its database references ${expected.size}`);
    const bytes = await restoreBlobs({ backupDir, staging, expected }, out, damaged, onProgress, bucket);
    out.flush();
    // Into place on the same filesystem: the blobs first, then the database that references them.
    if (fs.existsSync(path.join(staging, 'blobs'))) {
      fs.renameSync(path.join(staging, 'blobs'), path.join(target, 'blobs'));
      fsyncPath(target);
    }
    fs.renameSync(path.join(staging, 'attest.db'), path.join(target, 'attest.db'));
    fs.rmdirSync(staging);
    fsyncPath(target);
    return { database: path.join(target, 'attest.db'), blobs: expected.size, bytes };
  } catch (error) {
    fs.rmSync(staging, { recursive: true, force: true });
    throw error;
  }
}
