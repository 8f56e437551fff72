import type { Kysely } from 'kysely';

// Frozen in time, like every migration: no application imports, never edited once shipped.
// What each webhook attempt sent and what came back (HOOK-11, docs/webhooks.md), as a receiver's
// "recent deliveries" view needs it: the URL and headers sent (the signature masked), the body
// sent when it is not the delivery's payload (Slack and Teams messages), and the answer's headers.
// Null on attempts made before this migration, and on one cut off before its answer was recorded.

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration must not depend on today's table types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('webhook_attempts').addColumn('request_url', 'text').execute();
  await db.schema.alterTable('webhook_attempts').addColumn('request_headers', 'text').execute(); // JSON object
  await db.schema.alterTable('webhook_attempts').addColumn('request_body', 'text').execute(); // null: the delivery's payload
  await db.schema.alterTable('webhook_attempts').addColumn('response_headers', 'text').execute(); // JSON object
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  for (const column of ['response_headers', 'request_body', 'request_headers', 'request_url']) {
    await db.schema.alterTable('webhook_attempts').dropColumn(column).execute();
  }
}
