import fs from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { isBlobKey } from '../blob/blob-store.ts';

const blobPath = (dataDir: string, sha256: string) => path.join(dataDir, 'blobs', sha256.slice(0, 2), sha256.slice(2, 4), sha256);

function referencedIn(db: SQLite.Database): string[] {
  const rows = db
    .prepare(
      `SELECT sha256 AS key FROM artifacts
       UNION SELECT sha256 FROM images
       UNION SELECT thumbnail_sha256 FROM images WHERE thumbnail_sha256 IS NOT NULL`,
    )
    .all() as { key: string }[];
  return rows.map((r) => r.key).filter(isBlobKey);
}

export interface BackupReport {
  database: string;
  blobs: number;
  bytes: number;
}

/**
 * Online backup of an embedded instance (RELIABILITY DUR-12): SQLite's backup API takes a
 * consistent snapshot while the server keeps writing, then the blobs that snapshot references are
 * copied. Blobs are immutable and content-addressed, so copying them after the snapshot yields
 * every blob it needs. A referenced blob that vanished meanwhile (its rows deleted and collected
 * after the snapshot) fails the backup rather than producing one that does not restore.
 */
export async function backupEmbedded(
  dataDir: string,
  destination: string,
  onProgress?: (done: number, total: number) => void,
): Promise<BackupReport> {
  const source = path.join(dataDir, 'attest.db');
  if (!fs.existsSync(source)) throw new Error(`no Attest database in ${dataDir}`);
  if (fs.existsSync(destination) && fs.readdirSync(destination).length > 0) throw new Error(`${destination} is not empty`);
  fs.mkdirSync(destination, { recursive: true });
  const target = path.join(destination, 'attest.db');
  // Read-only and without the instance lock: SQLite's own locking makes reading beside the
  // running server safe, and the backup API copies a consistent snapshot.
  const live = new SQLite(source, { readonly: true, fileMustExist: true });
  try {
    live.pragma('busy_timeout = 5000');
    await live.backup(target);
  } finally {
    live.close();
  }
  const snapshot = new SQLite(target, { readonly: true });
  const keys = referencedIn(snapshot);
  snapshot.close();
  let bytes = 0;
  for (const [index, key] of keys.entries()) {
    const from = blobPath(dataDir, key);
    const to = blobPath(destination, key);
    fs.mkdirSync(path.dirname(to), { recursive: true });
    try {
      fs.copyFileSync(from, to, fs.constants.COPYFILE_EXCL);
    } catch (error) {
      throw new Error(
        `blob ${key} referenced by the snapshot could not be copied (${(error as NodeJS.ErrnoException).code}); run the backup again`,
      );
    }
    bytes += fs.statSync(to).size;
    onProgress?.(index + 1, keys.length);
  }
  return { database: target, blobs: keys.length, bytes };
}

/** Restores a backup into an empty data folder; the server then starts on it as usual. */
export async function restoreEmbedded(
  backupDir: string,
  dataDir: string,
  onProgress?: (done: number, total: number) => void,
): Promise<BackupReport> {
  const source = path.join(backupDir, 'attest.db');
  if (!fs.existsSync(source)) throw new Error(`${backupDir} holds no attest.db`);
  if (fs.existsSync(dataDir) && fs.readdirSync(dataDir).length > 0)
    throw new Error(`the data folder ${dataDir} is not empty; restore into a new one`);
  fs.mkdirSync(dataDir, { recursive: true });
  fs.copyFileSync(source, path.join(dataDir, 'attest.db'));
  const snapshot = new SQLite(path.join(dataDir, 'attest.db'), { readonly: true });
  const keys = referencedIn(snapshot);
  snapshot.close();
  let bytes = 0;
  for (const [index, key] of keys.entries()) {
    const to = blobPath(dataDir, key);
    fs.mkdirSync(path.dirname(to), { recursive: true });
    fs.copyFileSync(blobPath(backupDir, key), to);
    bytes += fs.statSync(to).size;
    onProgress?.(index + 1, keys.length);
  }
  return { database: path.join(dataDir, 'attest.db'), blobs: keys.length, bytes };
}
