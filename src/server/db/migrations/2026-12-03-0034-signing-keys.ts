import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';

// Frozen in time, like every migration: no application imports, never edited once shipped.
// The keys the server signs its own links with (HOOK-14): one row per purpose, made here once so
// every instance of a cluster signs and checks with the same key. `image-links` signs the
// short-lived screenshot links of webhook and chat messages.

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration must not depend on today's table types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('signing_keys')
    .addColumn('purpose', 'text', (c) => c.primaryKey())
    .addColumn('secret', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db
    .insertInto('signing_keys')
    .values({ purpose: 'image-links', secret: randomBytes(32).toString('base64url'), created_at: new Date().toISOString() })
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('signing_keys').execute();
}
