import fs from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, type MigrationProvider, Migrator, PostgresDialect, sql } from 'kysely';
import type pg from 'pg';
import type { Config } from '../config.ts';
import { StartupError } from '../errors.ts';
import { BACKSTOP_CHECKPOINT_PAGES, WalCheckpointer } from './checkpointer.ts';
import { MIGRATIONS } from './migration-list.ts';
import { detectNetworkFilesystem } from './network-filesystem.ts';
import { hearConnectionErrors, poolLimits } from './pg-pool.ts';
import { CachingSqliteDialect } from './sqlite-driver.ts';
import { enableIncrementalVacuum, type ReclaimReport, reclaimSqliteSpace, type SpaceLog } from './sqlite-space.ts';
import type { Database, DB, Dialect } from './types.ts';
import { fsyncDirectory, type SyncCounters, WalSync } from './wal-sync.ts';

/** The migrations this build applies, in order (test templates are keyed by them). */
export { MIGRATION_NAMES } from './migration-list.ts';

export { detectNetworkFilesystem };

export interface DatabaseHandle {
  db: DB;
  dialect: Dialect;
  /** Statements sent since start (tests prove a path touches no table); sync counters prove the barrier (DUR-14). */
  stats: { statements: number } & SyncCounters;
  /**
   * Resolves once everything committed before the call is on disk (DUR-14): on SQLite, a shared
   * sync of the write-ahead log (group commit); on PostgreSQL at once, since its COMMIT already
   * waited for its own log flush. Anything acknowledged (an HTTP answer to a write, a CLI report)
   * waits on it first. Rejects with DurabilityError when the sync failed.
   */
  durable(): Promise<void>;
  /**
   * The integrity check of start-up recovery (DUR-9): SQLite `quick_check`, which reads the whole
   * file, or a PostgreSQL round trip. Run once at start-up, never per probe; throws StartupError.
   */
  check(): Promise<void>;
  /** A cheap `SELECT 1` for the readiness probe: the database still answers. */
  ping(): Promise<void>;
  /** The full check behind `attest verify`: problems found (empty when sound). */
  integrityProblems(): Promise<string[]>;
  /**
   * Hands space freed by deletions back to the filesystem (RET-3): on SQLite an incremental vacuum
   * and a truncating WAL checkpoint (sqlite-space.ts); on PostgreSQL nothing (autovacuum reuses the
   * space; only VACUUM FULL or pg_repack returns it, docs/storage.md).
   */
  reclaimSpace(): Promise<ReclaimReport>;
  /** SQLite: the worker that checkpoints the WAL beside the server (tests read its count). */
  checkpointer?: WalCheckpointer;
  close(): Promise<void>;
}

/** The data folder's lock is held by another process (a running server, or a maintenance command). */
export class DataFolderBusyError extends StartupError {
  override name = 'DataFolderBusyError';
}

/**
 * One process per data folder: an exclusive SQLite lock on a side file. The kernel drops it when
 * the process dies, even by SIGKILL, so a crash never leaves a stale lock behind. Start-up
 * recovery deletes unfinished uploads in the folder, so a second process must never share it.
 */
export function lockDataDir(dataDir: string): SQLite.Database {
  fs.mkdirSync(dataDir, { recursive: true });
  // Checked before the lock file is made, so the folder stays as the restore left it.
  if (fs.existsSync(path.join(dataDir, '.restoring'))) {
    throw new StartupError(
      `A restore into ${dataDir} was interrupted (its .restoring folder is still there); run the restore again, ` +
        'or remove the data folder and start afresh.',
    );
  }
  const lock = new SQLite(path.join(dataDir, 'attest.lock'), { timeout: 0 });
  try {
    lock.pragma('locking_mode = EXCLUSIVE');
    lock.exec('BEGIN EXCLUSIVE');
  } catch {
    lock.close();
    throw new DataFolderBusyError(`Another Attest process is using the data folder ${dataDir}.`);
  }
  return lock;
}

function openSqlite(config: Config, log: SpaceLog): { sqlite: SQLite.Database; lock: SQLite.Database } {
  fs.mkdirSync(config.dataDir, { recursive: true });
  if (!config.allowNetworkFs) {
    let mountinfo = '';
    try {
      mountinfo = fs.readFileSync('/proc/self/mountinfo', 'utf8');
    } catch {
      // Not Linux: nothing to detect.
    }
    const fsType = detectNetworkFilesystem(mountinfo, fs.realpathSync(config.dataDir));
    if (fsType) {
      throw new StartupError(
        `The data folder ${config.dataDir} is on a ${fsType} filesystem; SQLite needs a local disk. ` +
          'Set ATTEST_ALLOW_NETWORK_FS=true to start anyway.',
      );
    }
  }
  const lock = lockDataDir(config.dataDir);
  const sqlite = new SQLite(path.join(config.dataDir, 'attest.db'));
  try {
    // Before journal_mode, which writes the first page of a new file: auto_vacuum only takes on a
    // database without tables (an old NONE one is converted there, once; RET-3).
    const convert = !sqlite.pragma('auto_vacuum', { simple: true }) && hasTables(sqlite);
    if (!convert) enableIncrementalVacuum(sqlite, config.dataDir, log);
    sqlite.pragma('journal_mode = WAL');
    // NORMAL in both settings: a commit does not sync the WAL on the event loop. With FULL, the
    // handle's durable() syncs it, shared by concurrent commits, before anything is acknowledged (DUR-14).
    sqlite.pragma('synchronous = NORMAL');
    sqlite.pragma('foreign_keys = ON');
    sqlite.pragma('busy_timeout = 5000');
    sqlite.pragma(`cache_size = -${config.sqliteCacheMb * 1024}`);
    // Checkpoints run beside the server (checkpointer.ts); this connection's own only as a backstop.
    sqlite.pragma(`wal_autocheckpoint = ${BACKSTOP_CHECKPOINT_PAGES}`);
    const expected = { journal_mode: 'wal', synchronous: 1, foreign_keys: 1 };
    for (const [pragma, value] of Object.entries(expected)) {
      const actual = sqlite.pragma(pragma, { simple: true });
      if (actual !== value) throw new StartupError(`SQLite refused PRAGMA ${pragma}=${value} (it reports ${actual})`);
    }
    if (convert) enableIncrementalVacuum(sqlite, config.dataDir, log);
  } catch (error) {
    sqlite.close();
    lock.close();
    throw error;
  }
  return { sqlite, lock };
}

function hasTables(sqlite: SQLite.Database): boolean {
  return sqlite.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' LIMIT 1").get() !== undefined;
}

const silentLog: SpaceLog = { info() {}, warn() {} };
/** SQLite's own automatic checkpoint interval, in WAL pages: back in force if the checkpoint worker fails. */
const DEFAULT_CHECKPOINT_PAGES = 1000;

/** Parses int8 (counts, sizes) as numbers: they stay far below 2^53 here. */
function pgTypes(types: typeof pg.types) {
  return {
    getTypeParser(oid: number, format?: 'text' | 'binary') {
      if (oid === 20) return (value: string) => Number(value);
      return types.getTypeParser(oid, format as 'text');
    },
  };
}

async function checkPostgresDurability(db: DB, config: Config): Promise<void> {
  if (config.allowUnsafePostgres) return;
  const unsafe: string[] = [];
  for (const setting of ['fsync', 'full_page_writes', 'synchronous_commit']) {
    const { rows } = await sql<Record<string, string>>`SELECT current_setting(${setting}) AS value`.execute(db);
    const value = rows[0]?.value;
    if (value === 'off') unsafe.push(`${setting}=off`);
  }
  if (unsafe.length > 0) {
    throw new StartupError(
      `PostgreSQL runs with ${unsafe.join(', ')}: acknowledged writes could be lost. ` +
        'Fix the server settings or set ATTEST_ALLOW_UNSAFE_POSTGRES=true.',
    );
  }
}

type OpenOptions = { onConnectionLost?: (error: Error) => void; log?: SpaceLog };
type Stats = DatabaseHandle['stats'];

/** Opens PostgreSQL, checks it keeps acknowledged writes, and migrates it. */
async function openPostgres(
  config: Config & { databaseUrl: string },
  options: OpenOptions,
  stats: Stats,
  log: () => void,
): Promise<DatabaseHandle> {
  // With blobs in the data folder, the folder (and so the instance) stays one process's (DUR-3).
  // With blobs in a bucket nothing of the instance is on its disk: any number of instances may
  // share the database and the bucket (SCALE-3).
  const lock = config.blobUrl ? undefined : lockDataDir(config.dataDir);
  // Loaded only here: an instance on SQLite does not carry PostgreSQL's client.
  const { default: pg } = await import('pg');
  // Migrations (a backfill may run for minutes) get a pool of their own without the time limits.
  const migrations = new Kysely<Database>({
    dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: config.databaseUrl, max: 1, types: pgTypes(pg.types) }) }),
  });
  const pool = new pg.Pool({ connectionString: config.databaseUrl, max: 10, types: pgTypes(pg.types), ...poolLimits(config) });
  // Without a listener a connection's error is an uncaught exception that ends the process.
  hearConnectionErrors(pool, options.onConnectionLost ?? (() => {}));
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }), log });
  try {
    await checkPostgresDurability(db, config);
    await migrateToLatest(migrations);
  } catch (error) {
    await db.destroy();
    lock?.close();
    throw error;
  } finally {
    await migrations.destroy();
  }
  return {
    db,
    dialect: 'postgres',
    stats,
    async durable() {},
    async check() {
      await sql`SELECT 1`.execute(db);
    },
    async ping() {
      await sql`SELECT 1`.execute(db);
    },
    async integrityProblems() {
      // PostgreSQL enforces foreign keys on every write and checksums its own pages; a round
      // trip proves the server answers.
      await sql`SELECT 1`.execute(db);
      return [];
    },
    async reclaimSpace() {
      return { freedPages: 0, freedBytes: 0, walTruncated: false };
    },
    async close() {
      await db.destroy();
      lock?.close();
    },
  };
}

/** Opens SQLite in the data folder and migrates it; with `synchronous = FULL`, its WAL synced by WalSync. */
async function openSqliteDatabase(config: Config, options: OpenOptions, stats: Stats, log: () => void): Promise<DatabaseHandle> {
  const { sqlite, lock } = openSqlite(config, options.log ?? silentLog);
  let walSync: WalSync | undefined;
  const onCommit = () => {
    stats.commits++;
  };
  const db = new Kysely<Database>({ dialect: new CachingSqliteDialect({ database: sqlite, onCommit, onStatement: log }) });
  try {
    await migrateToLatest(db);
    if (config.sqliteSynchronous === 'FULL') walSync = new WalSync(openWal(sqlite, config.dataDir), stats);
  } catch (error) {
    await db.destroy();
    lock.close();
    throw error;
  }
  const checkpointer = new WalCheckpointer(
    path.join(config.dataDir, 'attest.db'),
    () => stats.commits,
    (error) => {
      options.log?.warn({ err: error }, 'WAL checkpoints run on the serving connection again: the checkpoint worker failed');
      if (sqlite.open) sqlite.pragma(`wal_autocheckpoint = ${DEFAULT_CHECKPOINT_PAGES}`);
    },
  );
  return sqliteHandle({ sqlite, db, stats, walSync, checkpointer, lock });
}

/** What an open SQLite database answers: its checks and probes, and its close in order. */
function sqliteHandle(open: {
  sqlite: SQLite.Database;
  db: DB;
  stats: Stats;
  walSync: WalSync | undefined;
  checkpointer: WalCheckpointer;
  lock: { close(): void };
}): DatabaseHandle {
  const { sqlite, db, stats, walSync, checkpointer, lock } = open;
  const durable = () => walSync?.durable() ?? Promise.resolve();
  const selectOne = sqlite.prepare('SELECT 1');
  return {
    db,
    dialect: 'sqlite',
    stats,
    durable,
    async check() {
      const result = sqlite.pragma('quick_check', { simple: true });
      if (result !== 'ok') throw new StartupError(`SQLite quick_check failed: ${String(result)}`);
    },
    async ping() {
      // On the connection directly, not through Kysely: a probe must not wait behind a long
      // transaction holding Kysely's connection. SELECT 1 reads nothing, so running it between that
      // transaction's statements is harmless.
      selectOne.get();
    },
    async integrityProblems() {
      const integrity = sqlite.pragma('integrity_check') as { integrity_check: string }[];
      const problems = integrity.map((r) => r.integrity_check).filter((r) => r !== 'ok');
      const foreignKeys = sqlite.pragma('foreign_key_check') as { table: string; rowid: number; parent: string }[];
      for (const fk of foreignKeys) problems.push(`foreign key violation: ${fk.table} row ${fk.rowid} → ${fk.parent}`);
      return problems;
    },
    reclaimSpace: () => reclaimSqliteSpace(db),
    checkpointer,
    async close() {
      try {
        await durable();
      } finally {
        // The worker's connection closes first, so the serving one, the last, removes the WAL.
        await checkpointer.close();
        await db.destroy();
        walSync?.close();
        lock.close();
      }
    },
  };
}

/**
 * Opens the configured database (SQLite in the data folder, or PostgreSQL) and migrates it.
 * `onConnectionLost` hears of PostgreSQL connections that broke while idle in the pool (a server
 * restart, an administrator terminating them): the pool drops them and opens new ones on demand.
 */
export async function createDatabase(config: Config, options: OpenOptions = {}): Promise<DatabaseHandle> {
  const stats = { statements: 0, commits: 0, syncs: 0, syncedThrough: 0 };
  // Every statement is counted (tests wait on the count): on PostgreSQL through Kysely's query log,
  // on SQLite by the driver itself, which costs less per statement.
  const log = () => {
    stats.statements++;
  };
  const { databaseUrl } = config;
  return databaseUrl ? openPostgres({ ...config, databaseUrl }, options, stats, log) : openSqliteDatabase(config, options, stats, log);
}

/**
 * The descriptor WalSync syncs. The WAL exists once a transaction has read the database (the
 * migrations did; the read below makes sure), and its directory entry is made durable once here,
 * so a sync of the file alone later suffices (DUR-14).
 */
function openWal(sqlite: SQLite.Database, dataDir: string): number {
  sqlite.prepare('SELECT count(*) FROM sqlite_master').get();
  const fd = fs.openSync(path.join(dataDir, 'attest.db-wal'), 'r');
  fsyncDirectory(dataDir);
  return fd;
}

/** Applies every pending migration; throws (and the caller exits non-zero) if one fails. */
// biome-ignore lint/suspicious/noExplicitAny: migrations run on a schema-less handle, before any table type holds
export async function migrateToLatest(db: Kysely<any>): Promise<string[]> {
  const provider: MigrationProvider = { getMigrations: async () => MIGRATIONS };
  const migrator = new Migrator({
    db,
    provider,
    migrationTableName: 'attest_migrations',
    migrationLockTableName: 'attest_migrations_lock',
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((r) => r.status === 'Error')?.migrationName ?? 'unknown';
    throw new StartupError(`Migration ${failed} failed: ${error instanceof Error ? error.message : String(error)}`);
  }
  return (results ?? []).map((r) => r.migrationName);
}
