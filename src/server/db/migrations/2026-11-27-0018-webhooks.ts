import type { Kysely } from 'kysely';

// Frozen in time, like every migration: no application imports, never edited once shipped.
// Outgoing webhooks (HOOK-*, docs/webhooks.md): a project's webhooks, the outbox of deliveries
// written in the transaction of the change they announce, and each delivery's attempts.

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration must not depend on today's table types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('webhooks')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull()) // standard | slack | teams
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('secret', 'text', (c) => c.notNull()) // whsec_…: the HMAC key, needed as is to sign
    .addColumn('events', 'text', (c) => c.notNull()) // JSON array of event types
    .addColumn('enabled', 'integer', (c) => c.notNull())
    .addColumn('disabled_reason', 'text')
    .addColumn('failing_since', 'text') // the first failed attempt since the last success
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('created_by', 'text')
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('webhooks_project').on('webhooks').columns(['project_id', 'created_at', 'id']).execute();

  // The outbox: one row per event and webhook, written with the change; `message_id` is the
  // `webhook-id` every attempt of it carries. `payload` is null until the dispatcher builds it
  // (a job's comparison is read after the commit), and then never changes.
  await db.schema
    .createTable('webhook_deliveries')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('webhook_id', 'text', (c) => c.notNull().references('webhooks.id').onDelete('cascade'))
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('event_type', 'text', (c) => c.notNull())
    .addColumn('event_key', 'text', (c) => c.notNull())
    .addColumn('message_id', 'text', (c) => c.notNull())
    .addColumn('subject', 'text', (c) => c.notNull()) // JSON: what the payload is built from
    .addColumn('payload', 'text')
    .addColumn('status', 'text', (c) => c.notNull()) // pending | delivered | failed
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('next_attempt_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('webhook_deliveries_event').unique().on('webhook_deliveries').columns(['webhook_id', 'event_key']).execute();
  await db.schema.createIndex('webhook_deliveries_message').unique().on('webhook_deliveries').column('message_id').execute();
  await db.schema.createIndex('webhook_deliveries_due').on('webhook_deliveries').columns(['status', 'next_attempt_at']).execute();
  await db.schema.createIndex('webhook_deliveries_list').on('webhook_deliveries').columns(['webhook_id', 'created_at', 'id']).execute();

  await db.schema
    .createTable('webhook_attempts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('delivery_id', 'text', (c) => c.notNull().references('webhook_deliveries.id').onDelete('cascade'))
    .addColumn('attempt', 'integer', (c) => c.notNull())
    .addColumn('at', 'text', (c) => c.notNull())
    .addColumn('status_code', 'integer')
    .addColumn('error', 'text') // timeout | connection | private_address | invalid_url, with its message
    .addColumn('latency_ms', 'integer', (c) => c.notNull())
    .addColumn('response', 'text') // the first bytes of the answer
    .execute();
  await db.schema.createIndex('webhook_attempts_delivery').on('webhook_attempts').columns(['delivery_id', 'attempt']).execute();

  // quarantine.expired is announced once per expiry: set when the sweep has announced it, cleared by a renewal.
  await db.schema.alterTable('test_quarantines').addColumn('expiry_announced_at', 'text').execute();
  await db.schema.createIndex('test_quarantines_expiry').on('test_quarantines').columns(['expiry_announced_at', 'expires_at']).execute();
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('test_quarantines_expiry').execute();
  await db.schema.alterTable('test_quarantines').dropColumn('expiry_announced_at').execute();
  await db.schema.dropTable('webhook_attempts').execute();
  await db.schema.dropTable('webhook_deliveries').execute();
  await db.schema.dropTable('webhooks').execute();
}
