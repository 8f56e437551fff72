import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { v1 } from '../../src/client/index.ts';
import { findTaskByKey } from '../../src/server/db/repositories/tasks.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createProject, createUser, type TestUser, unique } from '../helpers/factories.ts';
import { type FaultyProxy, faultyProxy, startS3 } from '../helpers/s3.ts';
import { startPeerServer, startTestServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';

// SCALE-9: a stuck import holds only the imports' lane, and only until its time limit. The
// import is stuck for real: its upload is kept in an S3 bucket (s3rver) behind a proxy that
// answers the GET of that upload 15 s late, as a store that stops answering does, while every
// other request to the store goes through. Meanwhile a webhook delivery is sent at once; past
// ATTEST_TASK_TIMEOUT_SECONDS the import ends failed naming the limit, its task is gone, and the
// next import completes. On PostgreSQL two instances each hold one such import, and deliveries
// still go out.

const s3 = await startS3();
after(() => s3.close());

const TIME_LIMIT_SECONDS = 4;
/**
 * The store's answer to an upload's GET: long after the time limit (and the second the runner
 * waits for a handler told to stop), short enough that the proxy's timers do not hold the test
 * process long after it.
 */
const LATE_MS = 15_000;
/** The store's client waits for the late answer, an import is stopped after 4 s, a lease (and the wait for a handler told to stop) short. */
const env = (proxy: FaultyProxy, bucket: string) => ({
  ...s3.env(bucket, 'attest'),
  ATTEST_S3_ENDPOINT: proxy.endpoint,
  ATTEST_S3_TIMEOUT_MS: '90000',
  ATTEST_S3_MAX_ATTEMPTS: '1',
  ATTEST_TASK_TIMEOUT_SECONDS: String(TIME_LIMIT_SECONDS),
  ATTEST_TASK_LEASE_SECONDS: '3',
  ATTEST_WEBHOOK_ALLOW_PRIVATE: 'true',
});

const junit = (suite: string) =>
  Buffer.from(
    `<testsuite name="${suite}"><testcase classname="${suite}" name="one"/><testcase classname="${suite}" name="two"/></testsuite>`,
  );
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

interface Setup {
  projectId: string;
  tester: TestUser;
  manager: TestUser;
  hookId: string;
}

async function setUp(server: TestServer, receiver: WebhookReceiver): Promise<Setup> {
  const projectId = (await createProject(server, 'Lanes')).id;
  const tester = await createUser(server, ['tester'], { projects: [projectId] });
  const manager = await createUser(server, ['manager'], { projects: [projectId] });
  const hook = await manager.client.call(v1.webhooks.createWebhook, {
    params: { projectId },
    body: { name: unique('hook-'), url: receiver.url, events: ['run.completed'] },
  });
  receiver.secret = hook.secret;
  return { projectId, tester, manager, hookId: hook.id };
}

/** What a suite stands up besides its servers: the late proxy in front of a new bucket, the webhook receiver, the project. */
interface Stand extends Setup {
  proxy: FaultyProxy;
  receiver: WebhookReceiver;
  /** The digests of the uploads whose GETs the proxy answers late. */
  delayed: Set<string>;
  /** Closes the receiver and the proxy (the suite closes its servers first). */
  close(): Promise<void>;
}

/**
 * Starts the proxy and the receiver, then the servers `start` makes with the environment they
 * share (answering the one to set the project up on), and delays the GETs of the uploads that
 * stuckImport adds. Closes what it started if a step fails.
 */
async function standUp(start: (shared: ReturnType<typeof env>) => Promise<TestServer>): Promise<Stand> {
  const proxy = await faultyProxy(s3.endpoint);
  let receiver: WebhookReceiver | undefined;
  const close = async () => {
    await receiver?.close();
    await proxy.close();
  };
  try {
    receiver = await startWebhookReceiver();
    const setup = await setUp(await start(env(proxy, await s3.createBucket())), receiver);
    const delayed = new Set<string>();
    delayUploads(proxy, delayed);
    return { ...setup, proxy, receiver, delayed, close };
  } catch (error) {
    await close();
    throw error;
  }
}

/** Posts a JUnit import whose upload GETs the proxy answers late; answers its id once the store has that GET. */
async function stuckImport(stand: Stand): Promise<string> {
  const { proxy } = stand;
  const bytes = junit(unique('com.example.Stuck'));
  stand.delayed.add(sha256(bytes));
  const accepted = await stand.tester.client.importReport(stand.projectId, { name: 'stuck.xml', bytes });
  const seen = proxy.answers.filter((answer) => answer === 'delayed').length;
  await waitFor(() => proxy.answers.filter((answer) => answer === 'delayed').length > seen, {
    timeoutMs: 20_000,
    message: 'the import asked the store for its upload',
  });
  return String(accepted.id);
}

const readImport = (setup: Setup, importId: string) =>
  setup.tester.client.call(v1.imports.getImport, { params: { projectId: setup.projectId, importId } });

/** Sends the test event and answers the import states at the moment the receiver had it. */
async function deliveredWhile(stand: Stand, importIds: string[]) {
  const { receiver } = stand;
  const before = receiver.received.length;
  const asked = Date.now();
  await stand.manager.client.call(v1.webhooks.testWebhook, { params: { projectId: stand.projectId, webhookId: stand.hookId } });
  await waitFor(() => receiver.received.length > before, { timeoutMs: 30_000, message: 'the test event was delivered' });
  const tookMs = Date.now() - asked;
  const states = await Promise.all(importIds.map(async (id) => (await readImport(stand, id)).status));
  return { tookMs, states, delivery: receiver.received.at(-1) };
}

/** Delays the GETs of the uploads in `delayed`. */
function delayUploads(proxy: FaultyProxy, delayed: Set<string>): void {
  proxy.delay(LATE_MS, (request) => request.method === 'GET' && [...delayed].some((sha) => request.url?.includes(sha)));
}

async function failsAtTheLimit(server: TestServer, setup: Setup, importId: string): Promise<void> {
  const record = await waitFor(
    async () => {
      const read = await readImport(setup, importId);
      return read.status === 'queued' || read.status === 'processing' ? undefined : read;
    },
    { timeoutMs: 30_000, message: 'the stuck import ended' },
  );
  assert.equal(record.status, 'failed');
  assert.equal(
    record.error,
    `The import ran past the time limit of a background task (${TIME_LIMIT_SECONDS} s, ATTEST_TASK_TIMEOUT_SECONDS) and was stopped.`,
  );
  // Deleted right after the import is marked failed: gone, never claimed again.
  await waitFor(async () => (await findTaskByKey(server.app.attest.db, `import:${importId}`)) === undefined, {
    message: 'its task is gone',
  });
}

for (const dialect of DIALECTS) {
  describe(`[${dialect}] a stuck import (SCALE-9)`, () => {
    let server: TestServer;
    let stand: Stand;

    before(async () => {
      stand = await standUp(async (shared) => {
        server = await startTestServer(dialect, shared);
        return server;
      });
    });
    after(async () => {
      await server?.close();
      await stand?.close();
    });

    test('delays no webhook delivery, ends failed at its time limit, and the next import completes', { timeout: 120_000 }, async () => {
      const importId = await stuckImport(stand);
      const { tookMs, states, delivery } = await deliveredWhile(stand, [importId]);
      assert.deepEqual(states, ['queued'], `delivered after ${tookMs} ms, while the import was still stuck`);
      assert.equal(delivery?.verifyError, undefined);
      assert.equal((delivery?.verified as { type?: string } | undefined)?.type, 'webhook.test');

      await failsAtTheLimit(server, stand, importId);
      const next = await stand.tester.client.importReport(stand.projectId, { name: 'next.xml', bytes: junit(unique('com.example.Next')) });
      const record = await waitFor(
        async () => {
          const read = await readImport(stand, String(next.id));
          return read.status === 'completed' || read.status === 'failed' ? read : undefined;
        },
        { timeoutMs: 30_000, message: 'the next import ended' },
      );
      assert.equal(record.status, 'completed', record.error ?? '');
      assert.equal(record.counts?.runs, 2);
    });
  });
}

if (DIALECTS.includes('postgres')) {
  describe('[postgres] a stuck import on each of two instances (SCALE-9)', () => {
    let first: TestServer;
    let second: TestServer;
    let stand: Stand;

    before(async () => {
      stand = await standUp(async (shared) => {
        first = await startTestServer('postgres', shared);
        second = await startPeerServer(first, shared);
        return first;
      });
    });
    after(async () => {
      await second?.close();
      await first?.close();
      await stand?.close();
    });

    test('two stuck imports, one on each instance, delay no webhook delivery and both fail at their time limit', {
      timeout: 120_000,
    }, async () => {
      const ids = [await stuckImport(stand), await stuckImport(stand)];
      const owners = await Promise.all(
        ids.map(async (id) => (await findTaskByKey(first.app.attest.db, `import:${id}`))?.lease_owner ?? undefined),
      );
      assert.deepEqual(
        new Set(owners),
        new Set([first.app.attest.background.instanceId, second.app.attest.background.instanceId]),
        'each instance holds one',
      );
      const { tookMs, states } = await deliveredWhile(stand, ids);
      assert.deepEqual(states, ['queued', 'queued'], `delivered after ${tookMs} ms, while both imports were still stuck`);
      for (const id of ids) await failsAtTheLimit(first, stand, id);
    });
  });
}
