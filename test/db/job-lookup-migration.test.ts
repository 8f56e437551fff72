import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import SQLite from 'better-sqlite3';
import { Kysely, type Migration, Migrator, PostgresDialect, SqliteDialect } from 'kysely';
import pg from 'pg';
import { MIGRATION_NAMES } from '../../src/server/db/database.ts';
import { tempDir } from '../helpers/data-folders.ts';
import { createPostgresDatabase, DIALECTS } from '../helpers/dialects.ts';

// TRIAGE-17: migration 0032 copies each job's branch and build out of its request JSON into the
// columns the job lookups index, on rows written as the version before it wrote them.

const MINE = '2026-12-02-0032-job-lookup';

// biome-ignore lint/suspicious/noExplicitAny: migrations run on a schema-less handle
type AnyDb = Kysely<any>;

async function migrate(db: AnyDb, names: readonly string[]): Promise<void> {
  const migrations: Record<string, Migration> = {};
  for (const name of names) migrations[name] = await import(`../../src/server/db/migrations/${name}.ts`);
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => migrations },
    migrationTableName: 'attest_migrations',
    migrationLockTableName: 'attest_migrations_lock',
  });
  const { error } = await migrator.migrateToLatest();
  if (error) throw error;
}

for (const dialect of DIALECTS) {
  describe(`[${dialect}] migration ${MINE}`, () => {
    let db: AnyDb;
    let drop: () => Promise<void> = async () => {};
    before(async () => {
      if (dialect === 'sqlite') {
        db = new Kysely({ dialect: new SqliteDialect({ database: new SQLite(path.join(tempDir(), 'attest.db')) }) });
      } else {
        const database = await createPostgresDatabase('attest_job_lookup', { empty: true });
        db = new Kysely({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: database.url, max: 2 }) }) });
        drop = database.drop;
      }
      await migrate(
        db,
        MIGRATION_NAMES.filter((name) => name < MINE),
      );
    });
    after(async () => {
      await db.destroy();
      await drop();
    });

    test("each job's branch and build come out of its request into their columns; a request without them leaves null", async () => {
      const at = '2026-03-02T09:00:00.000Z';
      await db
        .insertInto('projects')
        .values({ id: 'p1', key: 'SHOP', name: 'Shop', description: '', created_at: at, updated_at: at })
        .execute();
      const request = (labels: Record<string, unknown>) =>
        JSON.stringify({ testIds: [], deviceIds: [], deviceLabels: [], environment: null, commit: null, ...labels });
      // More jobs than one batch of the migration reads, so it pages through them.
      const jobs = Array.from({ length: 1203 }, (_, i) => ({
        id: `j${String(i).padStart(5, '0')}`,
        project_id: 'p1',
        name: 'ci',
        request: i % 3 === 0 ? request({ branch: 'main', build: String(i) }) : i % 3 === 1 ? request({ branch: null, build: null }) : '{}',
        created_at: at,
      }));
      for (let i = 0; i < jobs.length; i += 200)
        await db
          .insertInto('jobs')
          .values(jobs.slice(i, i + 200))
          .execute();

      await migrate(db, MIGRATION_NAMES);

      const rows: { id: string; branch: string | null; build: string | null }[] = await db
        .selectFrom('jobs')
        .select(['id', 'branch', 'build'])
        .orderBy('id')
        .execute();
      assert.equal(rows.length, jobs.length);
      rows.forEach((row, i) => {
        assert.deepEqual(row, { id: jobs[i]?.id, branch: i % 3 === 0 ? 'main' : null, build: i % 3 === 0 ? String(i) : null }, row.id);
      });
    });
  });
}
