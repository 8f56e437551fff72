import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { MIGRATION_NAMES, migrateToLatest } from '../../src/server/db/database.ts';
import type { Dialect } from '../../src/server/db/types.ts';

/** The PostgreSQL server the suite creates its databases on. */
export const PG_ADMIN_URL = process.env.ATTEST_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export interface ProbeOptions {
  /** How long to keep trying before giving up; default a minute. */
  deadlineMs?: number;
  /** The first try's connection timeout, doubled on each try up to 15 s; default 2 s. */
  connectTimeoutMs?: number;
  /** The first pause between tries, doubled on each try up to 5 s; default 250 ms. */
  pauseMs?: number;
  /**
   * Whether a server that is plainly not there (connection refused, no such host or socket) is
   * tried again too. Outside CI it is not: a machine without PostgreSQL skips its suite at once.
   */
  retryRefused?: boolean;
}

export type ProbeResult = { ok: true; attempts: number } | { ok: false; attempts: number; error: string };

/** Errors that say nothing listens there, rather than that it answers slowly. */
const NOT_THERE = new Set(['ECONNREFUSED', 'ENOTFOUND', 'ENOENT', 'EAI_AGAIN']);

function describeError(error: unknown): string {
  if (error instanceof AggregateError && error.errors.length > 0) return error.errors.map(describeError).join('; ');
  if (!(error instanceof Error)) return String(error);
  const code = (error as { code?: string }).code;
  return code && !error.message.includes(code) ? `${code}: ${error.message}` : error.message;
}

/**
 * Whether the PostgreSQL server at `url` answers `SELECT 1`. A loaded machine can take seconds to
 * accept a connection (at a load average of 14 one 2-second try failed although the server was
 * up), so it tries again with a growing connection timeout and pause until `deadlineMs` has
 * passed, and says why the last try failed when it gives up.
 */
export async function probePostgres(url: string, options: ProbeOptions = {}): Promise<ProbeResult> {
  const { deadlineMs = 60_000, connectTimeoutMs = 2000, pauseMs = 250, retryRefused = true } = options;
  const deadline = Date.now() + deadlineMs;
  let timeout = connectTimeoutMs;
  let pause = pauseMs;
  for (let attempts = 1; ; attempts++) {
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: timeout });
    // A connection that ends badly after the try (the timeout's own socket) must not crash the process.
    client.on('error', () => {});
    try {
      await client.connect();
      await client.query('SELECT 1');
      return { ok: true, attempts };
    } catch (error) {
      const code = (error as { code?: string }).code ?? '';
      const left = deadline - Date.now();
      if (left <= 0 || (!retryRefused && NOT_THERE.has(code))) {
        return { ok: false, attempts, error: describeError(error) };
      }
      await sleep(Math.min(pause, left));
    } finally {
      await client.end().catch(() => {});
    }
    timeout = Math.min(timeout * 2, 15_000);
    pause = Math.min(pause * 2, 5000);
  }
}

let probe: Promise<ProbeResult> | undefined;

/**
 * The dialects this run covers: SQLite always, PostgreSQL when its server answers. Without it the
 * PostgreSQL suite is skipped with a visible message, except in CI (CI=true), where a missing
 * server fails the run rather than silently testing less. A slow server is waited for up to a
 * minute (a refused connection too, in CI), and the message says what the last try met.
 */
export async function testDialects(): Promise<Dialect[]> {
  const ci = process.env.CI === 'true';
  probe ??= probePostgres(PG_ADMIN_URL, { retryRefused: ci });
  const result = await probe;
  if (result.ok) return ['sqlite', 'postgres'];
  const why = `after ${result.attempts} ${result.attempts === 1 ? 'try' : 'tries'}: ${result.error}`;
  if (ci) {
    throw new Error(`CI=true but PostgreSQL is not reachable at ${PG_ADMIN_URL} (${why}); the PostgreSQL suite must run in CI.`);
  }
  process.stdout.write(`\n# SKIPPED: PostgreSQL suite (no server at ${PG_ADMIN_URL}, ${why}; set ATTEST_TEST_POSTGRES_URL)\n`);
  return ['sqlite'];
}

/** Dialects as a top-level-awaited constant, for `for (const dialect of DIALECTS) describe(...)`. */
export const DIALECTS: Dialect[] = await testDialects();

/** The URL of database `name` on the PostgreSQL server the suite uses. */
export function postgresUrl(name: string): string {
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Runs `fn` with a connection to the `postgres` maintenance database, then closes it. */
async function withAdmin<T>(fn: (admin: pg.Client) => Promise<T>): Promise<T> {
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  try {
    return await fn(admin);
  } finally {
    await admin.end();
  }
}

const MIGRATIONS_DIR = fileURLToPath(new URL('../../src/server/db/migrations/', import.meta.url));

/**
 * The name of the migrated template database for the migration set in src/server/db/migrations:
 * a hash of each migration's file name and content, and of the list the build registers, so a new,
 * edited or newly registered migration gets a template of its own and never a stale schema.
 */
function templateName(): string {
  const hash = createHash('sha256');
  hash.update(`${MIGRATION_NAMES.join('\n')}\0`);
  for (const file of fs.readdirSync(MIGRATIONS_DIR).sort()) {
    hash.update(`${file}\0`);
    hash.update(fs.readFileSync(path.join(MIGRATIONS_DIR, file)));
  }
  return `${TEMPLATE_PREFIX}${hash.digest('hex').slice(0, 16)}`;
}

const TEMPLATE_PREFIX = 'attest_tmpl_';
/** One advisory lock key for every template of every run on this server: shared to clone, exclusive to build or drop. */
const TEMPLATE_LOCK = 0x617474; // 'att'
/** A template of another migration set that nobody cloned for this long is dropped. */
const STALE_TEMPLATE_MS = 60 * 60_000;

/**
 * Builds the template under the exclusive lock unless a finished one exists (a build that died
 * half-way leaves a database not yet marked IS_TEMPLATE: it is dropped and built again), and drops
 * the templates of other migration sets that have not been cloned for an hour (their comment holds
 * when they were last cloned), so a branch with other migrations running beside this one keeps its own.
 */
async function buildTemplate(admin: pg.Client, name: string): Promise<void> {
  await admin.query('SELECT pg_advisory_lock($1)', [TEMPLATE_LOCK]);
  try {
    const { rows } = await admin.query<{ datname: string; datistemplate: boolean; last: string | null }>(
      `SELECT datname, datistemplate, shobj_description(oid, 'pg_database') AS last FROM pg_database WHERE datname LIKE $1`,
      [`${TEMPLATE_PREFIX}%`],
    );
    for (const row of rows) {
      const stale = Date.now() - Date.parse(row.last ?? '') > STALE_TEMPLATE_MS || row.last === null;
      if (row.datname === name ? !row.datistemplate : stale) {
        await admin.query(`ALTER DATABASE ${row.datname} IS_TEMPLATE false`);
        await admin.query(`DROP DATABASE IF EXISTS ${row.datname} WITH (FORCE)`);
      }
    }
    if (rows.some((row) => row.datname === name && row.datistemplate)) return;
    await admin.query(`CREATE DATABASE ${name}`);
    const db = new Kysely<unknown>({
      dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: postgresUrl(name), max: 1 }) }),
    });
    try {
      await migrateToLatest(db);
    } finally {
      // No session may be connected to a template while it is cloned.
      await db.destroy();
    }
    await admin.query(`COMMENT ON DATABASE ${name} IS '${new Date().toISOString()}'`);
    await admin.query(`ALTER DATABASE ${name} IS_TEMPLATE true`);
  } finally {
    await admin.query('SELECT pg_advisory_unlock($1)', [TEMPLATE_LOCK]);
  }
}

/**
 * Clones the migrated template into `name` under the shared lock (clones run side by side; a
 * build or a drop waits for them), building the template first if this migration set has none.
 */
async function cloneTemplate(admin: pg.Client, name: string): Promise<void> {
  const template = templateName();
  for (let attempt = 1; ; attempt++) {
    await admin.query('SELECT pg_advisory_lock_shared($1)', [TEMPLATE_LOCK]);
    let cloned = false;
    try {
      const { rows } = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1 AND datistemplate', [template]);
      if (rows.length > 0) {
        await admin.query(`CREATE DATABASE ${name} TEMPLATE ${template}`);
        // When it was last cloned, for the stale-template sweep; best effort (a parallel clone may be writing it too).
        await admin.query(`COMMENT ON DATABASE ${template} IS '${new Date().toISOString()}'`).catch(() => {});
        cloned = true;
      }
    } catch (error) {
      // A session still leaving the template (the build's own, just closed) makes CREATE DATABASE
      // fail after PostgreSQL's own five-second wait: try again, a few times.
      if (attempt >= 3 || !/being accessed by other users/.test(String(error))) throw error;
    } finally {
      await admin.query('SELECT pg_advisory_unlock_shared($1)', [TEMPLATE_LOCK]);
    }
    if (cloned) return;
    await buildTemplate(admin, template);
  }
}

/**
 * A fresh PostgreSQL database for one test file or one spawned server, and how to drop it. It is a
 * clone of the migrated template of the current migration set (the server finds nothing to
 * migrate); `{ empty: true }` gives an empty one instead, for tests of the migrations themselves.
 */
export async function createPostgresDatabase(
  prefix = 'attest_test',
  options: { empty?: boolean } = {},
): Promise<{ name: string; url: string; drop: () => Promise<void> }> {
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  await withAdmin(async (admin) => {
    if (options.empty) await admin.query(`CREATE DATABASE ${name}`);
    else await cloneTemplate(admin, name);
  });
  return {
    name,
    url: postgresUrl(name),
    drop: () => withAdmin((admin) => dropDatabase(admin, name)),
  };
}

/**
 * Drops a test database once the sessions still leaving it have left (up to five seconds), then
 * with FORCE. A pool that has just ended has sent its sessions' Terminate, but their backends may
 * not have gone yet: FORCE would signal them, and the error a backend then sends can reach the
 * ended client, which has no listener any more, as an uncaught exception of the test process.
 */
async function dropDatabase(admin: pg.Client, name: string): Promise<void> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const { rows } = await admin.query<{ n: string }>('SELECT count(*) AS n FROM pg_stat_activity WHERE datname = $1', [name]);
    if (Number(rows[0]?.n ?? 0) === 0 || Date.now() > deadline) break;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
}
