import { randomBytes, randomUUID } from 'node:crypto';
import type { Static } from 'typebox';
import type { createWebhook as createEndpoint, updateWebhook as updateEndpoint } from '../../../api/v1/webhooks.ts';
import type { ServiceContext } from '../../context.ts';
import type { Page, PageRequest } from '../../db/pagination.ts';
import { enqueueTask } from '../../db/repositories/tasks.ts';
import { inSnapshot, inTransaction } from '../../db/repositories/transaction.ts';
import {
  attemptsOf,
  deleteWebhook as deleteWebhookRow,
  findDelivery,
  findWebhook,
  insertWebhook,
  listDeliveries,
  listWebhooks as listWebhookRows,
  updateDelivery,
  updateWebhook as updateWebhookRow,
} from '../../db/repositories/webhooks.ts';
import type { Executor, WebhookAttemptsTable, WebhookDeliveriesTable, WebhooksTable } from '../../db/types.ts';
import { AppError, found, invalid } from '../../errors.ts';
import { checkSavedUrl, OutgoingError } from '../../outgoing/request.ts';
import { auditBy } from '../access/audit.ts';
import type { UserActor } from '../actor.ts';
import { projectData } from './events.ts';
import { deliverSoon, queueWebhookEvents, WEBHOOK_DISPATCH_TASK } from './outbox.ts';

// A project's outgoing webhooks (HOOK-1, HOOK-6): managed by its managers and admins, the secret
// shown once, each change audited; the delivery log, redelivery and the test event.

export type CreateWebhookInput = Static<NonNullable<(typeof createEndpoint)['body']>>;
export type WebhookChange = Static<NonNullable<(typeof updateEndpoint)['body']>>;

/**
 * A URL a webhook may be saved with: http(s), and not written as a loopback, link-local, private or
 * other special-purpose address unless the instance allows those (`checkSavedUrl`, the same judge
 * as integrations' URLs and every delivery). A name is checked again at every delivery, once
 * resolved (the answer may change): here only what the URL says is judged, without a DNS lookup.
 */
function checkedUrl(ctx: ServiceContext, text: string): string {
  try {
    return checkSavedUrl(text, ctx.config.webhookAllowPrivate).href;
  } catch (error) {
    if (error instanceof OutgoingError) throw invalid('/body/url', error.message);
    throw error;
  }
}

const newSecret = () => `whsec_${randomBytes(24).toString('base64')}`;

/** A webhook of this project, or the 404 of an unknown one (another project's answers alike). */
async function webhookOfProject(executor: Executor, projectId: string, webhookId: string): Promise<WebhooksTable> {
  const row = await findWebhook(executor, webhookId);
  return found(row?.project_id === projectId ? row : undefined, 'The webhook');
}

export const getWebhook = (ctx: ServiceContext, projectId: string, webhookId: string): Promise<WebhooksTable> =>
  webhookOfProject(ctx.db, projectId, webhookId);

export const listWebhooks = (ctx: ServiceContext, projectId: string, page: PageRequest): Promise<Page<WebhooksTable>> =>
  listWebhookRows(ctx.db, projectId, page);

export async function createWebhook(
  ctx: ServiceContext,
  projectId: string,
  input: CreateWebhookInput,
  actor: UserActor,
): Promise<WebhooksTable> {
  const now = ctx.clock().toISOString();
  const row: WebhooksTable = {
    id: randomUUID(),
    project_id: projectId,
    name: input.name,
    kind: input.kind ?? 'standard',
    url: checkedUrl(ctx, input.url),
    secret: newSecret(),
    events: JSON.stringify(input.events),
    enabled: input.enabled === false ? 0 : 1,
    disabled_reason: null,
    failing_since: null,
    created_at: now,
    created_by: actor.userId,
    updated_at: now,
  };
  await inTransaction(ctx.db, async (trx) => {
    await insertWebhook(trx, row);
    await auditBy(ctx, trx, actor, {
      action: 'webhook.create',
      targetType: 'webhook',
      targetId: row.id,
      details: { projectId, kind: row.kind, url: row.url, events: input.events },
    });
  });
  return row;
}

export async function updateWebhook(
  ctx: ServiceContext,
  projectId: string,
  webhookId: string,
  change: WebhookChange,
  actor: UserActor,
): Promise<WebhooksTable> {
  const now = ctx.clock().toISOString();
  const url = change.url === undefined ? undefined : checkedUrl(ctx, change.url);
  return inTransaction(ctx.db, async (trx) => {
    const before = await webhookOfProject(trx, projectId, webhookId);
    const changes: Partial<WebhooksTable> = { updated_at: now };
    if (change.name !== undefined) changes.name = change.name;
    if (url !== undefined) changes.url = url;
    if (change.events !== undefined) changes.events = JSON.stringify(change.events);
    if (change.enabled !== undefined) {
      changes.enabled = change.enabled ? 1 : 0;
      // Switched on again: its failing streak and Attest's reason start afresh.
      if (change.enabled && before.enabled === 0) Object.assign(changes, { disabled_reason: null, failing_since: null });
    }
    await updateWebhookRow(trx, webhookId, changes);
    await auditBy(ctx, trx, actor, {
      action: 'webhook.update',
      targetType: 'webhook',
      targetId: webhookId,
      details: { projectId, ...change },
    });
    return { ...before, ...changes };
  });
}

export async function deleteWebhook(ctx: ServiceContext, projectId: string, webhookId: string, actor: UserActor): Promise<void> {
  await getWebhook(ctx, projectId, webhookId);
  await inTransaction(ctx.db, async (trx) => {
    found((await deleteWebhookRow(trx, webhookId)) || undefined, 'The webhook');
    await auditBy(ctx, trx, actor, {
      action: 'webhook.delete',
      targetType: 'webhook',
      targetId: webhookId,
      details: { projectId },
    });
  });
}

export interface DeliveryView {
  delivery: WebhookDeliveriesTable;
  attempts: WebhookAttemptsTable[];
}

async function withAttempts(executor: Executor, deliveries: readonly WebhookDeliveriesTable[]): Promise<DeliveryView[]> {
  const attempts = await attemptsOf(
    executor,
    deliveries.map((d) => d.id),
  );
  return deliveries.map((delivery) => ({ delivery, attempts: attempts.filter((a) => a.delivery_id === delivery.id) }));
}

/** A webhook's delivery log, newest first, each delivery with its attempts. */
export async function listWebhookDeliveries(
  ctx: ServiceContext,
  projectId: string,
  webhookId: string,
  page: PageRequest,
): Promise<Page<DeliveryView>> {
  await getWebhook(ctx, projectId, webhookId);
  // One snapshot for the deliveries and their attempts: an attempt is recorded with its delivery's
  // new status in one transaction, and the log never shows one without the other.
  return inSnapshot(ctx.db, async (trx) => {
    const rows = await listDeliveries(trx, webhookId, page);
    return { items: await withAttempts(trx, rows.items), nextCursor: rows.nextCursor };
  });
}

/** One delivery of a webhook with its attempts (HOOK-11): 404 for a delivery of another webhook. */
export async function getWebhookDelivery(
  ctx: ServiceContext,
  projectId: string,
  webhookId: string,
  deliveryId: string,
): Promise<DeliveryView> {
  await getWebhook(ctx, projectId, webhookId);
  return inSnapshot(ctx.db, async (trx) => {
    const delivery = await findDelivery(trx, deliveryId);
    const [view] = await withAttempts(trx, [found(delivery?.webhook_id === webhookId ? delivery : undefined, 'The delivery')]);
    return view as DeliveryView;
  });
}

function assertEnabled(webhook: WebhooksTable): void {
  if (webhook.enabled !== 1) throw new AppError('STATE_CONFLICT', 'The webhook is disabled; switch it on first.');
}

/** Sends a delivery again: due at once, with a fresh round of retries, the same `webhook-id` and body. */
export async function redeliver(ctx: ServiceContext, projectId: string, webhookId: string, deliveryId: string): Promise<DeliveryView> {
  assertEnabled(await getWebhook(ctx, projectId, webhookId));
  const now = ctx.clock().toISOString();
  await inTransaction(ctx.db, async (trx) => {
    const delivery = await findDelivery(trx, deliveryId);
    found(delivery?.webhook_id === webhookId ? delivery : undefined, 'The delivery');
    await updateDelivery(trx, deliveryId, { status: 'pending', attempts: 0, next_attempt_at: now, updated_at: now });
    const wall = ctx.background.time();
    await enqueueTask(trx, {
      kind: WEBHOOK_DISPATCH_TASK,
      key: `webhooks:redeliver:${randomUUID()}`,
      payload: '{}',
      runAt: wall,
      now: wall,
    });
  });
  deliverSoon(ctx);
  const [view] = await withAttempts(ctx.db, [found(await findDelivery(ctx.db, deliveryId), 'The delivery')]);
  return view as DeliveryView;
}

/** Queues a `webhook.test` event for this webhook alone, whatever it subscribes to. */
export async function sendTestEvent(ctx: ServiceContext, projectId: string, webhookId: string): Promise<DeliveryView> {
  const webhook = await getWebhook(ctx, projectId, webhookId);
  assertEnabled(webhook);
  const key = `webhook.test:${randomUUID()}`;
  await inTransaction(ctx.db, async (trx) => {
    const data = {
      project: await projectData(trx, projectId),
      webhook: { id: webhook.id, name: webhook.name },
      message: 'A test event from Attest: this webhook receives deliveries.',
    };
    await queueWebhookEvents(ctx, trx, [{ projectId, type: 'webhook.test', key, subject: { data } }], webhook);
  });
  deliverSoon(ctx);
  const page = await listDeliveries(ctx.db, webhookId, { limit: 20 });
  const delivery = found(
    page.items.find((d) => d.event_key === key),
    'The delivery',
  );
  const [view] = await withAttempts(ctx.db, [delivery]);
  return view as DeliveryView;
}
