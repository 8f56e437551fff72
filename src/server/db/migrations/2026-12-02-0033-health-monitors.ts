import type { Kysely } from 'kysely';

// Frozen in time, like every migration: no application imports, never edited once shipped.
// Health by named monitors (TRIAGE-11, docs/triage.md): which monitor decided a test's health
// (`retry`, `rate`, `broken`, null for stable), the branch it was scored on, and what it saw (a JSON
// object: the monitor's events, the samples it read, the evidence runs). Null on rows scored before
// this migration, until the test's next run completes.

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration must not depend on today's table types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('test_health').addColumn('monitor', 'text').execute();
  await db.schema.alterTable('test_health').addColumn('branch', 'text').execute();
  await db.schema.alterTable('test_health').addColumn('evidence', 'text').execute(); // JSON object
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  for (const column of ['evidence', 'branch', 'monitor']) {
    await db.schema.alterTable('test_health').dropColumn(column).execute();
  }
}
