import { type Kysely, sql } from 'kysely';

// Frozen in time, like every migration: no application imports, never edited once shipped.
// A launch (a job created with no tests, that runs join as they start) is closed by its reporter:
// `jobs.closed_at` says when. Before it, a launch looked completed whenever its runs so far had
// finished, between two tests of a streamed run. Jobs and runs also keep a link to the CI build
// that made them (`ci_url`).
//
// A server-side import closes its job when it finishes; the imports that had already finished
// before this migration get their job closed at their finish time here. Other launches already in
// the database are left open: the idle timeout ends them.

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration must not depend on today's table types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('jobs').addColumn('closed_at', 'text').execute();
  await db.schema.alterTable('jobs').addColumn('ci_url', 'text').execute();
  await db.schema.alterTable('test_runs').addColumn('ci_url', 'text').execute();
  await sql`
    UPDATE jobs SET closed_at = (
      SELECT MAX(imports.finished_at) FROM imports
      WHERE imports.job_id = jobs.id AND imports.status IN ('completed', 'failed')
    )
    WHERE EXISTS (
      SELECT 1 FROM imports
      WHERE imports.job_id = jobs.id AND imports.status IN ('completed', 'failed') AND imports.finished_at IS NOT NULL
    )`.execute(db);
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('test_runs').dropColumn('ci_url').execute();
  await db.schema.alterTable('jobs').dropColumn('ci_url').execute();
  await db.schema.alterTable('jobs').dropColumn('closed_at').execute();
}
