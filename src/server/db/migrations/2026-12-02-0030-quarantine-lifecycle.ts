import type { Kysely } from 'kysely';

// Frozen in time, like every migration: no application imports, never edited once shipped.
// The quarantine lifecycle of a test (TRIAGE-13, docs/triage.md): a fix attempt on a quarantined
// test, verified by its next passing runs on a branch; its outcome (fixed, or back in quarantine
// naming the failing run); and the manual `disabled`. One row per test that ever left `active`
// through the lifecycle; the quarantine itself stays in test_quarantines.

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration must not depend on today's table types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('test_lifecycles')
    .addColumn('test_id', 'text', (c) => c.primaryKey().references('tests.id').onDelete('cascade'))
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('state', 'text', (c) => c.notNull()) // fix-pending | fixed | ended (failed or cancelled) | disabled
    // The last fix attempt: when and by whom, the commit and note it claims, the branch it is verified on (null: any).
    .addColumn('attempt_started_at', 'text')
    .addColumn('attempt_started_by', 'text')
    .addColumn('attempt_commit', 'text')
    .addColumn('attempt_note', 'text')
    .addColumn('attempt_branch', 'text')
    .addColumn('attempt_required', 'integer')
    .addColumn('attempt_passes', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('attempt_ended_at', 'text')
    .addColumn('attempt_failed_run_id', 'text')
    // The manual `disabled`: who set it, when and why.
    .addColumn('disabled_at', 'text')
    .addColumn('disabled_by', 'text')
    .addColumn('disabled_reason', 'text')
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  // Runs completing look up their tests' pending attempts; a project's rows go with it.
  await db.schema.createIndex('test_lifecycles_project_state').on('test_lifecycles').columns(['project_id', 'state']).execute();
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('test_lifecycles').execute();
}
