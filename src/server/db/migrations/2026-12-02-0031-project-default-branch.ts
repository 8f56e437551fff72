import type { Kysely } from 'kysely';

// Frozen in time, like every migration: no application imports, never edited once shipped.
// A project's default branch (TRIAGE-16), the base a job on another branch is compared with. Null
// until someone sets it: the branch most of the project's jobs ran on stands in for it then.

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration must not depend on today's table types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('projects').addColumn('default_branch', 'text').execute();
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('projects').dropColumn('default_branch').execute();
}
