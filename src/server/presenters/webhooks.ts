import type { Static } from 'typebox';
import type { CreatedWebhook, Webhook, WebhookDelivery } from '../../api/v1/webhooks.ts';
import type { WebhooksTable } from '../db/types.ts';
import type { DeliveryView } from '../services/webhooks.ts';

/** A webhook as the API shows it: never its secret. */
export function presentWebhook(row: WebhooksTable): Static<typeof Webhook> {
  return {
    id: row.id,
    projectId: row.project_id,
    name: row.name,
    kind: row.kind,
    url: row.url,
    events: JSON.parse(row.events),
    enabled: row.enabled === 1,
    disabledReason: row.disabled_reason,
    failingSince: row.failing_since,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** The answer to the creation, the one time the secret is shown. */
export const presentCreatedWebhook = (row: WebhooksTable): Static<typeof CreatedWebhook> => ({
  ...presentWebhook(row),
  secret: row.secret,
});

export function presentDelivery({ delivery, attempts }: DeliveryView): Static<typeof WebhookDelivery> {
  return {
    id: delivery.id,
    webhookId: delivery.webhook_id,
    event: delivery.event_type,
    messageId: delivery.message_id,
    status: delivery.status,
    nextAttemptAt: delivery.next_attempt_at,
    createdAt: delivery.created_at,
    attempts: attempts.map((attempt) => ({
      attempt: attempt.attempt,
      at: attempt.at,
      status: attempt.status_code,
      error: attempt.error,
      latencyMs: attempt.latency_ms,
      response: attempt.response,
    })),
  };
}
