// Row shapes of the webhook tables (migrations 0018 and 0028, docs/webhooks.md), beside types.ts, which
// holds the Database that lists them.

export type WebhookKind = 'standard' | 'slack' | 'teams';

/** A project's outgoing webhook (HOOK-1). */
export interface WebhooksTable {
  id: string;
  project_id: string;
  name: string;
  kind: WebhookKind;
  url: string;
  /** `whsec_` + base64 of the HMAC key: kept as is, since signing needs it. */
  secret: string;
  /** JSON array of event types. */
  events: string;
  enabled: number;
  disabled_reason: string | null;
  /** The first failed attempt since the last successful one; null while it succeeds. */
  failing_since: string | null;
  created_at: string;
  created_by: string | null;
  updated_at: string;
}

export type DeliveryStatus = 'pending' | 'delivered' | 'failed';

/** One event for one webhook: the outbox row, written in the transaction of the change (HOOK-3). */
export interface WebhookDeliveriesTable {
  id: string;
  webhook_id: string;
  project_id: string;
  event_type: string;
  /** What makes the event unique for its webhook (`run.completed:<runId>`): a second write of it is dropped. */
  event_key: string;
  /** The `webhook-id` header of every attempt. */
  message_id: string;
  /** JSON: what the payload is built from. */
  subject: string;
  /** JSON body as sent; null until the dispatcher first builds it. */
  payload: string | null;
  status: DeliveryStatus;
  attempts: number;
  /** When the next attempt is due (the service clock); null once delivered or failed. */
  next_attempt_at: string | null;
  created_at: string;
  updated_at: string;
}

/** One attempt at a delivery (HOOK-6). */
export interface WebhookAttemptsTable {
  id: string;
  delivery_id: string;
  attempt: number;
  at: string;
  status_code: number | null;
  error: string | null;
  latency_ms: number;
  response: string | null;
  // Migration 0028 (HOOK-11): what the attempt sent and the answer's headers; null on attempts made
  // before it, and until (or, cut off, unless) the attempt's answer is recorded.
  /** The URL the request went to, a password in it masked. */
  request_url: string | null;
  /** JSON object of the headers sent, `webhook-signature` masked. */
  request_headers: string | null;
  /** The body sent when it is not the delivery's payload (a Slack or Teams message); null: the payload, byte for byte. */
  request_body: string | null;
  /** JSON object of the answer's headers, lower-cased. */
  response_headers: string | null;
}
