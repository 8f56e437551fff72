import fs from 'node:fs';
import path from 'node:path';
import type SQLite from 'better-sqlite3';
import { type Kysely, sql } from 'kysely';

/** Where the database reports what it did about space: the server's logger, or nothing. */
export interface SpaceLog {
  info(details: object, message: string): void;
  warn(details: object, message: string): void;
}

/** What one `reclaimSpace` did (RET-3). */
export interface ReclaimReport {
  /** Free pages handed back to the filesystem (the file shrank by this many pages). */
  freedPages: number;
  /** Bytes they were: `freedPages` × the page size. */
  freedBytes: number;
  /** Whether the write-ahead log was checkpointed and truncated to nothing; false when a reader kept it (tried again next time). */
  walTruncated: boolean;
}

/** `PRAGMA auto_vacuum` values. */
const AUTO_VACUUM_NONE = 0;
const AUTO_VACUUM_INCREMENTAL = 2;
/** Pages freed per `incremental_vacuum` step: one short write transaction each, so requests interleave. */
const VACUUM_STEP_PAGES = 1000;

/**
 * Called right after SQLite opens the file, before anything else touches it (RET-3). A new, empty
 * database takes `auto_vacuum=INCREMENTAL` because no table exists yet; a FULL one switches at
 * once. One created with NONE (before this setting existed) is converted by a full VACUUM, once:
 * it rewrites the file, so it needs free disk about twice the database's size (the copy, and the
 * write-ahead log it goes through). Without that room, or if the VACUUM fails, the database keeps
 * NONE (space is still reused, only not returned), the reason is logged and start-up goes on; the
 * next start tries again.
 */
export function enableIncrementalVacuum(sqlite: SQLite.Database, dataDir: string, log: SpaceLog): void {
  sqlite.pragma('auto_vacuum = INCREMENTAL');
  if (sqlite.pragma('auto_vacuum', { simple: true }) !== AUTO_VACUUM_NONE) return;
  const file = path.join(dataDir, 'attest.db');
  const size = sizeOf(file) + sizeOf(`${file}-wal`);
  let free = Number.POSITIVE_INFINITY;
  try {
    const stats = fs.statfsSync(dataDir);
    free = stats.bavail * stats.bsize;
  } catch {
    // No statfs here: try, and let a failure say so.
  }
  if (free < 2 * size) {
    log.warn(
      { databaseBytes: size, freeBytes: free },
      'SQLite auto_vacuum stays NONE: converting it to INCREMENTAL needs free disk about twice the database; freed space is reused but not returned until then',
    );
    return;
  }
  const started = Date.now();
  try {
    sqlite.exec('VACUUM');
    sqlite.pragma('wal_checkpoint(TRUNCATE)');
  } catch (error) {
    log.warn({ err: error, databaseBytes: size }, 'SQLite auto_vacuum stays NONE: the VACUUM converting it to INCREMENTAL failed');
    return;
  }
  const now = sqlite.pragma('auto_vacuum', { simple: true });
  if (now !== AUTO_VACUUM_INCREMENTAL) {
    log.warn({ autoVacuum: now }, 'SQLite auto_vacuum stays NONE: the VACUUM did not convert it to INCREMENTAL');
    return;
  }
  log.info(
    { databaseBytes: size, afterBytes: sizeOf(file), ms: Date.now() - started },
    'SQLite database converted to auto_vacuum=INCREMENTAL (one full VACUUM)',
  );
}

function sizeOf(file: string): number {
  try {
    return fs.statSync(file).size;
  } catch {
    return 0;
  }
}

/**
 * Returns free pages to the filesystem (RET-3): `incremental_vacuum` in steps, each its own short
 * write transaction on the one connection (so requests run between them, and a step never lands
 * inside someone's transaction), then a `wal_checkpoint(TRUNCATE)` so the write-ahead log,
 * which the vacuum just grew, shrinks to nothing. The checkpoint syncs the WAL before copying and
 * the database file after (SQLite's own protocol), and truncates the WAL in place, the same file
 * WalSync keeps open (DUR-14). It does not wait for readers (an online backup in another process):
 * with them it gives up at once rather than block the event loop, and the next call tries again.
 */
// biome-ignore lint/suspicious/noExplicitAny: runs on any SQLite Kysely handle; only PRAGMAs are sent
export async function reclaimSqliteSpace(db: Kysely<any>): Promise<ReclaimReport> {
  const pragma = async (text: string) => (await sql.raw<Record<string, number>>(`PRAGMA ${text}`).execute(db)).rows;
  const pageSize = (await pragma('page_size'))[0]?.page_size ?? 4096;
  const freePages = async () => (await pragma('freelist_count'))[0]?.freelist_count ?? 0;
  let freedPages = 0;
  let left = await freePages();
  while (left > 0) {
    await pragma(`incremental_vacuum(${VACUUM_STEP_PAGES})`);
    const now = await freePages();
    if (now >= left) break; // Not an incremental database (auto_vacuum NONE): nothing comes back this way.
    freedPages += left - now;
    left = now;
  }
  const walTruncated = await db.connection().execute(async (connection) => {
    const timeout = (await sql.raw<{ timeout: number }>('PRAGMA busy_timeout').execute(connection)).rows[0]?.timeout ?? 5000;
    await sql.raw('PRAGMA busy_timeout = 0').execute(connection);
    try {
      const { rows } = await sql.raw<{ busy: number; log: number }>('PRAGMA wal_checkpoint(TRUNCATE)').execute(connection);
      return rows[0]?.busy === 0;
    } catch {
      return false; // SQLITE_BUSY: a reader holds the log.
    } finally {
      await sql.raw(`PRAGMA busy_timeout = ${Number(timeout)}`).execute(connection);
    }
  });
  return { freedPages, freedBytes: freedPages * pageSize, walTruncated };
}
