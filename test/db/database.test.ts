import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, test } from 'node:test';
import SQLite from 'better-sqlite3';
import { Kysely, Migrator, SqliteDialect, sql } from 'kysely';
import pg from 'pg';
import { loadConfig } from '../../src/server/config.ts';
import { createDatabase, migrateToLatest } from '../../src/server/db/database.ts';
import * as initialMigration from '../../src/server/db/migrations/2026-11-22-0001-initial.ts';
import { StartupError } from '../../src/server/errors.ts';
import { damagedDataDir, tempDir } from '../helpers/data-folders.ts';
import { createPostgresDatabase, DIALECTS, PG_ADMIN_URL } from '../helpers/dialects.ts';
import { waitFor } from '../helpers/wait.ts';

describe('[sqlite] createDatabase', () => {
  test('opens in WAL mode with synchronous=NORMAL (durable() syncs the WAL, DUR-14) and foreign keys on, and verifies them', async () => {
    const dir = tempDir();
    const handle = await createDatabase(loadConfig({ ATTEST_DATA_DIR: dir }));
    const { rows } = await sql<{ journal_mode: string }>`PRAGMA journal_mode`.execute(handle.db);
    const sync = await sql<{ synchronous: number }>`PRAGMA synchronous`.execute(handle.db);
    const fk = await sql<{ foreign_keys: number }>`PRAGMA foreign_keys`.execute(handle.db);
    assert.equal(rows[0]?.journal_mode, 'wal');
    assert.equal(sync.rows[0]?.synchronous, 1);
    assert.equal(fk.rows[0]?.foreign_keys, 1);
    await handle.close();
  });

  test('gives SQLite the page cache ATTEST_SQLITE_CACHE_MB asks for (64 MiB by default)', async () => {
    for (const [env, kib] of [
      [{}, 64 * 1024],
      [{ ATTEST_SQLITE_CACHE_MB: '8' }, 8 * 1024],
    ] as const) {
      const handle = await createDatabase(loadConfig({ ATTEST_DATA_DIR: tempDir(), ...env }));
      try {
        const { rows } = await sql<{ cache_size: number }>`PRAGMA cache_size`.execute(handle.db);
        // A negative cache_size is in KiB.
        assert.equal(rows[0]?.cache_size, -kib);
      } finally {
        await handle.close();
      }
    }
  });

  test('lets only one process open a data folder at a time', async () => {
    const dir = tempDir();
    const first = await createDatabase(loadConfig({ ATTEST_DATA_DIR: dir }));
    await assert.rejects(
      createDatabase(loadConfig({ ATTEST_DATA_DIR: dir })),
      (e: Error) => e instanceof StartupError && /Another Attest process/.test(e.message),
    );
    await first.close();
    const again = await createDatabase(loadConfig({ ATTEST_DATA_DIR: dir }));
    await again.close();
  });

  test('check() runs quick_check and fails on a damaged file, while the readiness ping() still answers', async () => {
    const handle = await createDatabase(loadConfig({ ATTEST_DATA_DIR: await damagedDataDir() }));
    try {
      await assert.rejects(handle.check(), (e: Error) => e instanceof StartupError && /quick_check failed/.test(e.message));
      await handle.ping();
    } finally {
      await handle.close();
    }
  });

  test('a database made by the first release is brought up to date on open', async () => {
    const dir = tempDir();
    // Only the first migration, as the first release left the file.
    const old = new Kysely<unknown>({ dialect: new SqliteDialect({ database: new SQLite(path.join(dir, 'attest.db')) }) });
    const first = new Migrator({
      db: old,
      provider: { getMigrations: async () => ({ '2026-11-22-0001-initial': initialMigration }) },
      migrationTableName: 'attest_migrations',
      migrationLockTableName: 'attest_migrations_lock',
    });
    assert.equal((await first.migrateToLatest()).error, undefined);
    await old.destroy();
    const handle = await createDatabase(loadConfig({ ATTEST_DATA_DIR: dir }));
    try {
      const columns = await sql<{ name: string }>`SELECT name FROM pragma_table_info('test_runs')`.execute(handle.db);
      assert.ok(columns.rows.some((c) => c.name === 'idempotency_key'));
      await sql`SELECT run_id FROM result_posts`.execute(handle.db);
    } finally {
      await handle.close();
    }
  });

  test('re-running migrations is a no-op', async () => {
    const dir = tempDir();
    const handle = await createDatabase(loadConfig({ ATTEST_DATA_DIR: dir }));
    assert.deepEqual(await migrateToLatest(handle.db), []);
    await handle.close();
  });
});

if (DIALECTS.includes('postgres')) {
  describe('[postgres] createDatabase', () => {
    async function withDatabase(fn: (url: string, admin: pg.Client, name: string) => Promise<void>) {
      // Empty, not a clone of the migrated template: these tests watch createDatabase migrate it.
      const database = await createPostgresDatabase('attest_db', { empty: true });
      const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
      await admin.connect();
      try {
        await fn(database.url, admin, database.name);
      } finally {
        await admin.end();
        await database.drop();
      }
    }

    test('refuses to start when synchronous_commit is off, unless overridden', async () => {
      await withDatabase(async (url, admin, name) => {
        await admin.query(`ALTER DATABASE ${name} SET synchronous_commit = off`);
        await assert.rejects(
          createDatabase(loadConfig({ ATTEST_DATABASE_URL: url, ATTEST_DATA_DIR: tempDir() })),
          (e: Error) => e instanceof StartupError && /synchronous_commit=off/.test(e.message),
        );
        const handle = await createDatabase(
          loadConfig({ ATTEST_DATABASE_URL: url, ATTEST_ALLOW_UNSAFE_POSTGRES: 'true', ATTEST_DATA_DIR: tempDir() }),
        );
        await handle.close();
      });
    });

    test('survives PostgreSQL terminating its idle connections, and the next query opens a new one', async () => {
      await withDatabase(async (url, admin, name) => {
        const lost: Error[] = [];
        const handle = await createDatabase(loadConfig({ ATTEST_DATABASE_URL: url, ATTEST_DATA_DIR: tempDir() }), {
          onConnectionLost: (error) => lost.push(error),
        });
        try {
          await handle.ping(); // leaves an idle connection in the pool
          const { rowCount } = await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [name]);
          assert.ok((rowCount ?? 0) >= 1);
          await waitFor(() => lost.length >= 1, { message: 'the broken idle connection was reported, not thrown' });
          await handle.ping();
        } finally {
          await handle.close();
        }
      });
    });

    test('migrates a fresh database, and re-running is a no-op', async () => {
      await withDatabase(async (url) => {
        const handle = await createDatabase(loadConfig({ ATTEST_DATABASE_URL: url, ATTEST_DATA_DIR: tempDir() }));
        assert.deepEqual(await migrateToLatest(handle.db), []);
        const { rows } = await sql<{
          n: number;
        }>`SELECT count(*) AS n FROM information_schema.tables WHERE table_name = 'test_runs'`.execute(handle.db);
        assert.equal(Number(rows[0]?.n), 1);
        await handle.close();
      });
    });
  });
}
