import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import SQLite from 'better-sqlite3';
import { Kysely, Migrator, SqliteDialect, sql } from 'kysely';
import pg from 'pg';
import { loadConfig } from '../../src/server/config.ts';
import { createDatabase, migrateToLatest, StartupError } from '../../src/server/db/database.ts';
import * as initialMigration from '../../src/server/db/migrations/2026-11-22-0001-initial.ts';
import { DIALECTS, PG_ADMIN_URL } from '../helpers/dialects.ts';

const tempDir = () => fs.mkdtempSync(path.join(os.tmpdir(), 'attest-db-'));

/** A migrated data folder whose database file has one damaged b-tree page (in a table of its own). */
async function damagedDataDir(): Promise<string> {
  const dir = tempDir();
  await (await createDatabase(loadConfig({ ATTEST_DATA_DIR: dir }))).close();
  const file = path.join(dir, 'attest.db');
  const raw = new SQLite(file);
  raw.exec(`CREATE TABLE filler(x TEXT);
    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000) INSERT INTO filler SELECT printf('%0100d', i) FROM n`);
  const { rootpage } = raw.prepare("SELECT rootpage FROM sqlite_master WHERE name = 'filler'").get() as { rootpage: number };
  const pageSize = raw.pragma('page_size', { simple: true }) as number;
  raw.close(); // checkpoints the WAL into the file
  const fd = fs.openSync(file, 'r+');
  fs.writeSync(fd, Buffer.alloc(64, 0xff), 0, 64, (rootpage - 1) * pageSize);
  fs.closeSync(fd);
  return dir;
}

describe('[sqlite] createDatabase', () => {
  test('opens in WAL mode with synchronous=FULL and foreign keys on, and verifies them', async () => {
    const dir = tempDir();
    const handle = await createDatabase(loadConfig({ ATTEST_DATA_DIR: dir }));
    const { rows } = await sql<{ journal_mode: string }>`PRAGMA journal_mode`.execute(handle.db);
    const sync = await sql<{ synchronous: number }>`PRAGMA synchronous`.execute(handle.db);
    const fk = await sql<{ foreign_keys: number }>`PRAGMA foreign_keys`.execute(handle.db);
    assert.equal(rows[0]?.journal_mode, 'wal');
    assert.equal(sync.rows[0]?.synchronous, 2);
    assert.equal(fk.rows[0]?.foreign_keys, 1);
    await handle.close();
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

  test('a second server on the same data folder exits non-zero while the first keeps serving', async () => {
    const dir = tempDir();
    const env = { ...process.env, ATTEST_DATA_DIR: dir, PORT: '0', HOST: '127.0.0.1', ATTEST_LOG_LEVEL: 'warn' };
    const first = spawn(process.execPath, ['--import', 'tsx', 'src/server/main.ts'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      let out = '';
      first.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
      });
      while (!/attest listening (\S+)/.test(out)) await once(first.stdout, 'data');
      const url = /attest listening (\S+)/.exec(out)?.[1] as string;
      const second = spawn(process.execPath, ['--import', 'tsx', 'src/server/main.ts'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
      let err = '';
      second.stderr.on('data', (chunk: Buffer) => {
        err += chunk.toString();
      });
      const [code] = await once(second, 'exit');
      assert.equal(code, 1);
      assert.match(err, /Another Attest process is using the data folder/);
      const health = await fetch(`${url}/api/v1/health`);
      assert.equal(health.status, 200);
    } finally {
      first.kill('SIGTERM');
      await once(first, 'exit');
    }
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

  test('a server refuses to start on a database that fails quick_check (DUR-9)', async () => {
    const env = { ...process.env, ATTEST_DATA_DIR: await damagedDataDir(), PORT: '0', HOST: '127.0.0.1', ATTEST_LOG_LEVEL: 'warn' };
    const server = spawn(process.execPath, ['--import', 'tsx', 'src/server/main.ts'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    server.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    server.stderr.on('data', (chunk: Buffer) => {
      err += chunk.toString();
    });
    const [code] = await once(server, 'exit');
    assert.equal(code, 1);
    assert.match(err, /attest: SQLite quick_check failed/);
    assert.doesNotMatch(out, /attest listening/);
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
      const name = `attest_db_${randomBytes(5).toString('hex')}`;
      const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
      await admin.connect();
      await admin.query(`CREATE DATABASE ${name}`);
      const url = new URL(PG_ADMIN_URL);
      url.pathname = `/${name}`;
      try {
        await fn(url.toString(), admin, name);
      } finally {
        await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        await admin.end();
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
          for (let i = 0; i < 50 && lost.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 20));
          assert.ok(lost.length >= 1, 'the broken idle connection was reported, not thrown');
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
