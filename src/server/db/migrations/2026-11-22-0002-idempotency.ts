import { type Kysely, sql } from 'kysely';

// Frozen in time, like every migration: no application imports, never edited once shipped.
// Idempotency keys for the two writes a reporter retries most: creating a run, posting results.

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration must not depend on today's table types
export async function up(db: Kysely<any>): Promise<void> {
  // A client's key for creating a run, and the SHA-256 of the body it came with: a retried create
  // answers the stored run instead of recording it twice.
  await db.schema.alterTable('test_runs').addColumn('idempotency_key', 'text').execute();
  await db.schema.alterTable('test_runs').addColumn('idempotency_fingerprint', 'text').execute();
  await sql`CREATE UNIQUE INDEX test_runs_idempotency ON test_runs (project_id, idempotency_key) WHERE idempotency_key IS NOT NULL`.execute(
    db,
  );

  // Results posts made with an idempotency key: a retry answers the stored receipt.
  await db.schema
    .createTable('result_posts')
    .addColumn('run_id', 'text', (c) => c.notNull().references('test_runs.id').onDelete('cascade'))
    .addColumn('idempotency_key', 'text', (c) => c.notNull())
    .addColumn('fingerprint', 'text', (c) => c.notNull()) // SHA-256 of the posted body
    .addColumn('receipt', 'text', (c) => c.notNull()) // JSON of the answer
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('result_posts_pk', ['run_id', 'idempotency_key'])
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('result_posts').execute();
  await db.schema.dropIndex('test_runs_idempotency').execute();
  await db.schema.alterTable('test_runs').dropColumn('idempotency_fingerprint').execute();
  await db.schema.alterTable('test_runs').dropColumn('idempotency_key').execute();
}
