import { type Kysely, sql } from 'kysely';

// Frozen in time, like every migration: no application imports, never edited once shipped.
// The fence between uploads and garbage collection when several instances share one bucket and one
// database (SCALE-2): an upload writes a `hold` on a digest before it looks for stored bytes, a
// deletion writes a `deletion` mark (one per digest) before it looks for holds. Each row expires,
// so what a dead instance left stops counting.

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration must not depend on today's table types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('blob_fences')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('sha256', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull()) // hold | deletion
    .addColumn('holder', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('blob_fences_sha256').on('blob_fences').columns(['sha256', 'kind', 'expires_at']).execute();
  await sql`CREATE UNIQUE INDEX blob_fences_deletion ON blob_fences (sha256) WHERE kind = 'deletion'`.execute(db);
  await db.schema.createIndex('blob_fences_expires').on('blob_fences').column('expires_at').execute();
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('blob_fences').execute();
}
