import { type Kysely, sql } from 'kysely';

// Frozen in time, like every migration: no application imports, never edited once shipped.
// Background work as rows (SCALE-5): any instance may claim a due task for a lease and renew it
// while it runs; a task whose lease ran out (its instance died) is claimed by another. `key` makes
// enqueueing idempotent (`import:<id>`, `periodic:gc`). Timestamps are ISO-8601 UTC text like
// every other table's, so they compare as text on both dialects.
//
// Imports acknowledged before this release were queued in the memory of the process that took
// them and resumed by that process's next start: each unfinished one gets its task here, so the
// upgraded instances finish them.

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration must not depend on today's table types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('tasks')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull()) // JSON
    .addColumn('key', 'text', (c) => c.notNull().unique())
    .addColumn('run_at', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0)) // times claimed since it last succeeded
    .addColumn('lease_owner', 'text')
    .addColumn('lease_until', 'text')
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  // The claim reads due tasks oldest first and skips the leased ones.
  await db.schema.createIndex('tasks_due').on('tasks').columns(['run_at', 'lease_until']).execute();

  const now = new Date().toISOString();
  await sql`
    INSERT INTO tasks (id, kind, payload, key, run_at, attempts, created_at)
    SELECT id, 'import', '{"importId":"' || id || '"}', 'import:' || id, created_at, 0, ${now}
    FROM imports WHERE status IN ('queued', 'processing')`.execute(db);
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('tasks').execute();
}
