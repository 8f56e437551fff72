import { createHmac, randomUUID } from 'node:crypto';
import { type Lease, TaskInterrupted } from '../../background.ts';
import type { ServiceContext } from '../../context.ts';
import { inTransaction } from '../../db/repositories/transaction.ts';
import {
  ATTEMPT_CUT_OFF,
  ATTEMPT_UNDER_WAY,
  attemptsSoFar,
  claimDelivery,
  cutOffAttempts,
  deleteAttempt,
  dueDeliveries,
  failPendingDeliveries,
  findDelivery,
  findWebhook,
  insertAttempt,
  lockWebhook,
  nextDeliveryDue,
  nextUnannouncedExpiry,
  setDeliveryPayload,
  updateAttempt,
  updateDelivery,
  updateWebhook,
} from '../../db/repositories/webhooks.ts';
import type { WebhookDeliveriesTable, WebhooksTable } from '../../db/types.ts';
import { OutgoingError, sendOutgoing } from '../../outgoing/request.ts';
import { APP_VERSION } from '../../version.ts';
import { audit } from '../access/audit.ts';
import { buildEventData, queueExpiredQuarantines } from './events.ts';
import { slackMessage, teamsMessage } from './messages.ts';
import { WEBHOOK_DISPATCH_TASK } from './outbox.ts';

// Sending what the outbox holds (HOOK-2 to HOOK-4): any instance's task runner claims a dispatch
// task (queued with the change) or the periodic sweep, and sends every delivery due, each claimed
// on its own row first so two dispatchers never send one delivery at once. An attempt that fails on
// a timeout, a connection error, 429 or 5xx is retried with backoff and jitter, honouring
// `Retry-After`; a webhook that failed for a day is disabled, with an audit entry.

export const WEBHOOK_SWEEP_TASK = 'webhook-sweep';
/**
 * The sweep's longest period. It runs when the next retry or the next quarantine expiry it knows of
 * is due, and at least this often (a quarantine set since its last run, expiring sooner, waits at
 * most this long to be announced). An idle instance writes its schedule no more than hourly.
 */
const SWEEP_MS = 3_600_000;
/** Deliveries sent at once by one dispatcher. */
const PARALLEL = 8;
/** How much of an answer is read, and kept in the log. */
const RESPONSE_BYTES = 4096;
const RESPONSE_KEPT = 1000;
/** The waits before each retry: about 5 s, 30 s, then growing to about a day in all (10 retries, 11 attempts). */
export const RETRY_DELAYS_MS = [5_000, 30_000, 120_000, 600_000, 1_800_000, 3_600_000, 7_200_000, 14_400_000, 28_800_000, 32_400_000];
/** A webhook failing this long without a success is disabled. */
export const DISABLE_AFTER_MS = 24 * 3_600_000;

/** Registers the dispatch task and the sweep with the background runner (from the catalogue, background-tasks.ts). */
export function handleWebhookDeliveries(ctx: ServiceContext): void {
  ctx.background.handle(WEBHOOK_DISPATCH_TASK, async (_task, lease) => {
    await dispatchWebhooks(ctx, lease);
  });
  ctx.background.every(WEBHOOK_SWEEP_TASK, SWEEP_MS, (lease) => dispatchWebhooks(ctx, lease));
}

/**
 * Announces expired quarantines, then sends every delivery due now, a few at a time, until none is
 * due; answers how soon the next one is due (at most the sweep's period).
 */
export async function dispatchWebhooks(ctx: ServiceContext, lease: Lease): Promise<number> {
  await inTransaction(ctx.db, (trx) => queueExpiredQuarantines(ctx, trx));
  for (;;) {
    if (!lease.stillHeld()) throw new TaskInterrupted('webhook deliveries');
    const due = await dueDeliveries(ctx.db, ctx.clock().toISOString(), PARALLEL);
    if (due.length === 0) break;
    await Promise.all(due.map((delivery) => attemptDelivery(ctx, delivery)));
  }
  const next = [await nextDeliveryDue(ctx.db), await nextUnannouncedExpiry(ctx.db)].filter((at) => at !== undefined);
  if (next.length === 0) return SWEEP_MS;
  const inMs = Math.max(1000, Math.min(SWEEP_MS, Math.min(...next.map((at) => Date.parse(at))) - ctx.clock().getTime()));
  // A dispatch due then, on whichever instance: one task per second of due time, however many dispatchers ask.
  const runAt = new Date(ctx.background.time().getTime() + inMs);
  await ctx.background.enqueue({ kind: WEBHOOK_DISPATCH_TASK, key: `webhooks:at:${Math.ceil(runAt.getTime() / 1000)}`, runAt });
  return inMs;
}

/** The Standard Webhooks signature: `v1,` and the base64 HMAC-SHA256 of `id.timestamp.body` under the secret's bytes. */
export function signDelivery(secret: string, messageId: string, timestampSeconds: number, body: string): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  return `v1,${createHmac('sha256', key).update(`${messageId}.${timestampSeconds}.${body}`).digest('base64')}`;
}

/** What an attempt sent (HOOK-11), as the delivery log shows it. */
interface SentRequest {
  url: string;
  headers: Record<string, string>;
  /** Null when it is the delivery's payload as it is: a standard delivery sends that on every attempt (HOOK-3), kept once, on the delivery. */
  body: string | null;
}

interface AttemptResult {
  status: number | null;
  error: string | null;
  latencyMs: number;
  response: string | null;
  /** What was sent; undefined when nothing was (no payload could be built). */
  request?: SentRequest;
  /** The answer's headers, as many as the log keeps. */
  responseHeaders?: Record<string, string>;
  /** Whether another attempt may succeed: timeouts, connection errors, 429 and 5xx. */
  retryable: boolean;
  /** The receiver's `Retry-After`, in ms. */
  retryAfterMs: number | undefined;
}

/** `Retry-After` in seconds or as an HTTP date, in ms from now (never more than a day); undefined when absent or unreadable. */
export function retryAfterMs(value: string | undefined, nowMs: number): number | undefined {
  if (value === undefined) return undefined;
  const ms = /^\d{1,10}$/.test(value.trim()) ? Number(value.trim()) * 1000 : Date.parse(value) - nowMs;
  return Number.isFinite(ms) ? Math.min(Math.max(0, ms), DISABLE_AFTER_MS) : undefined;
}

/** The wait before the retry after attempt `attempts` (1-based), with ±10% jitter, and at least what `Retry-After` asks. */
export function retryDelay(attempts: number, retryAfter: number | undefined, random = Math.random): number {
  const base = RETRY_DELAYS_MS[attempts - 1] ?? (RETRY_DELAYS_MS.at(-1) as number);
  return Math.max(Math.round(base * (0.9 + 0.2 * random())), retryAfter ?? 0);
}

async function attemptDelivery(ctx: ServiceContext, due: WebhookDeliveriesTable): Promise<void> {
  const now = ctx.clock();
  const webhook = await findWebhook(ctx.db, due.webhook_id);
  if (!webhook) return; // deleted: its deliveries went with it
  if (webhook.enabled !== 1) {
    await updateDelivery(ctx.db, due.id, { status: 'failed', next_attempt_at: null, updated_at: now.toISOString() });
    return;
  }
  const until = claimUntil(ctx);
  if (due.next_attempt_at === null || !(await claimDelivery(ctx.db, due.id, due.next_attempt_at, until))) return;
  const attemptId = await beginAttempt(ctx, due);
  let payload = due.payload;
  if (payload === null) {
    try {
      const data = await buildEventData(ctx, due);
      await setDeliveryPayload(ctx.db, due.id, JSON.stringify({ type: due.event_type, timestamp: due.created_at, data }));
      payload = (await findDelivery(ctx.db, due.id))?.payload ?? null;
    } catch (error) {
      ctx.log.warn({ err: error, deliveryId: due.id }, 'a webhook payload could not be built');
    }
    if (payload === null) {
      const result = { status: null, error: 'payload: what the event is about is gone', latencyMs: 0, response: null, retryable: false };
      await recordAttempt(ctx, webhook, due, attemptId, { ...result, retryAfterMs: undefined });
      return;
    }
  }
  // The claim is renewed as the request leaves (HOOK-12). Preparing the attempt may have outlasted the
  // claim (a pause, a lock waited on): the delivery may then be another instance's, which sends it;
  // this one sends nothing and takes back the attempt it recorded.
  if (!(await claimDelivery(ctx.db, due.id, until, claimUntil(ctx)))) {
    await deleteAttempt(ctx.db, attemptId);
    ctx.log.info({ deliveryId: due.id }, 'a webhook delivery was not sent: its claim ran out before the request left');
    return;
  }
  await recordAttempt(ctx, webhook, due, attemptId, await send(ctx, webhook, due.message_id, payload));
}

/**
 * How long a claim holds from now: a request lasts at most the timeout, so a claimed delivery whose
 * attempt was never recorded (its sender died) is due again after twice the timeout and a margin.
 */
function claimUntil(ctx: ServiceContext): string {
  return new Date(ctx.clock().getTime() + 2 * ctx.config.webhookTimeoutMs + 5000).toISOString();
}

/**
 * Records a claimed delivery's attempt as under way before anything is sent, so an attempt cut off
 * by a crash stays in the delivery log (HOOK-10); attempts an earlier claim left under way are marked
 * cut off first (their claim ran out, so their senders are gone). Answers the new attempt's id.
 */
async function beginAttempt(ctx: ServiceContext, delivery: WebhookDeliveriesTable): Promise<string> {
  const id = randomUUID();
  await inTransaction(ctx.db, async (trx) => {
    await cutOffAttempts(trx, delivery.id, ATTEMPT_UNDER_WAY, ATTEMPT_CUT_OFF);
    const earlier = await attemptsSoFar(trx, delivery.id);
    await insertAttempt(trx, {
      id,
      delivery_id: delivery.id,
      attempt: earlier.count + 1,
      at: ctx.clock().toISOString(),
      status_code: null,
      error: ATTEMPT_UNDER_WAY,
      latency_ms: 0,
      response: null,
      ...NOTHING_SENT,
    });
  });
  return id;
}

/** The exchange columns of an attempt that sent nothing (yet). */
const NOTHING_SENT = { request_url: null, request_headers: null, request_body: null, response_headers: null } as const;

/**
 * How `webhook-signature` is kept in the delivery log: its scheme without its value. A signature
 * with its body and timestamp is a request anyone reading the log could replay to the receiver
 * within its tolerance; the log shows that one was sent, not what it was.
 */
export const MASKED_SIGNATURE = 'v1,<masked>';
/** The answer's headers the log keeps, and how long each value may be. */
const RESPONSE_HEADERS_KEPT = 50;
const HEADER_VALUE_KEPT = 500;

/** A URL as the log keeps it: a password in it masked. */
function loggedUrl(text: string): string {
  try {
    const url = new URL(text);
    if (url.password) url.password = '***';
    return url.toString();
  } catch {
    return text;
  }
}

/** The first headers of an answer, each value cut to what the log keeps. */
function keptHeaders(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(headers)
      .slice(0, RESPONSE_HEADERS_KEPT)
      .map(([name, value]) => [name, value.slice(0, HEADER_VALUE_KEPT)]),
  );
}

/** One attempt: the body for the webhook's kind, signed, sent, and what came back. */
async function send(ctx: ServiceContext, webhook: WebhooksTable, messageId: string, payload: string): Promise<AttemptResult> {
  const event = JSON.parse(payload) as { type: string; data: unknown };
  const body =
    webhook.kind === 'slack'
      ? JSON.stringify(slackMessage(event))
      : webhook.kind === 'teams'
        ? JSON.stringify(teamsMessage(event))
        : payload;
  // Wall-clock time: receivers compare it with their own clock (five minutes' tolerance).
  const timestamp = Math.floor(Date.now() / 1000);
  const headers = {
    // Named here, as sendOutgoing would, so the log shows every header the receiver got.
    'user-agent': `Attest/${APP_VERSION}`,
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(body)),
    'webhook-id': messageId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signDelivery(webhook.secret, messageId, timestamp, body),
  };
  const request = {
    url: loggedUrl(webhook.url),
    headers: { ...headers, 'webhook-signature': MASKED_SIGNATURE },
    body: body === payload ? null : body,
  };
  const started = performance.now();
  try {
    const response = await sendOutgoing(
      { url: webhook.url, method: 'POST', headers, body, timeoutMs: ctx.config.webhookTimeoutMs },
      { allowPrivate: ctx.config.webhookAllowPrivate, maxResponseBytes: RESPONSE_BYTES },
    );
    const ok = response.status >= 200 && response.status < 300;
    return {
      status: response.status,
      error: null,
      latencyMs: response.latencyMs,
      response: response.text.slice(0, RESPONSE_KEPT),
      request,
      responseHeaders: keptHeaders(response.headers),
      retryable: !ok && (response.status === 429 || response.status >= 500),
      retryAfterMs: retryAfterMs(response.headers['retry-after'], Date.now()),
    };
  } catch (error) {
    if (!(error instanceof OutgoingError)) throw error;
    return {
      status: null,
      error: `${error.code}: ${error.message}`.slice(0, 500),
      latencyMs: Math.round(performance.now() - started),
      response: null,
      // A refused address or URL never left: nothing was sent.
      request: error.code === 'timeout' || error.code === 'connection' ? request : undefined,
      retryable: error.code === 'timeout' || error.code === 'connection',
      retryAfterMs: undefined,
    };
  }
}

/**
 * Records an attempt and what follows from it, in one transaction: delivered; due again after the
 * backoff; or failed for good (not retryable, or out of retries). A failure starts the webhook's
 * failing streak (a success ends it); a streak of a day, or a delivery that failed every attempt
 * within it, disables the webhook, fails its pending deliveries and writes an audit entry.
 */
async function recordAttempt(
  ctx: ServiceContext,
  webhook: WebhooksTable,
  delivery: WebhookDeliveriesTable,
  attemptId: string,
  result: AttemptResult,
) {
  const now = ctx.clock();
  const at = now.toISOString();
  let disabled = false;
  await inTransaction(ctx.db, async (trx) => {
    // The webhook first, as its deletion does (a delete cascading the other way would deadlock); deleted: nothing to record.
    const current = await lockWebhook(trx, webhook.id);
    if (!current) return;
    await updateAttempt(trx, attemptId, {
      status_code: result.status,
      error: result.error,
      latency_ms: result.latencyMs,
      response: result.response,
      ...(result.request
        ? {
            request_url: result.request.url,
            request_headers: JSON.stringify(result.request.headers),
            request_body: result.request.body,
            response_headers: result.responseHeaders ? JSON.stringify(result.responseHeaders) : null,
          }
        : NOTHING_SENT),
    });
    // Every attempt recorded counts, this one and any cut off by a crash before it.
    const earlier = await attemptsSoFar(trx, delivery.id);
    const attempts = Math.max(delivery.attempts + 1, earlier.count);
    if (result.status !== null && result.status >= 200 && result.status < 300) {
      await updateDelivery(trx, delivery.id, { status: 'delivered', attempts, next_attempt_at: null, updated_at: at });
      if (current.failing_since !== null) await updateWebhook(trx, webhook.id, { failing_since: null });
      return;
    }
    const outOfRetries = attempts > RETRY_DELAYS_MS.length;
    const retry = result.retryable && !outOfRetries;
    const next = retry ? new Date(now.getTime() + retryDelay(attempts, result.retryAfterMs)).toISOString() : null;
    await updateDelivery(trx, delivery.id, { status: retry ? 'pending' : 'failed', attempts, next_attempt_at: next, updated_at: at });
    const failingSince = current.failing_since ?? at;
    if (current.failing_since === null) await updateWebhook(trx, webhook.id, { failing_since: at });
    const firstAttempt = earlier.first ?? at;
    const failedWholeWindow = result.retryable && outOfRetries && failingSince <= firstAttempt;
    if (current.enabled === 1 && (now.getTime() - Date.parse(failingSince) >= DISABLE_AFTER_MS || failedWholeWindow)) {
      const reason = `Disabled by Attest: every delivery failed since ${failingSince} (last: ${result.status ?? result.error}).`;
      await updateWebhook(trx, webhook.id, { enabled: 0, disabled_reason: reason, updated_at: at });
      await failPendingDeliveries(trx, webhook.id, at);
      await audit(ctx, trx, {
        actorUserId: null,
        action: 'webhook.disable',
        targetType: 'webhook',
        targetId: webhook.id,
        details: { projectId: webhook.project_id, url: webhook.url, failingSince, lastDeliveryId: delivery.id, via: 'delivery' },
      });
      disabled = true;
    }
  });
  if (disabled) ctx.log.warn({ webhookId: webhook.id }, 'a webhook failed for a day and was disabled');
}
