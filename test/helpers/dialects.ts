import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Dialect } from '../../src/server/db/types.ts';

/** The PostgreSQL server the suite creates its databases on. */
export const PG_ADMIN_URL = process.env.ATTEST_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

let probe: Promise<boolean> | undefined;

async function postgresReachable(): Promise<boolean> {
  const client = new pg.Client({ connectionString: PG_ADMIN_URL, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * The dialects this run covers: SQLite always, PostgreSQL when its server answers. Without it the
 * PostgreSQL suite is skipped with a visible message, except in CI (CI=true), where a missing
 * server fails the run rather than silently testing less.
 */
export async function testDialects(): Promise<Dialect[]> {
  probe ??= postgresReachable();
  if (await probe) return ['sqlite', 'postgres'];
  if (process.env.CI === 'true') {
    throw new Error(`CI=true but PostgreSQL is not reachable at ${PG_ADMIN_URL}; the PostgreSQL suite must run in CI.`);
  }
  process.stdout.write(`\n# SKIPPED: PostgreSQL suite (no server at ${PG_ADMIN_URL}; set ATTEST_TEST_POSTGRES_URL)\n`);
  return ['sqlite'];
}

/** Dialects as a top-level-awaited constant, for `for (const dialect of DIALECTS) describe(...)`. */
export const DIALECTS: Dialect[] = await testDialects();

/** A fresh, empty PostgreSQL database for one test file or one spawned server, and how to drop it. */
export async function createPostgresDatabase(prefix = 'attest_test'): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: PG_ADMIN_URL });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.end();
    },
  };
}
