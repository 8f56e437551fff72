import type { TSchema } from 'typebox';
import { EVENT_DATA, EVENT_DESCRIPTIONS, eventEnvelope } from '../../api/v1/webhook-events.ts';
import type { WebhookEventType } from '../../api/v1/webhooks.ts';
import { EVENT_EXAMPLES } from './examples/index.ts';

type Json = Record<string, unknown>;

const header = (name: string, description: string, pattern: string) => ({
  name,
  in: 'header',
  required: true,
  description,
  schema: { type: 'string', pattern, maxLength: 1000 },
});

/**
 * The document's `webhooks` (OpenAPI 3.1, HOOK-7): one entry per event, the body a `standard`
 * webhook receives with an example, the Standard Webhooks headers, and what the receiver's answer
 * means to Attest.
 */
export function webhookEvents(schemas: { write(schema: TSchema): unknown }): Json {
  return Object.fromEntries(
    (Object.keys(EVENT_DATA) as WebhookEventType[]).map((type) => [
      type,
      {
        post: {
          operationId: `event.${type}`,
          summary: `The \`${type}\` event.`,
          description:
            `${EVENT_DESCRIPTIONS[type]}\n\nPOSTed to each enabled \`standard\` webhook of the project that subscribes to it ` +
            '(`slack` and `teams` webhooks get a formatted message instead). Verify `webhook-signature` with any Standard ' +
            'Webhooks library and the `whsec_…` secret, and deduplicate by `webhook-id`: a retried or redelivered event ' +
            'carries the same id and body.',
          tags: ['Webhooks'],
          // Attest calls the receiver, which checks the signature below, not an Attest key: no
          // scheme of this document applies, and an operation that says nothing reads as one whose
          // security was forgotten (Redocly's security-defined rule).
          security: [],
          parameters: [
            header('webhook-id', 'The message id, the same on every attempt of this event (`msg_…`).', '^msg_'),
            header('webhook-timestamp', 'When this attempt was sent, in seconds since 1970 (reject ones far from now).', '^[0-9]+$'),
            header(
              'webhook-signature',
              '`v1,` and the base64 HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}` under the secret.',
              '^v1,',
            ),
          ],
          requestBody: {
            required: true,
            content: {
              'application/json': { schema: schemas.write(eventEnvelope(type, EVENT_DATA[type])), example: EVENT_EXAMPLES[type] },
            },
          },
          responses: {
            '2XX': { description: 'Received: the delivery is done.' },
            '429': { description: 'Retried later, not before `Retry-After` when the answer has one.' },
            '5XX': {
              description:
                'Retried with backoff (about 5 s, 30 s, then longer, about a day in all); a timeout or a refused connection too.',
            },
            default: { description: 'Any other answer (a 3xx or 4xx) ends the delivery as failed, without retries.' },
          },
        },
      },
    ]),
  );
}
