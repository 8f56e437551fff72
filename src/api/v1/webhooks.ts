import { Type } from 'typebox';
import { NAME_MAX, Name, NoContent, Nullable, Page, PageQuery, Timestamp, Uuid } from '../common.ts';
import { endpoint } from '../endpoint.ts';
import { ProjectRef } from './projects.ts';

// Outgoing webhooks of a project (HOOK-*, docs/webhooks.md): Standard Webhooks signed JSON, or a
// formatted message to a Slack or Microsoft Teams incoming webhook.

/** The events a webhook may subscribe to; `webhook.test` is sent only by the test button. */
export const WEBHOOK_EVENTS = [
  'run.completed',
  'run.failed_first',
  'job.completed',
  'import.completed',
  'quarantine.expired',
  'test.quarantined',
  'test.fix_pending',
  'test.fixed',
  'test.unquarantined',
  'test.disabled',
  'test.enabled',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENTS)[number] | 'webhook.test';

export const WEBHOOK_KINDS = ['standard', 'slack', 'teams'] as const;

const EventType = Type.Union(
  [
    Type.Literal('run.completed'),
    Type.Literal('run.failed_first'),
    Type.Literal('job.completed'),
    Type.Literal('import.completed'),
    Type.Literal('quarantine.expired'),
    Type.Literal('test.quarantined'),
    Type.Literal('test.fix_pending'),
    Type.Literal('test.fixed'),
    Type.Literal('test.unquarantined'),
    Type.Literal('test.disabled'),
    Type.Literal('test.enabled'),
  ],
  { description: 'An event a webhook subscribes to.' },
);
const Events = Type.Array(EventType, { minItems: 1, maxItems: WEBHOOK_EVENTS.length, uniqueItems: true });
const Kind = Type.Union([Type.Literal('standard'), Type.Literal('slack'), Type.Literal('teams')], {
  description:
    '`standard`: the event as JSON, signed as the Standard Webhooks specification says. `slack`, `teams`: a formatted ' +
    'message posted to an incoming-webhook URL of Slack or Microsoft Teams.',
});
const WebhookUrl = Type.String({
  format: 'uri',
  minLength: 8,
  maxLength: 2048,
  pattern: '^https?://',
  description:
    'Where deliveries are POSTed: http or https. Loopback, link-local and private addresses are refused unless the ' +
    'instance allows them (`ATTEST_WEBHOOK_ALLOW_PRIVATE`).',
});

export const Webhook = Type.Object(
  {
    id: Uuid,
    projectId: Uuid,
    name: Type.String({ maxLength: NAME_MAX }),
    kind: Kind,
    url: Type.String({ maxLength: 2048 }),
    events: Events,
    enabled: Type.Boolean(),
    disabledReason: Nullable(
      Type.String({ maxLength: 500, description: 'Why Attest disabled it (a day of failed deliveries); null otherwise.' }),
    ),
    failingSince: Nullable({
      ...Timestamp,
      description: 'The first failed attempt since the last successful one; null while it succeeds.',
    }),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { additionalProperties: false },
);

export const CreatedWebhook = Type.Object(
  {
    ...Webhook.properties,
    secret: Type.String({
      pattern: '^whsec_[A-Za-z0-9+/=]+$',
      maxLength: 100,
      description: 'The signing secret, `whsec_` and base64: shown this once. Receivers verify `webhook-signature` with it.',
    }),
  },
  { additionalProperties: false },
);

export const WebhookAttempt = Type.Object(
  {
    attempt: Type.Integer({ minimum: 1 }),
    at: Timestamp,
    status: Nullable(Type.Integer({ minimum: 100, maximum: 599, description: "The receiver's HTTP status; null when none came." })),
    error: Nullable(
      Type.String({
        maxLength: 500,
        description: 'Why no answer came: `timeout`, `connection`, `private_address` or `invalid_url`, and how.',
      }),
    ),
    latencyMs: Type.Integer({ minimum: 0 }),
    response: Nullable(Type.String({ maxLength: 1000, description: "The first characters of the receiver's answer." })),
  },
  { additionalProperties: false },
);

export const WebhookDelivery = Type.Object(
  {
    id: Uuid,
    webhookId: Uuid,
    event: Type.String({ maxLength: 64, description: 'The event type, e.g. `run.completed` (`webhook.test` for a test).' }),
    messageId: Type.String({ maxLength: 64, description: 'The `webhook-id` header of every attempt: receivers deduplicate by it.' }),
    status: Type.Union([Type.Literal('pending'), Type.Literal('delivered'), Type.Literal('failed')]),
    nextAttemptAt: Nullable({ ...Timestamp, description: 'When the next attempt is due; null once delivered or failed.' }),
    createdAt: Timestamp,
    attempts: Type.Array(WebhookAttempt, { maxItems: 1000 }),
  },
  { additionalProperties: false },
);

const Headers = Type.Record(Type.String({ maxLength: 256 }), Type.String({ maxLength: 8192 }), { maxProperties: 100 });

export const WebhookAttemptDetails = Type.Object(
  {
    ...WebhookAttempt.properties,
    request: Nullable(
      Type.Object(
        {
          url: Type.String({ maxLength: 2048, description: 'Where it was sent, a password in the URL masked (`***`).' }),
          headers: { ...Headers, description: 'The headers sent, `webhook-signature` masked (`v1,<masked>`).' },
          body: Type.String({
            description: "The body sent: the delivery's payload for a `standard` webhook, the formatted message for `slack` and `teams`.",
          }),
        },
        {
          additionalProperties: false,
          description:
            'What the attempt sent; null when nothing was (a refused address, an event that is gone), for an attempt cut ' +
            'off before its answer was recorded, and for attempts made before Attest kept requests.',
        },
      ),
    ),
    responseHeaders: Nullable({
      ...Headers,
      description:
        "The receiver's answer's headers, lower-cased (the first 50, each value at most 500 characters); null when no answer came.",
    }),
  },
  { additionalProperties: false },
);

export const WebhookDeliveryDetails = Type.Object(
  { ...WebhookDelivery.properties, attempts: Type.Array(WebhookAttemptDetails, { maxItems: 1000 }) },
  { additionalProperties: false },
);

const WebhookParams = Type.Object({ projectId: ProjectRef, webhookId: Uuid }, { additionalProperties: false });
const DeliveryParams = Type.Object({ projectId: ProjectRef, webhookId: Uuid, deliveryId: Uuid }, { additionalProperties: false });
const ProjectOnly = Type.Object({ projectId: ProjectRef }, { additionalProperties: false });

export const listWebhooks = endpoint({
  operationId: 'listWebhooks',
  method: 'GET',
  path: '/projects/{projectId}/webhooks',
  summary: "A project's outgoing webhooks (manager).",
  tag: 'Webhooks',
  access: { scope: 'project', role: 'manager' },
  params: ProjectOnly,
  querystring: Type.Object({ ...PageQuery }, { additionalProperties: false }),
  responses: { 200: Page(Webhook) },
});

export const createWebhook = endpoint({
  operationId: 'createWebhook',
  method: 'POST',
  path: '/projects/{projectId}/webhooks',
  summary: 'Add an outgoing webhook (manager); its signing secret is in this answer only.',
  description:
    'Deliveries follow the Standard Webhooks specification: each carries `webhook-id` (the same on every attempt), ' +
    '`webhook-timestamp` and `webhook-signature` (`v1,` and the base64 HMAC-SHA256 of `id.timestamp.body` under the ' +
    'secret). The events and their bodies are in the `webhooks` section of this document. Audited (`webhook.create`).',
  tag: 'Webhooks',
  access: { scope: 'project', role: 'manager' },
  fetchesUrl: true,
  params: ProjectOnly,
  body: Type.Object(
    { name: Name, url: WebhookUrl, kind: Type.Optional(Kind), events: Events, enabled: Type.Optional(Type.Boolean()) },
    { additionalProperties: false },
  ),
  responses: { 201: CreatedWebhook },
});

export const getWebhook = endpoint({
  operationId: 'getWebhook',
  method: 'GET',
  path: '/projects/{projectId}/webhooks/{webhookId}',
  summary: 'Get a webhook (manager); its secret is never shown again.',
  tag: 'Webhooks',
  access: { scope: 'project', role: 'manager' },
  params: WebhookParams,
  responses: { 200: Webhook },
});

export const updateWebhook = endpoint({
  operationId: 'updateWebhook',
  method: 'PATCH',
  path: '/projects/{projectId}/webhooks/{webhookId}',
  summary: "Change a webhook's name, URL, events, or switch it on or off (manager).",
  description:
    'Switching a webhook on again (`enabled: true`) clears why it was disabled and its failing streak; deliveries it ' +
    'gave up meanwhile stay failed (redeliver them one by one). Audited (`webhook.update`).',
  tag: 'Webhooks',
  access: { scope: 'project', role: 'manager' },
  fetchesUrl: true,
  params: WebhookParams,
  body: Type.Object(
    { name: Type.Optional(Name), url: Type.Optional(WebhookUrl), events: Type.Optional(Events), enabled: Type.Optional(Type.Boolean()) },
    { additionalProperties: false, minProperties: 1 },
  ),
  responses: { 200: Webhook },
});

export const deleteWebhook = endpoint({
  operationId: 'deleteWebhook',
  method: 'DELETE',
  path: '/projects/{projectId}/webhooks/{webhookId}',
  summary: 'Delete a webhook and its delivery log (manager).',
  tag: 'Webhooks',
  access: { scope: 'project', role: 'manager' },
  params: WebhookParams,
  responses: { 204: NoContent },
});

export const listWebhookDeliveries = endpoint({
  operationId: 'listWebhookDeliveries',
  method: 'GET',
  path: '/projects/{projectId}/webhooks/{webhookId}/deliveries',
  summary: "A webhook's delivery log, newest first: each delivery with its event, `webhook-id` and attempts (manager).",
  tag: 'Webhooks',
  access: { scope: 'project', role: 'manager' },
  params: WebhookParams,
  querystring: Type.Object({ ...PageQuery }, { additionalProperties: false }),
  responses: { 200: Page(WebhookDelivery) },
});

export const getWebhookDelivery = endpoint({
  operationId: 'getWebhookDelivery',
  method: 'GET',
  path: '/projects/{projectId}/webhooks/{webhookId}/deliveries/{deliveryId}',
  summary: 'One delivery with what each attempt sent (URL, headers, body) and got back (status, headers, body) (manager).',
  description:
    'The log (`GET …/deliveries`) stays light; this is the detail of one delivery, as a receiver debugging it needs: ' +
    "`webhook-signature` is masked, the answer's body is its first 1000 characters.",
  tag: 'Webhooks',
  access: { scope: 'project', role: 'manager' },
  params: DeliveryParams,
  responses: { 200: WebhookDeliveryDetails },
});

export const redeliverWebhookDelivery = endpoint({
  operationId: 'redeliverWebhookDelivery',
  method: 'POST',
  path: '/projects/{projectId}/webhooks/{webhookId}/deliveries/{deliveryId}/redeliver',
  summary: 'Send a delivery again, with the same `webhook-id` and body (manager).',
  description: 'The delivery is due at once and gets a fresh round of retries. A disabled webhook sends nothing: 409 `STATE_CONFLICT`.',
  tag: 'Webhooks',
  access: { scope: 'project', role: 'manager' },
  params: DeliveryParams,
  responses: { 202: WebhookDelivery },
});

export const testWebhook = endpoint({
  operationId: 'testWebhook',
  method: 'POST',
  path: '/projects/{projectId}/webhooks/{webhookId}/test',
  summary: 'Send a `webhook.test` event to the webhook now, whatever it subscribes to (manager).',
  description: 'Answers the queued delivery; its attempts appear in the delivery log. A disabled webhook: 409 `STATE_CONFLICT`.',
  tag: 'Webhooks',
  access: { scope: 'project', role: 'manager' },
  params: WebhookParams,
  responses: { 202: WebhookDelivery },
});
