import { dialectOf } from '../dialect.ts';
import { keysetPage, type Page, type PageRequest } from '../pagination.ts';
import type { Executor, TestQuarantinesTable, WebhookAttemptsTable, WebhookDeliveriesTable, WebhooksTable } from '../types.ts';

// Outgoing webhooks (HOOK-*, docs/webhooks.md): the webhooks, the outbox of their deliveries and
// the attempts of each.

export async function insertWebhook(executor: Executor, row: WebhooksTable): Promise<void> {
  await executor.insertInto('webhooks').values(row).execute();
}

export function findWebhook(executor: Executor, id: string): Promise<WebhooksTable | undefined> {
  return executor.selectFrom('webhooks').selectAll().where('id', '=', id).executeTakeFirst();
}

/**
 * A webhook, its row locked until the transaction ends (FOR UPDATE on PostgreSQL; SQLite has one
 * writer). What records an attempt takes it first: deleting a webhook locks it, then its deliveries
 * and their attempts (the cascade), and a recorder taking them the other way round deadlocked.
 */
export function lockWebhook(executor: Executor, id: string): Promise<WebhooksTable | undefined> {
  const query = executor.selectFrom('webhooks').selectAll().where('id', '=', id);
  return (dialectOf(executor) === 'postgres' ? query.forUpdate() : query).executeTakeFirst();
}

/** A project's webhooks, oldest first. */
export function listWebhooks(executor: Executor, projectId: string, page: PageRequest): Promise<Page<WebhooksTable>> {
  const query = executor.selectFrom('webhooks').selectAll().where('project_id', '=', projectId);
  return keysetPage(query, { columns: ['created_at', 'id'], direction: 'asc' }, page);
}

export async function updateWebhook(executor: Executor, id: string, changes: Partial<WebhooksTable>): Promise<void> {
  await executor.updateTable('webhooks').set(changes).where('id', '=', id).execute();
}

export async function deleteWebhook(executor: Executor, id: string): Promise<boolean> {
  const result = await executor.deleteFrom('webhooks').where('id', '=', id).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/** The project's enabled webhooks (each subscribes to its own events; the caller picks). */
export function enabledWebhooksOfProjects(executor: Executor, projectIds: readonly string[]): Promise<WebhooksTable[]> {
  if (projectIds.length === 0) return Promise.resolve([]);
  return executor.selectFrom('webhooks').selectAll().where('project_id', 'in', projectIds).where('enabled', '=', 1).execute();
}

/** Adds deliveries to the outbox; one whose (webhook, event key) is there already is dropped. */
export async function insertDeliveries(executor: Executor, rows: readonly WebhookDeliveriesTable[]): Promise<void> {
  if (rows.length === 0) return;
  await executor
    .insertInto('webhook_deliveries')
    .values([...rows])
    .onConflict((oc) => oc.columns(['webhook_id', 'event_key']).doNothing())
    .execute();
}

export function findDelivery(executor: Executor, id: string): Promise<WebhookDeliveriesTable | undefined> {
  return executor.selectFrom('webhook_deliveries').selectAll().where('id', '=', id).executeTakeFirst();
}

/** Pending deliveries due at `now`, the earliest first. */
export function dueDeliveries(executor: Executor, now: string, limit: number): Promise<WebhookDeliveriesTable[]> {
  return executor
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('status', '=', 'pending')
    .where('next_attempt_at', '<=', now)
    .orderBy('next_attempt_at')
    .orderBy('id')
    .limit(limit)
    .execute();
}

/** When the earliest pending delivery is due; undefined when none is pending. */
export async function nextDeliveryDue(executor: Executor): Promise<string | undefined> {
  const row = await executor
    .selectFrom('webhook_deliveries')
    .select('next_attempt_at')
    .where('status', '=', 'pending')
    .where('next_attempt_at', 'is not', null)
    .orderBy('next_attempt_at')
    .limit(1)
    .executeTakeFirst();
  return row?.next_attempt_at ?? undefined;
}

/** Sets a delivery's payload once: a payload built already stays (a concurrent builder lost). */
export async function setDeliveryPayload(executor: Executor, id: string, payload: string): Promise<void> {
  await executor.updateTable('webhook_deliveries').set({ payload }).where('id', '=', id).where('payload', 'is', null).execute();
}

export async function updateDelivery(executor: Executor, id: string, changes: Partial<WebhookDeliveriesTable>): Promise<void> {
  await executor.updateTable('webhook_deliveries').set(changes).where('id', '=', id).execute();
}

/** Ends every pending delivery of a webhook as failed (it was disabled). */
export async function failPendingDeliveries(executor: Executor, webhookId: string, now: string): Promise<void> {
  await executor
    .updateTable('webhook_deliveries')
    .set({ status: 'failed', next_attempt_at: null, updated_at: now })
    .where('webhook_id', '=', webhookId)
    .where('status', '=', 'pending')
    .execute();
}

export async function insertAttempt(executor: Executor, row: WebhookAttemptsTable): Promise<void> {
  await executor.insertInto('webhook_attempts').values(row).execute();
}

/** Removes an attempt that was recorded but never sent (its claim lapsed first, HOOK-12). */
export async function deleteAttempt(executor: Executor, id: string): Promise<void> {
  await executor.deleteFrom('webhook_attempts').where('id', '=', id).execute();
}

/**
 * What an attempt records before its request is sent (HOOK-10), and what it becomes when its sender
 * never recorded an answer (the instance died or was killed mid-request): the delivery log shows
 * every attempt made, cut off ones included, and they count towards the delivery's retries. One
 * still under way is left out of the log until it has an answer.
 */
export const ATTEMPT_UNDER_WAY = 'under way: sent, no answer recorded yet';
export const ATTEMPT_CUT_OFF = 'cut off: the instance sending it stopped before an answer was recorded';

/** Writes what an attempt recorded as under way came to: its answer, and what it sent (HOOK-11). */
export async function updateAttempt(
  executor: Executor,
  id: string,
  fields: Omit<WebhookAttemptsTable, 'id' | 'delivery_id' | 'attempt' | 'at'>,
): Promise<void> {
  await executor.updateTable('webhook_attempts').set(fields).where('id', '=', id).execute();
}

/** Marks a delivery's attempts still recorded with `underWay` as `cutOff`; answers how many there were. */
export async function cutOffAttempts(executor: Executor, deliveryId: string, underWay: string, cutOff: string): Promise<number> {
  const result = await executor
    .updateTable('webhook_attempts')
    .set({ error: cutOff })
    .where('delivery_id', '=', deliveryId)
    .where('status_code', 'is', null)
    .where('error', '=', underWay)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** A webhook's deliveries, newest first. */
export function listDeliveries(executor: Executor, webhookId: string, page: PageRequest): Promise<Page<WebhookDeliveriesTable>> {
  const query = executor.selectFrom('webhook_deliveries').selectAll().where('webhook_id', '=', webhookId);
  return keysetPage(query, { columns: ['created_at', 'id'], direction: 'desc' }, page);
}

/** The answered (or cut-off) attempts of these deliveries, in order: none still under way. */
export async function attemptsOf(executor: Executor, deliveryIds: readonly string[]): Promise<WebhookAttemptsTable[]> {
  if (deliveryIds.length === 0) return [];
  const rows = await executor
    .selectFrom('webhook_attempts')
    .selectAll()
    .where('delivery_id', 'in', deliveryIds)
    .orderBy('delivery_id')
    .orderBy('attempt')
    .orderBy('at')
    .execute();
  return rows.filter((row) => !(row.status_code === null && row.error === ATTEMPT_UNDER_WAY));
}

/** Whether any attempt of this webhook succeeded at or after `since`. */
export async function succeededSince(executor: Executor, webhookId: string, since: string): Promise<boolean> {
  const row = await executor
    .selectFrom('webhook_attempts')
    .innerJoin('webhook_deliveries', 'webhook_deliveries.id', 'webhook_attempts.delivery_id')
    .select('webhook_attempts.id')
    .where('webhook_deliveries.webhook_id', '=', webhookId)
    .where('webhook_attempts.at', '>=', since)
    .where('webhook_attempts.status_code', '>=', 200)
    .where('webhook_attempts.status_code', '<', 300)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

export type ExpiredQuarantine = TestQuarantinesTable & { test_name: string };

/** Quarantines that expired by `now` and were not announced yet, the earliest first. */
export function unannouncedExpiries(executor: Executor, now: string, limit: number): Promise<ExpiredQuarantine[]> {
  return executor
    .selectFrom('test_quarantines')
    .innerJoin('tests', 'tests.id', 'test_quarantines.test_id')
    .selectAll('test_quarantines')
    .select('tests.name as test_name')
    .where('test_quarantines.expiry_announced_at', 'is', null)
    .where('test_quarantines.expires_at', '<=', now)
    .orderBy('test_quarantines.expires_at')
    .limit(limit)
    .execute();
}

/** Marks expiries announced, unless renewed meanwhile (the expiry changed). */
export async function markExpiryAnnounced(executor: Executor, testId: string, expiresAt: string, now: string): Promise<void> {
  await executor
    .updateTable('test_quarantines')
    .set({ expiry_announced_at: now })
    .where('test_id', '=', testId)
    .where('expires_at', '=', expiresAt)
    .execute();
}

/** The first screenshot of each run given (its image id), by run id: what chat messages link as a thumbnail. */
export async function firstScreenshotsOfRuns(executor: Executor, runIds: readonly string[]): Promise<Map<string, string>> {
  const first = new Map<string, string>();
  if (runIds.length === 0) return first;
  const rows = await executor
    .selectFrom('artifacts')
    .innerJoin('artifact_images', 'artifact_images.artifact_id', 'artifacts.id')
    .select(['artifacts.run_id', 'artifact_images.image_id'])
    .where('artifacts.run_id', 'in', runIds)
    .where('artifact_images.role', '=', 'screenshot')
    .orderBy('artifacts.created_at')
    .orderBy('artifacts.id')
    .orderBy('artifact_images.position')
    .execute();
  for (const row of rows) if (row.run_id !== null && !first.has(row.run_id)) first.set(row.run_id, row.image_id);
  return first;
}

/**
 * Takes a due delivery for one attempt: its next attempt moves to `until` (when a claimer that
 * died would be retried), on condition that nobody took it meanwhile. False: another did.
 */
export async function claimDelivery(executor: Executor, id: string, dueAt: string, until: string): Promise<boolean> {
  const result = await executor
    .updateTable('webhook_deliveries')
    .set({ next_attempt_at: until })
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .where('next_attempt_at', '=', dueAt)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** How many attempts a delivery has had, and when the first of them was. */
export async function attemptsSoFar(executor: Executor, deliveryId: string): Promise<{ count: number; first: string | null }> {
  const row = await executor
    .selectFrom('webhook_attempts')
    .select((eb) => [eb.fn.countAll<number | string | bigint>().as('count'), eb.fn.min('at').as('first')])
    .where('delivery_id', '=', deliveryId)
    .executeTakeFirst();
  return { count: Number(row?.count ?? 0), first: (row?.first as string | null | undefined) ?? null };
}

/** When the earliest quarantine not yet announced expires (it may have already); undefined: none. */
export async function nextUnannouncedExpiry(executor: Executor): Promise<string | undefined> {
  const row = await executor
    .selectFrom('test_quarantines')
    .select('expires_at')
    .where('expiry_announced_at', 'is', null)
    .orderBy('expires_at')
    .limit(1)
    .executeTakeFirst();
  return row?.expires_at;
}
