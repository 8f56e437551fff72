import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { v1 } from '../../src/client/index.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createProject, createUser, type TestUser, unique } from '../helpers/factories.ts';
import { startPeerServer, startTestServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';

// A lapsed claim never sends (HOOK-12): two instances on one PostgreSQL database. One claims a
// delivery and is held up before the request leaves (here by a lock on the attempts table, as a
// long pause or a slow database would); its claim runs out and the other instance claims and sends
// the delivery. When the first is let go, it finds its claim gone and sends nothing: the receiver
// gets the delivery once, and the log shows one attempt.

const ENV = { ATTEST_WEBHOOK_ALLOW_PRIVATE: 'true', ATTEST_WEBHOOK_TIMEOUT_MS: '1000' };

for (const dialect of DIALECTS.filter((d) => d === 'postgres')) {
  describe(`[${dialect}] a webhook claim that ran out is never sent from (HOOK-12)`, () => {
    let first: TestServer;
    let second: TestServer;
    let receiver: WebhookReceiver;
    let manager: TestUser;
    let projectId = '';
    before(async () => {
      first = await startTestServer(dialect, ENV);
      second = await startPeerServer(first, ENV);
      receiver = await startWebhookReceiver();
      projectId = (await createProject(first)).id;
      manager = await createUser(first, ['manager'], { projects: [projectId] });
    });
    after(async () => {
      await receiver?.close();
      await second?.close();
      await first?.close();
    });

    test('held up past its claim, an instance sends nothing; the instance that claimed next sends once', async () => {
      const hook = await manager.client.call(v1.webhooks.createWebhook, {
        params: { projectId },
        body: { name: unique('hook-'), events: ['run.completed'], url: receiver.url },
      });
      receiver.secret = hook.secret;
      const lock = new pg.Client({ connectionString: first.config.databaseUrl });
      await lock.connect();
      try {
        await lock.query('BEGIN');
        // Reads go on; recording an attempt waits.
        await lock.query('LOCK TABLE webhook_attempts IN EXCLUSIVE MODE');
        await manager.client.call(v1.webhooks.testWebhook, { params: { projectId, webhookId: hook.id } });
        const claimOf = async () => {
          const { rows } = await lock.query<{ next_attempt_at: string | null }>(
            'SELECT next_attempt_at FROM webhook_deliveries WHERE webhook_id = $1',
            [hook.id],
          );
          return rows[0]?.next_attempt_at ?? null;
        };
        // Claimed: due again only after the claim (twice the timeout and 5 s from the claim).
        const firstClaim = await waitFor(
          async () => {
            const at = await claimOf();
            return at !== null && Date.parse(at) > first.clock().getTime() + 5_000 ? at : undefined;
          },
          { message: 'the delivery claimed by one instance' },
        );
        // The claim runs out on both instances' clocks; a dispatcher that is free claims the delivery again.
        for (const server of [first, second]) server.clock.advance(2 * 1000 + 6_000);
        for (const server of [first, second]) {
          await server.app.attest.background.enqueue({ kind: 'webhook-dispatch', key: unique('test-dispatch:') });
        }
        await waitFor(async () => ((await claimOf()) !== firstClaim ? true : undefined), {
          message: 'the delivery claimed again by the other dispatcher',
        });
        await lock.query('COMMIT');
        const delivered = await waitFor(
          async () => {
            const [delivery] = (await manager.client.call(v1.webhooks.listWebhookDeliveries, { params: { projectId, webhookId: hook.id } }))
              .items;
            return delivery?.status === 'delivered' ? delivery : undefined;
          },
          { message: 'the delivery delivered' },
        );
        await Promise.all([first.app.attest.background.idle(), second.app.attest.background.idle()]);
        const sent = receiver.received.filter((r) => r.headers['webhook-id'] === delivered.messageId);
        assert.equal(sent.length, 1, 'the receiver got the delivery once');
        const [again] = (await manager.client.call(v1.webhooks.listWebhookDeliveries, { params: { projectId, webhookId: hook.id } })).items;
        assert.deepEqual(
          again?.attempts.map((a) => [a.attempt, a.status]),
          [[1, 204]],
          'one attempt: the lapsed claim recorded nothing it did not send',
        );
        assert.ok(
          [...first.logs, ...second.logs].some((line) => line.includes('its claim ran out before the request left')),
          'the instance that lost its claim says so',
        );
      } finally {
        await lock.query('ROLLBACK').catch(() => {});
        await lock.end();
      }
    });
  });
}
