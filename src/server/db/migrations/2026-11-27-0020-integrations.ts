import type { Kysely } from 'kysely';

// Frozen in time, like every migration: no application imports, never edited once shipped.
// Integrations (FORGE-*, docs/integrations.md): a project's code host (GitHub or GitLab), whose
// check runs or commit statuses follow its jobs, and its issue tracker (Jira or GitHub Issues),
// where error groups and runs are filed. Secrets (tokens, private keys) are stored here and never
// answered by the API.

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration must not depend on today's table types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('forge_settings')
    .addColumn('project_id', 'text', (c) => c.primaryKey().references('projects.id').onDelete('cascade'))
    .addColumn('kind', 'text', (c) => c.notNull()) // github | gitlab
    .addColumn('api_url', 'text', (c) => c.notNull())
    .addColumn('auth', 'text', (c) => c.notNull()) // token | app
    .addColumn('token', 'text')
    .addColumn('app_id', 'text')
    .addColumn('private_key', 'text')
    .addColumn('installation_id', 'text')
    .addColumn('check_name', 'text', (c) => c.notNull())
    .addColumn('pull_request_comment', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('enabled', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('updated_by', 'text')
    .execute();

  // One row per job that reports to the code host: what was last sent, so a sync that finds the
  // same state sends nothing, and `settled` once its final state is sent.
  await db.schema
    .createTable('forge_checks')
    .addColumn('job_id', 'text', (c) => c.primaryKey().references('jobs.id').onDelete('cascade'))
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('repository', 'text', (c) => c.notNull())
    .addColumn('commit_sha', 'text', (c) => c.notNull())
    .addColumn('check_run_id', 'text')
    .addColumn('synced', 'text')
    .addColumn('settled', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('forge_checks_settled').on('forge_checks').columns(['settled', 'updated_at']).execute();

  await db.schema
    .createTable('issue_trackers')
    .addColumn('project_id', 'text', (c) => c.primaryKey().references('projects.id').onDelete('cascade'))
    .addColumn('kind', 'text', (c) => c.notNull()) // jira | github
    .addColumn('base_url', 'text', (c) => c.notNull())
    .addColumn('api_version', 'integer')
    .addColumn('email', 'text')
    .addColumn('token', 'text')
    .addColumn('project_key', 'text')
    .addColumn('issue_type', 'text')
    .addColumn('repository', 'text')
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('updated_by', 'text')
    .execute();

  // An issue filed from Attest for an error group or a run, with its title and status as last read.
  await db.schema
    .createTable('issue_links')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('failure_group_id', 'text', (c) => c.references('failure_groups.id').onDelete('cascade'))
    .addColumn('run_id', 'text', (c) => c.references('test_runs.id').onDelete('cascade'))
    .addColumn('tracker', 'text', (c) => c.notNull()) // jira | github
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('status', 'text')
    .addColumn('refreshed_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('created_by', 'text')
    .execute();
  await db.schema.createIndex('issue_links_project').on('issue_links').columns(['project_id', 'created_at']).execute();
  await db.schema.createIndex('issue_links_group').on('issue_links').columns(['failure_group_id']).execute();
  await db.schema.createIndex('issue_links_run').on('issue_links').columns(['run_id']).execute();
  await db.schema.createIndex('issue_links_refreshed').on('issue_links').columns(['refreshed_at']).execute();
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('issue_links').execute();
  await db.schema.dropTable('issue_trackers').execute();
  await db.schema.dropTable('forge_checks').execute();
  await db.schema.dropTable('forge_settings').execute();
}
