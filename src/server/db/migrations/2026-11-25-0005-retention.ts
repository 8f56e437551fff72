import type { Kysely } from 'kysely';

// Frozen in time, like every migration: no application imports, never edited once shipped.
// Retention: a run marked to keep is never expired; a project may carry its own retention policy.

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration must not depend on today's table types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('test_runs')
    .addColumn('keep', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  // JSON of the project's policy; null follows the instance's default (configuration).
  await db.schema.alterTable('projects').addColumn('retention', 'text').execute();
  // The sweeper looks for finished runs by project and age.
  await db.schema.createIndex('test_runs_retention').on('test_runs').columns(['project_id', 'finished_at']).execute();
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('test_runs_retention').execute();
  await db.schema.alterTable('projects').dropColumn('retention').execute();
  await db.schema.alterTable('test_runs').dropColumn('keep').execute();
}
