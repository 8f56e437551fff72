import type { Static } from 'typebox';
import type { EVENT_DATA } from '../../../api/v1/webhook-events.ts';
import {
  createWebhook,
  deleteWebhook,
  getWebhook,
  getWebhookDelivery,
  listWebhookDeliveries,
  listWebhooks,
  redeliverWebhookDelivery,
  testWebhook,
  updateWebhook,
  type Webhook,
  type WebhookDelivery,
  type WebhookDeliveryDetails,
  type WebhookEventType,
} from '../../../api/v1/webhooks.ts';
import { LIFECYCLE_EVENT_EXAMPLES } from './lifecycle.ts';
import { IDS, PROJECT, RUN_LABELS } from './samples.ts';
import type { OperationExamples } from './types.ts';
import { examplesOf } from './types.ts';

// Outgoing webhooks (HOOK-*): the example project's webhook to a CI bot, its delivery log with a
// delivery that succeeded on its third attempt, and one body of each event.

const HOOK_ID = '4e6a8c0d-2f5b-4a7c-9e1d-3b5d7f9a1c20';
const DELIVERY_ID = '5f7b9d1e-3a6c-4b8d-8f2e-4c6e8a0b2d31';
const BASE = 'https://attest.example.com';

const WEBHOOK: Static<typeof Webhook> = {
  id: HOOK_ID,
  projectId: IDS.project,
  name: 'CI bot',
  kind: 'standard',
  url: 'https://ci-bot.example.com/attest',
  events: ['job.completed', 'run.failed_first'],
  enabled: true,
  disabledReason: null,
  failingSince: null,
  createdAt: '2026-03-01T09:00:00.000Z',
  updatedAt: '2026-03-01T09:00:00.000Z',
};

const DELIVERY: Static<typeof WebhookDelivery> = {
  id: DELIVERY_ID,
  webhookId: HOOK_ID,
  event: 'job.completed',
  messageId: 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W4',
  status: 'delivered',
  nextAttemptAt: null,
  createdAt: '2026-03-02T09:41:12.007Z',
  attempts: [
    { attempt: 1, at: '2026-03-02T09:41:12.031Z', status: 503, error: null, latencyMs: 88, response: 'Service Unavailable' },
    {
      attempt: 2,
      at: '2026-03-02T09:41:17.102Z',
      status: null,
      error: 'timeout: No complete answer within 10000 ms.',
      latencyMs: 10_001,
      response: null,
    },
    { attempt: 3, at: '2026-03-02T09:41:57.630Z', status: 204, error: null, latencyMs: 41, response: '' },
  ],
};

/** What the first and last attempts sent and got back; the timeout's request went, its answer never came. */
const SENT_HEADERS = (timestamp: string) => ({
  'user-agent': 'Attest/1.0.0',
  'content-type': 'application/json',
  'content-length': '1843',
  'webhook-id': DELIVERY.messageId,
  'webhook-timestamp': timestamp,
  'webhook-signature': 'v1,<masked>',
});
const BODY = '{"type":"job.completed","timestamp":"2026-03-02T09:41:12.007Z","data":{"project":{"key":"SHOP"}}}';
const DETAILS: Static<typeof WebhookDeliveryDetails> = {
  ...DELIVERY,
  attempts: [
    {
      ...(DELIVERY.attempts[0] as Static<typeof WebhookDelivery>['attempts'][number]),
      request: { url: WEBHOOK.url, headers: SENT_HEADERS('1772444472'), body: BODY },
      responseHeaders: { 'content-type': 'text/plain', 'retry-after': '5', date: 'Mon, 02 Mar 2026 09:41:12 GMT' },
    },
    {
      ...(DELIVERY.attempts[1] as Static<typeof WebhookDelivery>['attempts'][number]),
      request: { url: WEBHOOK.url, headers: SENT_HEADERS('1772444477'), body: BODY },
      responseHeaders: null,
    },
    {
      ...(DELIVERY.attempts[2] as Static<typeof WebhookDelivery>['attempts'][number]),
      request: { url: WEBHOOK.url, headers: SENT_HEADERS('1772444517'), body: BODY },
      responseHeaders: { date: 'Mon, 02 Mar 2026 09:41:57 GMT' },
    },
  ],
};

const PENDING: Static<typeof WebhookDelivery> = { ...DELIVERY, status: 'pending', nextAttemptAt: '2026-03-02T10:02:00.000Z' };
const TEST: Static<typeof WebhookDelivery> = {
  ...PENDING,
  id: '6a8c0e2f-4b7d-4c9e-9a3f-5d7f9b1c3e42',
  event: 'webhook.test',
  messageId: 'msg_2KWPCzq0Hk3Vg7mRb4YtE1uN9sQa',
  attempts: [],
};

export const webhookExamples: [string, OperationExamples][] = [
  examplesOf(listWebhooks, { responses: { 200: { items: [WEBHOOK], nextCursor: null } } }),
  examplesOf(createWebhook, {
    request: { name: 'CI bot', url: WEBHOOK.url, events: WEBHOOK.events },
    responses: { 201: { ...WEBHOOK, secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' } },
  }),
  examplesOf(getWebhook, { responses: { 200: WEBHOOK } }),
  examplesOf(updateWebhook, {
    request: { enabled: true },
    responses: { 200: { ...WEBHOOK, updatedAt: '2026-03-03T08:00:00.000Z' } },
  }),
  examplesOf(deleteWebhook, { responses: {} }),
  examplesOf(listWebhookDeliveries, { responses: { 200: { items: [DELIVERY], nextCursor: null } } }),
  examplesOf(getWebhookDelivery, { responses: { 200: DETAILS } }),
  examplesOf(redeliverWebhookDelivery, { responses: { 202: PENDING } }),
  examplesOf(testWebhook, { responses: { 202: TEST } }),
];

const project = { id: IDS.project, key: PROJECT.key, name: PROJECT.name };
const run = {
  id: IDS.jobRun,
  name: 'Checkout with a saved card',
  status: 'completed',
  verdict: 'failed' as const,
  testId: IDS.testCheckout,
  jobId: IDS.job,
  environment: RUN_LABELS.environment,
  branch: RUN_LABELS.branch,
  commit: RUN_LABELS.commit,
  startedAt: '2026-03-02T09:38:02.000Z',
  finishedAt: '2026-03-02T09:39:40.512Z',
  url: `${BASE}/runs/${IDS.jobRun}`,
};
const job = { id: IDS.job, name: 'Nightly regression', url: `${BASE}/jobs/${IDS.job}` };

/** One `data` of each event, typed by its schema. */
const EVENT_DATA_EXAMPLES: { [T in WebhookEventType]: Static<(typeof EVENT_DATA)[T]> } = {
  'run.completed': { project, run },
  'run.failed_first': { project, job, run },
  'job.completed': {
    project,
    job: {
      ...job,
      status: 'completed',
      branch: 'checkout-redesign',
      targetBranch: RUN_LABELS.branch,
      build: RUN_LABELS.build,
      ciUrl: 'https://github.com/acme/web-shop/actions/runs/8123456789',
      commit: RUN_LABELS.commit,
      startedAt: '2026-03-02T09:37:45.000Z',
      finishedAt: '2026-03-02T09:41:12.007Z',
      tests: { total: 11, passed: 8, failed: 1, broken: 0, skipped: 1, flaky: 1, unfinished: 0 },
      runs: { total: 12, passed: 10, failed: 1, broken: 0, skipped: 1, aborted: 0 },
    },
    failures: [
      {
        runId: IDS.jobRun,
        name: run.name,
        verdict: 'failed',
        url: run.url,
        screenshotUrl: `${BASE}/api/v1/images/${IDS.screenshotImage}/signed?thumbnail=true&expires=1772530872&signature=Xh3kq0V2m9bLr1aTc4eZ8yWn5uJp7sQd6fGh2iKo3lM`,
      },
    ],
    comparison: {
      baseJobId: IDS.launch,
      baseBranch: RUN_LABELS.branch,
      newFailures: [{ name: run.name, runId: IDS.jobRun, url: run.url }],
      fixed: [],
      newErrorGroups: [{ id: '7b9d1f3a-5c8e-4dab-8b4f-6e8a0c2d4f53', title: 'Expected "Paid", received "Declined"', tests: 1 }],
    },
  },
  'import.completed': {
    project,
    import: {
      id: IDS.import,
      fileName: 'junit-results.xml',
      status: 'completed',
      jobId: IDS.importJob,
      url: `${BASE}/jobs/${IDS.importJob}`,
      cases: 214,
    },
  },
  'quarantine.expired': {
    project,
    test: { id: IDS.testLogin, name: 'Log in with a valid account', url: `${BASE}/tests/${IDS.testLogin}` },
    quarantine: {
      owner: 'maria.lopez@example.com',
      reason: 'Flaky while the login service is migrated',
      expiresAt: '2026-03-16T00:00:00.000Z',
    },
  },
  ...LIFECYCLE_EVENT_EXAMPLES(project, BASE),
  'webhook.test': {
    project,
    webhook: { id: HOOK_ID, name: 'CI bot' },
    message: 'A test event from Attest: this webhook receives deliveries.',
  },
};

/** The body of each event as a `standard` webhook receives it. */
export const EVENT_EXAMPLES: Record<string, unknown> = Object.fromEntries(
  Object.entries(EVENT_DATA_EXAMPLES).map(([type, data]) => [type, { type, timestamp: '2026-03-02T09:41:12.007Z', data }]),
);
