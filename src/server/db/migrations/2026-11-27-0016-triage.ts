import type { Kysely } from 'kysely';

// Frozen in time, like every migration: no application imports, never edited once shipped.
// Answers across runs (TRIAGE-*, docs/triage.md): error groups and where they occurred, the
// attempt of each run (retries folded into their test per job), a test's health and quarantine,
// the incident of a job, and each project's category rules and triage settings.

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration must not depend on today's table types
export async function up(db: Kysely<any>): Promise<void> {
  // One cause of failure in a project: the fingerprint of its normalised error (TRIAGE-1).
  await db.schema
    .createTable('failure_groups')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('fingerprint', 'text', (c) => c.notNull())
    .addColumn('title', 'text', (c) => c.notNull()) // the normalised message
    .addColumn('message', 'text', (c) => c.notNull()) // the first occurrence's message as written
    .addColumn('frames', 'text', (c) => c.notNull()) // JSON array of "file:function"
    .addColumn('category', 'text', (c) => c.notNull()) // assertion | timeout | network | crash | element | other
    .addColumn('action', 'text')
    .addColumn('target', 'text')
    .addColumn('rule', 'text') // the name of the first category rule that matched, if any
    .addColumn('status', 'text', (c) => c.notNull()) // new | known | regressed | resolved
    .addColumn('defect_type', 'text', (c) => c.notNull()) // product_bug | automation_bug | system_issue | no_defect | to_investigate
    .addColumn('comment', 'text')
    .addColumn('issue_url', 'text')
    .addColumn('assignee', 'text')
    .addColumn('first_seen_at', 'text', (c) => c.notNull())
    .addColumn('first_seen_run_id', 'text', (c) => c.notNull())
    .addColumn('first_seen_job_id', 'text')
    .addColumn('last_seen_at', 'text', (c) => c.notNull())
    .addColumn('last_seen_run_id', 'text', (c) => c.notNull())
    .addColumn('last_seen_job_id', 'text')
    .addColumn('occurrences', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('affected_tests', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('affected_branches', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('triaged_at', 'text')
    .addColumn('triaged_by', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('failure_groups_fingerprint').unique().on('failure_groups').columns(['project_id', 'fingerprint']).execute();
  await db.schema.createIndex('failure_groups_last_seen').on('failure_groups').columns(['project_id', 'last_seen_at', 'id']).execute();

  // A failed run with this cause: one row per run and group, however many of its steps share it.
  await db.schema
    .createTable('failure_occurrences')
    .addColumn('group_id', 'text', (c) => c.notNull().references('failure_groups.id').onDelete('cascade'))
    .addColumn('run_id', 'text', (c) => c.notNull().references('test_runs.id').onDelete('cascade'))
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('job_id', 'text')
    .addColumn('step_id', 'text') // the first failed step with this cause; null for a run-level error
    .addColumn('test_key', 'text', (c) => c.notNull()) // the test id, else "name:" + the run's name
    .addColumn('branch', 'text')
    .addColumn('at', 'text', (c) => c.notNull()) // the run's finish time
    .addPrimaryKeyConstraint('failure_occurrences_pk', ['group_id', 'run_id'])
    .execute();
  await db.schema.createIndex('failure_occurrences_group_at').on('failure_occurrences').columns(['group_id', 'at']).execute();
  await db.schema.createIndex('failure_occurrences_run').on('failure_occurrences').column('run_id').execute();
  await db.schema.createIndex('failure_occurrences_job').on('failure_occurrences').columns(['job_id', 'group_id']).execute();
  // The dashboard's top groups of a time window.
  await db.schema.createIndex('failure_occurrences_project_at').on('failure_occurrences').columns(['project_id', 'at']).execute();

  // The distinct tests and branches a group touched: they keep its affected counts exact without a scan.
  await db.schema
    .createTable('failure_group_tests')
    .addColumn('group_id', 'text', (c) => c.notNull().references('failure_groups.id').onDelete('cascade'))
    .addColumn('test_key', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('failure_group_tests_pk', ['group_id', 'test_key'])
    .execute();
  await db.schema
    .createTable('failure_group_branches')
    .addColumn('group_id', 'text', (c) => c.notNull().references('failure_groups.id').onDelete('cascade'))
    .addColumn('branch', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('failure_group_branches_pk', ['group_id', 'branch'])
    .execute();

  // Where each failed step and failed run falls; null until its run completes (or when it passed).
  await db.schema.alterTable('steps').addColumn('failure_group_id', 'text').execute();
  await db.schema.alterTable('test_runs').addColumn('failure_group_id', 'text').execute();
  // 0 for a first attempt; retries of the same test in the same job count up.
  await db.schema
    .alterTable('test_runs')
    .addColumn('attempt', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();

  // The outage guard (TRIAGE-4): the group that accounts for most of the job's failures, if one does.
  await db.schema.alterTable('jobs').addColumn('incident_group_id', 'text').execute();
  await db.schema.alterTable('jobs').addColumn('incident_failed_runs', 'integer').execute();

  // JSON: ordered category rules (Allure's categories.json shape), and the triage thresholds.
  await db.schema.alterTable('projects').addColumn('failure_rules', 'text').execute();
  await db.schema.alterTable('projects').addColumn('triage_settings', 'text').execute();

  // A test's health over its latest completed runs, kept as runs complete (TRIAGE-6).
  await db.schema
    .createTable('test_health')
    .addColumn('test_id', 'text', (c) => c.primaryKey().references('tests.id').onDelete('cascade'))
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull()) // stable | flaky | broken
    .addColumn('flaky_score', 'real', (c) => c.notNull())
    .addColumn('runs_considered', 'integer', (c) => c.notNull())
    .addColumn('failing_streak', 'integer', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('test_health_flaky').on('test_health').columns(['project_id', 'flaky_score']).execute();

  await db.schema
    .createTable('test_quarantines')
    .addColumn('test_id', 'text', (c) => c.primaryKey().references('tests.id').onDelete('cascade'))
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('owner', 'text', (c) => c.notNull())
    .addColumn('reason', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('created_by', 'text')
    .execute();
  await db.schema.createIndex('test_quarantines_project').on('test_quarantines').columns(['project_id', 'expires_at']).execute();

  // The comparison and the per-test fold read a job's runs by test; the dashboard reads a branch's.
  await db.schema.createIndex('test_runs_branch_finished').on('test_runs').columns(['project_id', 'branch', 'finished_at']).execute();
  // A job's attempts of one test: the fold finds the final one, the dashboard whether a failure was retried.
  await db.schema.createIndex('test_runs_job_test').on('test_runs').columns(['job_id', 'test_id', 'attempt']).execute();
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('test_runs_job_test').execute();
  await db.schema.dropIndex('test_runs_branch_finished').execute();
  await db.schema.dropTable('test_quarantines').execute();
  await db.schema.dropTable('test_health').execute();
  await db.schema.alterTable('projects').dropColumn('triage_settings').execute();
  await db.schema.alterTable('projects').dropColumn('failure_rules').execute();
  await db.schema.alterTable('jobs').dropColumn('incident_failed_runs').execute();
  await db.schema.alterTable('jobs').dropColumn('incident_group_id').execute();
  await db.schema.alterTable('test_runs').dropColumn('attempt').execute();
  await db.schema.alterTable('test_runs').dropColumn('failure_group_id').execute();
  await db.schema.alterTable('steps').dropColumn('failure_group_id').execute();
  await db.schema.dropTable('failure_group_branches').execute();
  await db.schema.dropTable('failure_group_tests').execute();
  await db.schema.dropTable('failure_occurrences').execute();
  await db.schema.dropTable('failure_groups').execute();
}
