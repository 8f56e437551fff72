import { randomBytes, randomUUID } from 'node:crypto';
import type { Static } from 'typebox';
import type { EVENT_DATA } from '../../../api/v1/webhook-events.ts';
import type { WebhookEventType } from '../../../api/v1/webhooks.ts';
import type { ServiceContext } from '../../context.ts';
import { enqueueTask } from '../../db/repositories/tasks.ts';
import { enabledWebhooksOfProjects, insertDeliveries } from '../../db/repositories/webhooks.ts';
import type { Executor, JobsTable, WebhookDeliveriesTable, WebhooksTable } from '../../db/types.ts';

// The outbox of webhooks (HOOK-3): events are queued as delivery rows in the transaction of the
// change they announce, with a dispatch task in the same transaction, so a change that committed
// has its deliveries, and one that rolled back has none. A delivery's `webhook-id` is chosen here,
// once: every attempt of it, after any crash, carries the same.

export const WEBHOOK_DISPATCH_TASK = 'webhook-dispatch';

export type EventData<T extends WebhookEventType> = Static<(typeof EVENT_DATA)[T]>;

/** What a delivery's payload is built from: the data itself, or the job or import to read after the commit. */
export type EventSubject = { data: unknown } | { jobId: string } | { importId: string };

export interface QueuedEvent {
  projectId: string;
  type: WebhookEventType;
  /** Unique per webhook: the same key queued twice is delivered once (`run.failed_first:<jobId>`). */
  key: string;
  subject: EventSubject;
}

/** A Standard Webhooks message id: `msg_` and 24 random bytes in base64url. */
const newMessageId = () => `msg_${randomBytes(18).toString('base64url')}`;

const subscribes = (webhook: WebhooksTable, type: WebhookEventType) =>
  type === 'webhook.test' || (JSON.parse(webhook.events) as string[]).includes(type);

/**
 * Queues events for every enabled webhook of their projects that subscribes to them, in the
 * caller's transaction, with a task that dispatches them. True when any delivery was queued: the
 * caller then calls `deliverSoon` once its transaction committed.
 */
export async function queueWebhookEvents(
  ctx: ServiceContext,
  trx: Executor,
  events: readonly QueuedEvent[],
  only?: WebhooksTable,
): Promise<boolean> {
  if (events.length === 0) return false;
  const webhooks = only ? [only] : await enabledWebhooksOfProjects(trx, [...new Set(events.map((event) => event.projectId))]);
  if (webhooks.length === 0) return false;
  const now = ctx.clock().toISOString();
  const rows: WebhookDeliveriesTable[] = events.flatMap((event) =>
    webhooks
      .filter((webhook) => webhook.project_id === event.projectId && subscribes(webhook, event.type))
      .map((webhook) => ({
        id: randomUUID(),
        webhook_id: webhook.id,
        project_id: event.projectId,
        event_type: event.type,
        event_key: event.key,
        message_id: newMessageId(),
        subject: JSON.stringify(event.subject),
        payload: null,
        status: 'pending' as const,
        attempts: 0,
        next_attempt_at: now,
        created_at: now,
        updated_at: now,
      })),
  );
  if (rows.length === 0) return false;
  await insertDeliveries(trx, rows);
  const wall = ctx.background.time();
  // One task per transaction (its first delivery names it): never the key of a dispatch running now.
  await enqueueTask(trx, { kind: WEBHOOK_DISPATCH_TASK, key: `webhooks:${rows[0]?.id}`, payload: '{}', runAt: wall, now: wall });
  return true;
}

/** After the commit of a transaction that queued deliveries: this instance's runner and the others' look at once. */
export function deliverSoon(ctx: ServiceContext): void {
  ctx.background.announce();
  ctx.background.wake();
}

/** `job.completed` of a job: its payload (the comparison) is read after the commit. */
export const jobCompletedEvent = (job: Pick<JobsTable, 'id' | 'project_id'>): QueuedEvent => ({
  projectId: job.project_id,
  type: 'job.completed',
  key: `job.completed:${job.id}`,
  subject: { jobId: job.id },
});
