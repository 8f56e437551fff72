import { type Kysely, sql } from 'kysely';

// Frozen in time: this file never imports application code, and it is never edited once shipped.
// Both dialects share it, so it only uses types that mean the same on SQLite and PostgreSQL:
// text ids (UUIDs or client-chosen), ISO-8601 UTC timestamps as text (sortable), integers,
// booleans as 0/1 integers and JSON as text.

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration must not depend on today's table types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('users')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('roles', 'text', (c) => c.notNull())
    .addColumn('password_hash', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('deleted_at', 'text')
    .execute();
  // A deleted user keeps its row (records it created still name it) but frees its e-mail.
  await sql`CREATE UNIQUE INDEX users_email_active ON users (email) WHERE deleted_at IS NULL`.execute(db);

  await db.schema
    .createTable('api_keys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('format', 'text', (c) => c.notNull()) // standard | legacy | session
    .addColumn('scope', 'text', (c) => c.notNull()) // full | read
    .addColumn('key_digest', 'text', (c) => c.notNull().unique())
    .addColumn('email_digest', 'text') // legacy keys only: SHA-256 of the owner's normalised e-mail
    .addColumn('display_hint', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('created_by', 'text')
    .addColumn('expires_at', 'text')
    .addColumn('last_used_at', 'text')
    .addColumn('revoked_at', 'text')
    .execute();
  await db.schema.createIndex('api_keys_user').on('api_keys').columns(['user_id', 'created_at']).execute();

  await db.schema
    .createTable('projects')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('key', 'text', (c) => c.notNull().unique())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('created_by', 'text')
    .execute();

  await db.schema
    .createTable('project_members')
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id'))
    .addColumn('added_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('project_members_pk', ['project_id', 'user_id'])
    .execute();
  await db.schema.createIndex('project_members_user').on('project_members').column('user_id').execute();

  await db.schema
    .createTable('devices')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('platform', 'text', (c) => c.notNull())
    .addColumn('os_version', 'text')
    .addColumn('model', 'text')
    .addColumn('manufacturer', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('labels', 'text', (c) => c.notNull()) // JSON array, mirrored in device_labels for filtering
    .addColumn('last_seen_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('device_labels')
    .addColumn('device_id', 'text', (c) => c.notNull().references('devices.id').onDelete('cascade'))
    .addColumn('label', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('device_labels_pk', ['device_id', 'label'])
    .execute();
  await db.schema.createIndex('device_labels_label').on('device_labels').column('label').execute();

  await db.schema
    .createTable('tests')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull())
    .addColumn('steps', 'text', (c) => c.notNull()) // JSON array of {action, expected}
    .addColumn('tags', 'text', (c) => c.notNull()) // JSON array of strings
    .addColumn('source_format', 'text', (c) => c.notNull()) // json | gherkin
    .addColumn('source', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('created_by', 'text')
    .execute();
  await db.schema.createIndex('tests_project').on('tests').columns(['project_id', 'created_at', 'id']).execute();

  await db.schema
    .createTable('jobs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('request', 'text', (c) => c.notNull()) // JSON: the tests and devices/labels asked for
    .addColumn('cancelled_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('created_by', 'text')
    .execute();
  await db.schema.createIndex('jobs_project').on('jobs').columns(['project_id', 'created_at', 'id']).execute();

  await db.schema
    .createTable('test_runs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('test_id', 'text', (c) => c.references('tests.id').onDelete('set null'))
    .addColumn('job_id', 'text', (c) => c.references('jobs.id').onDelete('set null'))
    .addColumn('device_id', 'text', (c) => c.references('devices.id').onDelete('set null'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull()) // queued | running | completed | aborted
    .addColumn('verdict', 'text') // passed | failed | broken | skipped
    .addColumn('environment', 'text')
    .addColumn('branch', 'text')
    .addColumn('build', 'text')
    .addColumn('commit_sha', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('started_at', 'text')
    .addColumn('finished_at', 'text')
    .addColumn('created_by', 'text')
    .addColumn('lease_owner', 'text')
    .addColumn('lease_expires_at', 'text')
    .addColumn('next_position', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.createIndex('test_runs_project').on('test_runs').columns(['project_id', 'created_at', 'id']).execute();
  await db.schema.createIndex('test_runs_job').on('test_runs').column('job_id').execute();
  await db.schema.createIndex('test_runs_queue').on('test_runs').columns(['status', 'created_at']).execute();

  await db.schema
    .createTable('steps')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('run_id', 'text', (c) => c.notNull().references('test_runs.id').onDelete('cascade'))
    .addColumn('parent_id', 'text', (c) => c.references('steps.id').onDelete('cascade'))
    .addColumn('depth', 'integer', (c) => c.notNull()) // 1 for a top-level step; bounded so trees stay shallow
    .addColumn('client_key', 'text')
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull()) // passed | failed | broken | skipped | running
    .addColumn('started_at', 'text')
    .addColumn('duration_ms', 'integer')
    .addColumn('error_message', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('steps_run').on('steps').columns(['run_id', 'position']).execute();
  await sql`CREATE UNIQUE INDEX steps_run_key ON steps (run_id, client_key) WHERE client_key IS NOT NULL`.execute(db);

  await db.schema
    .createTable('text_cells')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('run_id', 'text', (c) => c.notNull().references('test_runs.id').onDelete('cascade'))
    .addColumn('step_id', 'text', (c) => c.references('steps.id').onDelete('cascade'))
    .addColumn('client_key', 'text')
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('media_type', 'text', (c) => c.notNull()) // text/plain | text/markdown
    .addColumn('text', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('text_cells_run').on('text_cells').columns(['run_id', 'position']).execute();
  await sql`CREATE UNIQUE INDEX text_cells_run_key ON text_cells (run_id, client_key) WHERE client_key IS NOT NULL`.execute(db);

  // Content-addressed: one row per distinct byte sequence, whichever projects use it.
  await db.schema
    .createTable('images')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('sha256', 'text', (c) => c.notNull().unique())
    .addColumn('content_type', 'text', (c) => c.notNull())
    .addColumn('width', 'integer', (c) => c.notNull())
    .addColumn('height', 'integer', (c) => c.notNull())
    .addColumn('size', 'bigint', (c) => c.notNull())
    .addColumn('thumbnail_sha256', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('artifacts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('run_id', 'text', (c) => c.notNull().references('test_runs.id').onDelete('cascade'))
    .addColumn('step_id', 'text', (c) => c.references('steps.id').onDelete('set null'))
    .addColumn('kind', 'text', (c) => c.notNull()) // screenshot | video | log | trace | file | visual-diff
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('content_type', 'text', (c) => c.notNull())
    .addColumn('size', 'bigint', (c) => c.notNull())
    // The blob of the artifact's content (a visual diff's content is its diff image); never null, so
    // every artifact row names the blob that must exist (durability invariant I1).
    .addColumn('sha256', 'text', (c) => c.notNull())
    .addColumn('idempotency_key', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('created_by', 'text')
    .execute();
  await db.schema.createIndex('artifacts_run').on('artifacts').columns(['run_id', 'created_at', 'id']).execute();
  await db.schema.createIndex('artifacts_project').on('artifacts').columns(['project_id', 'created_at']).execute();
  await db.schema.createIndex('artifacts_sha').on('artifacts').column('sha256').execute();
  await sql`CREATE UNIQUE INDEX artifacts_run_idem ON artifacts (run_id, idempotency_key) WHERE idempotency_key IS NOT NULL`.execute(db);

  await db.schema
    .createTable('artifact_images')
    .addColumn('artifact_id', 'text', (c) => c.notNull().references('artifacts.id').onDelete('cascade'))
    .addColumn('image_id', 'text', (c) => c.notNull().references('images.id'))
    .addColumn('role', 'text', (c) => c.notNull()) // screenshot | baseline | actual | diff
    .addColumn('position', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('artifact_images_pk', ['artifact_id', 'role'])
    .execute();
  await db.schema.createIndex('artifact_images_image').on('artifact_images').column('image_id').execute();

  await db.schema
    .createTable('audit_log')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('at', 'text', (c) => c.notNull())
    .addColumn('actor_user_id', 'text')
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('target_type', 'text', (c) => c.notNull())
    .addColumn('target_id', 'text', (c) => c.notNull())
    .addColumn('details', 'text', (c) => c.notNull()) // JSON
    .addColumn('request_id', 'text')
    .execute();
  await db.schema.createIndex('audit_log_at').on('audit_log').columns(['at', 'id']).execute();
}

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration must not depend on today's table types
export async function down(db: Kysely<any>): Promise<void> {
  for (const table of [
    'audit_log',
    'artifact_images',
    'artifacts',
    'images',
    'text_cells',
    'steps',
    'test_runs',
    'jobs',
    'tests',
    'device_labels',
    'devices',
    'project_members',
    'projects',
    'api_keys',
    'users',
  ]) {
    await db.schema.dropTable(table).ifExists().execute();
  }
}
