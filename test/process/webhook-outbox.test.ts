import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { v1 } from '../../src/client/index.ts';
import { generateKey } from '../../src/server/security/api-key.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createStorage, type ServerStorage, spawnServer } from '../helpers/spawned-server.ts';
import { waitFor } from '../helpers/wait.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';

// HOOK-3: the outbox. The real server process (dist/) is killed between the commit of a change
// and the delivery of its event, and while a delivery is on the wire; restarted, it delivers the
// event, and every copy the receiver gets carries one webhook-id and verifies.

const ENV = { ATTEST_WEBHOOK_ALLOW_PRIVATE: 'true', ATTEST_WEBHOOK_TIMEOUT_MS: '1000', ATTEST_TASK_LEASE_SECONDS: '3' };

interface Event {
  type: string;
  data: { run: { id: string } };
}

for (const dialect of DIALECTS) {
  describe(`[${dialect}] webhook deliveries survive a killed instance`, () => {
    const dirs: string[] = [];
    const storages: ServerStorage[] = [];
    const receivers: WebhookReceiver[] = [];
    after(async () => {
      for (const receiver of receivers) await receiver.close();
      for (const storage of storages) await storage.drop();
      for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
    });

    async function setUp() {
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'attest-hook-'));
      dirs.push(dataDir);
      const storage = await createStorage(dialect, dataDir, generateKey('standard'));
      storages.push(storage);
      const receiver = await startWebhookReceiver();
      receivers.push(receiver);
      return { storage, receiver };
    }

    /** The run.completed copies the receiver got for this run: all verified, all with one webhook-id. */
    function copiesOf(receiver: WebhookReceiver, runId: string) {
      const copies = receiver.received.filter((r) => (r.verified as Event | undefined)?.data.run.id === runId);
      for (const r of receiver.received) assert.equal(r.verifyError, undefined, 'every delivery verifies');
      return copies;
    }

    test('killed right after the commit (crash point webhook-after-outbox): the restarted server delivers the event', async () => {
      const { storage, receiver } = await setUp();
      const first = await spawnServer(storage, { ...ENV, ATTEST_CRASH_AT: 'webhook-after-outbox:1' });
      const project = await first.admin.call(v1.projects.createProject, { body: { key: 'HOOKS', name: 'Hooks' } });
      const hook = await first.admin.call(v1.webhooks.createWebhook, {
        params: { projectId: project.id },
        body: { name: 'outbox', url: receiver.url, events: ['run.completed'] },
      });
      receiver.secret = hook.secret;
      const completing = first.admin.call(v1.runs.createRun, { body: { projectId: project.id, name: 'survives', verdict: 'passed' } });
      await assert.rejects(completing, 'the process died before answering');
      assert.equal((await first.exited).signal, 'SIGKILL');
      const second = await spawnServer(storage, ENV);
      try {
        const runs = await second.admin.call(v1.runs.listRuns, { query: { projectId: project.id } });
        const run = runs.items.find((r) => r.name === 'survives');
        assert.ok(run, 'the change committed before the kill');
        await waitFor(() => copiesOf(receiver, run.id).length > 0, {
          timeoutMs: 30_000,
          message: 'the event, sent by the restarted server',
        });
        const copies = copiesOf(receiver, run.id);
        assert.equal(new Set(copies.map((r) => r.headers['webhook-id'])).size, 1);
        const log = await second.admin.call(v1.webhooks.listWebhookDeliveries, { params: { projectId: project.id, webhookId: hook.id } });
        assert.equal(log.items.length, 1, 'one delivery of the event');
        assert.equal(log.items[0]?.messageId, copies[0]?.headers['webhook-id']);
      } finally {
        await second.stop();
      }
    });

    test('killed while a delivery is on the wire: it is sent again after the claim runs out, with the same webhook-id, and the log keeps the cut-off attempt', async () => {
      const { storage, receiver } = await setUp();
      const first = await spawnServer(storage, ENV);
      const project = await first.admin.call(v1.projects.createProject, { body: { key: 'WIRE', name: 'Wire' } });
      const hook = await first.admin.call(v1.webhooks.createWebhook, {
        params: { projectId: project.id },
        body: { name: 'wire', url: receiver.url, events: ['run.completed'] },
      });
      receiver.secret = hook.secret;
      receiver.answers.push({ status: 0 }); // the first copy is never answered
      const run = await first.admin.call(v1.runs.createRun, { body: { projectId: project.id, name: 'on the wire', verdict: 'failed' } });
      await waitFor(() => copiesOf(receiver, run.id).length === 1, { timeoutMs: 15_000, message: 'the first copy, on the wire' });
      first.child.kill('SIGKILL');
      await first.exited;
      const second = await spawnServer(storage, ENV);
      try {
        await waitFor(() => copiesOf(receiver, run.id).length >= 2, { timeoutMs: 40_000, message: 'the event sent again' });
        const copies = copiesOf(receiver, run.id);
        assert.equal(new Set(copies.map((r) => r.headers['webhook-id'])).size, 1, 'one id for every copy');
        assert.equal(new Set(copies.map((r) => r.body)).size, 1, 'one body for every copy');
        // HOOK-10: the attempt the kill cut off is in the delivery log, before the one that delivered.
        await waitFor(
          async () => {
            const log = await second.admin.call(v1.webhooks.listWebhookDeliveries, {
              params: { projectId: project.id, webhookId: hook.id },
            });
            return log.items[0]?.status === 'delivered';
          },
          { timeoutMs: 15_000, message: 'the second copy recorded as delivered' },
        );
        const log = await second.admin.call(v1.webhooks.listWebhookDeliveries, { params: { projectId: project.id, webhookId: hook.id } });
        const attempts = log.items[0]?.attempts ?? [];
        assert.equal(attempts.length, copies.length, 'one attempt recorded per copy sent');
        const [cut, delivered] = [...attempts].sort((a, b) => a.attempt - b.attempt);
        assert.equal(cut?.status, null);
        assert.match(cut?.error ?? '', /^cut off: /);
        assert.equal(delivered?.status, 204, "the receiver's answer to the copy sent again");
      } finally {
        await second.stop();
      }
    });
  });
}
