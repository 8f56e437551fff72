import SQLite from 'better-sqlite3';

// The statements of the embedded backup and restore (`backup/`), which work on SQLite files
// rather than on the server's open database: each opens its own better-sqlite3 connection to a
// file, so they live here, with the drivers, and not in `repositories/` (whose functions take the
// open database or a transaction).

/**
 * Copies the live database at `source` to `target` with SQLite's online backup API, read-only
 * and without the instance lock: SQLite's own locking makes reading beside the running server
 * safe, and the backup copies one consistent snapshot.
 */
export async function copySqliteSnapshot(source: string, target: string): Promise<void> {
  const live = new SQLite(source, { readonly: true, fileMustExist: true });
  try {
    live.pragma('busy_timeout = 5000');
    // All pages in one step: SQLite restarts an online backup whenever another connection writes
    // between two steps, so under steady uploads a copy in small steps (better-sqlite3 defaults to
    // 100 pages) never finishes. One step reads one consistent snapshot while, in WAL mode, the
    // server keeps writing.
    await live.backup(target, { progress: () => 0x7fffffff });
  } finally {
    live.close();
  }
}

/**
 * Every blob reference in a database copy, with the size its row records (-1 where no row records
 * one of its own: thumbnails, the diff image of a visual diff). Opened read-write, though it only
 * reads: the copy is in WAL mode like its source, and closing a read-only connection would leave
 * `-wal` and `-shm` files beside it, while closing this one removes them.
 */
export function blobReferencesIn(file: string): { key: string; size: number }[] {
  const db = new SQLite(file, { fileMustExist: true });
  try {
    return db
      .prepare(
        `SELECT sha256 AS key, CASE WHEN kind = 'visual-diff' THEN -1 ELSE size END AS size FROM artifacts
         UNION ALL SELECT sha256, size FROM images
         UNION ALL SELECT thumbnail_sha256, -1 FROM images WHERE thumbnail_sha256 IS NOT NULL`,
      )
      .all() as { key: string; size: number }[];
  } finally {
    db.close();
  }
}

/** SQLite's integrity check of a database file: 'ok', or what it found (or why it could not look). */
export function sqliteIntegrity(file: string): string {
  const check = new SQLite(file, { fileMustExist: true });
  try {
    return String(check.pragma('integrity_check', { simple: true }));
  } catch (error) {
    return (error as Error).message;
  } finally {
    check.close();
  }
}
