import type { Kysely } from 'kysely';

// Frozen in time, like every migration: no application imports, never edited once shipped.
// A test's history (GET /testmgmt/tests/{testId}/history) reads its runs newest first; without
// this index every history read scanned the project's runs. It also serves the foreign key's
// ON DELETE SET NULL when a test goes.

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration must not depend on today's table types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('test_runs_test').on('test_runs').columns(['test_id', 'created_at', 'id']).execute();
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('test_runs_test').execute();
}
