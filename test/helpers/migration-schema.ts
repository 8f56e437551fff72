import path from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, type Migration, Migrator, PostgresDialect, SqliteDialect } from 'kysely';
import pg from 'pg';
import { MIGRATION_NAMES } from '../../src/server/db/database.ts';
import type { Dialect } from '../../src/server/db/types.ts';
import { tempDir } from './data-folders.ts';
import { createPostgresDatabase } from './dialects.ts';

// A migration's test runs on the schema as it stood just before it: a fresh database of the
// dialect, migrated by the shipped migrations that come before it; the test then writes rows as
// that version wrote them and runs the rest (`migrate(db, MIGRATION_NAMES)`).

// biome-ignore lint/suspicious/noExplicitAny: migrations run on a schema-less handle
export type AnyDb = Kysely<any>;

/** Runs the named migrations (from src/server/db/migrations) that have not run yet, in order. */
export async function migrate(db: AnyDb, names: readonly string[]): Promise<void> {
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

/** A new database of `dialect` with every migration before `migration` applied; `close` drops it. */
export async function schemaBefore(
  dialect: Dialect,
  migration: string,
  postgresName: string,
): Promise<{ db: AnyDb; close: () => Promise<void> }> {
  let db: AnyDb;
  let drop: () => Promise<void> = async () => {};
  if (dialect === 'sqlite') {
    db = new Kysely({ dialect: new SqliteDialect({ database: new SQLite(path.join(tempDir(), 'attest.db')) }) });
  } else {
    const database = await createPostgresDatabase(postgresName, { empty: true });
    db = new Kysely({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: database.url, max: 2 }) }) });
    drop = database.drop;
  }
  await migrate(
    db,
    MIGRATION_NAMES.filter((name) => name < migration),
  );
  return {
    db,
    close: async () => {
      await db.destroy();
      await drop();
    },
  };
}
