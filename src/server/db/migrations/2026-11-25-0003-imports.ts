import { type Kysely, sql } from 'kysely';

// Frozen in time, like every migration: no application imports, never edited once shipped.
// Imports (JUnit XML, Playwright reports) and what reporters need to build history: a test found
// by its full name, and a job created once however often a reporter retries.

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration must not depend on today's table types
export async function up(db: Kysely<any>): Promise<void> {
  // The full name a report gives a test (file › suite › title): imports and reporters find the
  // test by it, so a later import of the same test builds its history instead of a new test.
  await db.schema.alterTable('tests').addColumn('full_name', 'text').execute();
  await sql`CREATE UNIQUE INDEX tests_full_name ON tests (project_id, full_name) WHERE full_name IS NOT NULL`.execute(db);

  // A client's key for creating a job (a reporter's launch), as test_runs has for runs.
  await db.schema.alterTable('jobs').addColumn('idempotency_key', 'text').execute();
  await db.schema.alterTable('jobs').addColumn('idempotency_fingerprint', 'text').execute();
  await sql`CREATE UNIQUE INDEX jobs_idempotency ON jobs (project_id, idempotency_key) WHERE idempotency_key IS NOT NULL`.execute(db);

  await db.schema
    .createTable('imports')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('job_id', 'text', (c) => c.references('jobs.id').onDelete('set null'))
    .addColumn('status', 'text', (c) => c.notNull()) // queued | processing | completed | failed
    .addColumn('file_name', 'text', (c) => c.notNull())
    .addColumn('source_type', 'text', (c) => c.notNull()) // xml | json | zip
    .addColumn('source_sha256', 'text', (c) => c.notNull()) // the upload, kept as a blob
    .addColumn('source_size', 'integer', (c) => c.notNull())
    .addColumn('options', 'text', (c) => c.notNull()) // JSON
    .addColumn('summary', 'text') // JSON: counts and files, once known
    .addColumn('error', 'text')
    .addColumn('idempotency_key', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('started_at', 'text')
    .addColumn('finished_at', 'text')
    .addColumn('created_by', 'text')
    .execute();
  await sql`CREATE UNIQUE INDEX imports_idempotency ON imports (project_id, idempotency_key) WHERE idempotency_key IS NOT NULL`.execute(db);
  await db.schema.createIndex('imports_project_created').on('imports').columns(['project_id', 'created_at', 'id']).execute();
  await db.schema.createIndex('imports_status').on('imports').column('status').execute();
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('imports').execute();
  await db.schema.dropIndex('jobs_idempotency').execute();
  await db.schema.alterTable('jobs').dropColumn('idempotency_fingerprint').execute();
  await db.schema.alterTable('jobs').dropColumn('idempotency_key').execute();
  await db.schema.dropIndex('tests_full_name').execute();
  await db.schema.alterTable('tests').dropColumn('full_name').execute();
}
