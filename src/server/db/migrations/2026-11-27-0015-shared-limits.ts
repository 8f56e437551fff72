import { type Kysely, PostgresAdapter, sql } from 'kysely';

// Frozen in time, like every migration: no application imports, never edited once shipped.
// The counts the limits of every instance share (SCALE-4): requests per key and per address,
// failed authentications per address, password guesses per account and the clients each account
// signed in from. A row is one subject's count, with its time (a window's start, or the latest
// event) and when it lapses, both in milliseconds since the epoch.
//
// On PostgreSQL the table is UNLOGGED: counts are not worth a write-ahead log entry per request,
// and the crash of the server that empties it only gives every subject a fresh budget. It is not
// replicated either, which is right: a standby never counts. SQLite has no unlogged tables and
// one process counts in memory there; the table exists so both dialects share one schema.

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration must not depend on today's table types
export async function up(db: Kysely<any>): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    await sql`
      CREATE UNLOGGED TABLE shared_limits (
        subject text PRIMARY KEY,
        hits integer NOT NULL,
        at_ms bigint NOT NULL,
        expires_ms bigint NOT NULL
      )`.execute(db);
  } else {
    await db.schema
      .createTable('shared_limits')
      .addColumn('subject', 'text', (c) => c.primaryKey())
      .addColumn('hits', 'integer', (c) => c.notNull())
      .addColumn('at_ms', 'bigint', (c) => c.notNull())
      .addColumn('expires_ms', 'bigint', (c) => c.notNull())
      .execute();
  }
  // The sweep deletes lapsed counts.
  await db.schema.createIndex('shared_limits_expires').on('shared_limits').column('expires_ms').execute();
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('shared_limits').execute();
}
