import type { Static } from 'typebox';
import type { CreatedWebhook, Webhook, WebhookDelivery, WebhookDeliveryDetails } from '../../api/v1/webhooks.ts';
import type { WebhooksTable } from '../db/types.ts';
import type { DeliveryView } from '../services/webhooks/webhooks.ts';

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

/**
 * One delivery with what each attempt sent and got back (HOOK-11). A standard delivery's attempts
 * keep no body of their own: they sent the delivery's payload as it is.
 */
export function presentDeliveryDetails(view: DeliveryView): Static<typeof WebhookDeliveryDetails> {
  const { delivery, attempts } = view;
  const summary = presentDelivery(view);
  return {
    ...summary,
    attempts: attempts.map((attempt, index) => ({
      ...(summary.attempts[index] as Static<typeof WebhookDelivery>['attempts'][number]),
      request:
        attempt.request_url === null || attempt.request_headers === null
          ? null
          : {
              url: attempt.request_url,
              headers: JSON.parse(attempt.request_headers) as Record<string, string>,
              body: attempt.request_body ?? delivery.payload ?? '',
            },
      responseHeaders: attempt.response_headers === null ? null : (JSON.parse(attempt.response_headers) as Record<string, string>),
    })),
  };
}
