import assert from 'node:assert/strict';
import { lookup } from 'node:dns/promises';
import os from 'node:os';
import { after, before, describe, test } from 'node:test';
import { v1 } from '../../src/client/index.ts';
import { isPrivateAddress } from '../../src/server/outgoing/addresses.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createProject, createUser, type TestUser, unique } from '../helpers/factories.ts';
import { closedPort } from '../helpers/http.ts';
import { firstPointer, rejectsWith } from '../helpers/problems.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';

// Outgoing webhooks (HOOK-1 to HOOK-8, docs/webhooks.md): receivers here verify every delivery
// with the `standardwebhooks` package. Time moves on the server's injected clock: a retry due in
// 30 s is sent once the clock passed it and a dispatch runs, never after a real wait.

async function createHook(user: TestUser, projectId: string, body: Record<string, unknown>) {
  return user.client.call(v1.webhooks.createWebhook, {
    params: { projectId },
    body: { name: unique('hook-'), events: ['run.completed'], ...body } as never,
  });
}

const log = (user: TestUser, projectId: string, webhookId: string) =>
  user.client.call(v1.webhooks.listWebhookDeliveries, { params: { projectId, webhookId }, query: { limit: 200 } });

/** Runs the dispatcher now (as the sweep would once due), and waits until the runner is idle. */
async function dispatch(server: TestServer): Promise<void> {
  await server.app.attest.background.enqueue({ kind: 'webhook-dispatch', key: unique('test-dispatch:') });
  await server.app.attest.background.idle();
}

/** Waits until the webhook's newest delivery has `count` attempts, and answers it. */
async function attemptsReach(user: TestUser, projectId: string, webhookId: string, count: number) {
  return waitFor(
    async () => {
      const [delivery] = (await log(user, projectId, webhookId)).items;
      return delivery && delivery.attempts.length >= count ? delivery : undefined;
    },
    { message: `${count} attempts in the delivery log` },
  );
}

for (const dialect of DIALECTS) {
  describe(`[${dialect}] outgoing webhooks`, () => {
    let server: TestServer;
    let strict: TestServer;
    let receiver: WebhookReceiver;
    let projectId = '';
    let otherProject = '';
    let manager: TestUser;
    let tester: TestUser;
    let viewer: TestUser;
    let outsider: TestUser;
    before(async () => {
      server = await startTestServer(dialect, { ATTEST_WEBHOOK_ALLOW_PRIVATE: 'true', ATTEST_PUBLIC_URL: 'https://attest.example.test' });
      strict = await startTestServer(dialect);
      receiver = await startWebhookReceiver();
      projectId = (await createProject(server, 'Hooks')).id;
      otherProject = (await createProject(server, 'Other')).id;
      manager = await createUser(server, ['manager'], { projects: [projectId] });
      tester = await createUser(server, ['tester'], { projects: [projectId] });
      viewer = await createUser(server, ['viewer'], { projects: [projectId] });
      outsider = await createUser(server, ['manager'], { projects: [otherProject] });
    });
    after(async () => {
      await receiver.close();
      await server.close();
      await strict.close();
    });

    describe('POST /projects/{projectId}/webhooks', () => {
      test('a manager adds one: the whsec_ secret is in that answer only; testers and viewers get 403, another project 404', async () => {
        const hook = await createHook(manager, projectId, { url: receiver.url });
        assert.match(hook.secret, /^whsec_[A-Za-z0-9+/=]{32}$/);
        assert.equal(hook.kind, 'standard');
        assert.equal(hook.enabled, true);
        const read = await manager.client.call(v1.webhooks.getWebhook, { params: { projectId, webhookId: hook.id } });
        assert.equal('secret' in read, false);
        const listed = await manager.client.call(v1.webhooks.listWebhooks, { params: { projectId } });
        assert.ok(listed.items.some((item) => item.id === hook.id && !('secret' in item)));
        for (const user of [tester, viewer]) {
          await assert.rejects(createHook(user, projectId, { url: receiver.url }), rejectsWith(403, 'FORBIDDEN'));
          await assert.rejects(user.client.call(v1.webhooks.listWebhooks, { params: { projectId } }), rejectsWith(403, 'FORBIDDEN'));
        }
        await assert.rejects(
          outsider.client.call(v1.webhooks.getWebhook, { params: { projectId, webhookId: hook.id } }),
          rejectsWith(404, 'NOT_FOUND'),
        );
        await assert.rejects(
          outsider.client.call(v1.webhooks.getWebhook, { params: { projectId: otherProject, webhookId: hook.id } }),
          rejectsWith(404, 'NOT_FOUND'),
          "another project's path does not reach it either",
        );
        await manager.client.call(v1.webhooks.deleteWebhook, { params: { projectId, webhookId: hook.id } });
      });

      test('bad input is a 400 naming the field, and stores nothing', async () => {
        for (const [body, pointer] of [
          [{ url: 'ftp://example.test/x' }, '/body/url'],
          [{ url: receiver.url, events: ['run.exploded'] }, '/body/events/0'],
          [{ url: receiver.url, events: [] }, '/body/events'],
          [{ url: receiver.url, kind: 'discord' }, '/body/kind'],
        ] as const) {
          await assert.rejects(
            createHook(manager, projectId, body),
            (e) => rejectsWith(400, 'INVALID_INPUT')(e) && firstPointer(e as never)?.startsWith(pointer) === true,
          );
        }
        const listed = await manager.client.call(v1.webhooks.listWebhooks, { params: { projectId } });
        assert.equal(listed.items.length, 0);
      });
    });

    describe('SSRF guard (HOOK-5)', () => {
      test('a URL on 127.0.0.1, localhost or 169.254.169.254 is refused unless ATTEST_WEBHOOK_ALLOW_PRIVATE allows it', async () => {
        const strictProject = (await createProject(strict, 'Strict')).id;
        const admin = { client: strict.admin.client } as TestUser;
        for (const url of [
          receiver.url,
          receiver.url.replace('127.0.0.1', 'localhost'),
          'http://169.254.169.254/latest',
          'http://[::1]:9/x',
        ]) {
          await assert.rejects(
            createHook(admin, strictProject, { url }),
            (e) => rejectsWith(400, 'INVALID_INPUT')(e) && firstPointer(e as never) === '/body/url',
          );
        }
        // Allowed on the other server: the same 127.0.0.1 receiver is accepted there (every other test uses it).
        const allowed = await createHook(manager, projectId, { url: receiver.url, enabled: false });
        await manager.client.call(v1.webhooks.deleteWebhook, { params: { projectId, webhookId: allowed.id } });
      });

      test('a name that resolves to a loopback address is refused at delivery: the attempt says private_address, nothing is sent', async (t) => {
        const host = os.hostname();
        const resolved = await lookup(host, { all: true }).catch(() => []);
        if (resolved.length === 0 || !resolved.every((a) => isPrivateAddress(a.address)))
          return t.skip(`${host} does not resolve to a private address here`);
        const strictProject = (await createProject(strict, 'Strict2')).id;
        const admin = { client: strict.admin.client } as TestUser;
        const hook = await createHook(admin, strictProject, { url: receiver.url.replace('127.0.0.1', host) });
        const before = receiver.received.length;
        await admin.client.call(v1.webhooks.testWebhook, { params: { projectId: strictProject, webhookId: hook.id } });
        const delivery = await attemptsReach(admin, strictProject, hook.id, 1);
        assert.match(String(delivery.attempts[0]?.error), /^private_address: /);
        assert.equal(delivery.status, 'failed', 'not retried: it would be refused again');
        assert.equal(receiver.received.length, before);
      });
    });

    describe('deliveries', () => {
      test('every event reaches a receiver signed: standardwebhooks verifies run.completed, run.failed_first, job.completed, import.completed and quarantine.expired', async () => {
        const events = ['run.completed', 'run.failed_first', 'job.completed', 'import.completed', 'quarantine.expired'];
        const hook = await createHook(manager, projectId, { url: receiver.url, events });
        receiver.secret = hook.secret;
        const from = receiver.received.length;
        const job = await tester.client.call(v1.jobs.createJob, { body: { projectId, testIds: [], branch: 'main', name: 'nightly' } });
        const failing = { projectId, jobId: job.id, branch: 'main', verdict: 'failed' as const };
        const first = await tester.client.call(v1.runs.createRun, {
          body: { ...failing, name: 'checkout fails', testName: 'checkout fails' },
        });
        await tester.client.call(v1.runs.createRun, { body: { ...failing, name: 'login fails', testName: 'login fails' } });
        await tester.client.call(v1.runs.createRun, {
          body: { projectId, jobId: job.id, name: 'home', testName: 'home', verdict: 'passed' },
        });
        await tester.client.call(v1.jobs.completeJob, { params: { jobId: job.id } });
        const imported = await tester.client.importReport(projectId, {
          name: 'nightly.xml',
          bytes: Buffer.from('<testsuite name="s"><testcase classname="s" name="one"/><testcase classname="s" name="two"/></testsuite>'),
        });
        await tester.client.call(v1.tests.quarantineTest, {
          params: { testId: String(first.testId) },
          body: { owner: 'qa', reason: 'flaky checkout', expiresAt: new Date(server.clock().getTime() + 3_600_000).toISOString() },
        });
        server.clock.advance(3_600_001);
        await dispatch(server);
        const byType = await waitFor(
          () => {
            const got = receiver.received.slice(from);
            // The job's own job.completed, not the import's job's.
            const ours = got.filter((r) => {
              const event = r.verified as { type?: string; data?: { job?: { id?: string } } } | undefined;
              return event?.type !== 'job.completed' || event.data?.job?.id === job.id;
            });
            const types = new Map(ours.map((r) => [(r.verified as { type?: string } | undefined)?.type, r]));
            return events.every((type) => types.has(type)) ? types : undefined;
          },
          {
            message: () =>
              `all five events (got ${receiver.received.slice(from).map((r) => r.verifyError ?? (r.verified as { type: string }).type)})`,
          },
        );
        for (const r of receiver.received.slice(from)) assert.equal(r.verifyError, undefined, 'every delivery verifies');
        const data = <T>(type: string) => (byType.get(type)?.verified as { data: T } | undefined)?.data as T;
        assert.equal(receiver.received.slice(from).filter((r) => (r.verified as { type: string }).type === 'run.failed_first').length, 1);
        assert.equal(data<{ run: { name: string } }>('run.failed_first').run.name, 'checkout fails');
        assert.equal(data<{ project: { id: string } }>('run.completed').project.id, projectId);
        const completed = data<{ job: { id: string; runs: { failed: number } }; failures: { url: string }[]; comparison: object }>(
          'job.completed',
        );
        assert.equal(completed.job.id, job.id);
        assert.equal(completed.job.runs.failed, 2);
        assert.equal(completed.failures.length, 2);
        assert.match(completed.failures[0]?.url ?? '', /^https:\/\/attest\.example\.test\/runs\//);
        assert.ok('newFailures' in completed.comparison);
        const importData = data<{ import: { id: string; cases: number } }>('import.completed');
        assert.equal(importData.import.id, String(imported.id));
        assert.equal(importData.import.cases, 2);
        assert.equal(data<{ test: { id: string } }>('quarantine.expired').test.id, first.testId);
        await manager.client.call(v1.webhooks.deleteWebhook, { params: { projectId, webhookId: hook.id } });
      });

      test('a receiver answering 500 twice gets the event on the third attempt, with the same webhook-id; the log shows all three', async () => {
        const hook = await createHook(manager, projectId, { url: receiver.url });
        receiver.secret = hook.secret;
        receiver.answers.push({ status: 500 }, { status: 500 });
        const from = receiver.received.length;
        await manager.client.call(v1.webhooks.testWebhook, { params: { projectId, webhookId: hook.id } });
        let delivery = await attemptsReach(manager, projectId, hook.id, 1);
        assert.equal(delivery.status, 'pending');
        assert.equal(delivery.event, 'webhook.test');
        const wait1 = Date.parse(String(delivery.nextAttemptAt)) - server.clock().getTime();
        assert.ok(wait1 >= 4_500 && wait1 <= 5_500, `the first retry about 5 s later (${wait1} ms)`);
        server.clock.advance(wait1);
        await dispatch(server);
        delivery = await attemptsReach(manager, projectId, hook.id, 2);
        const wait2 = Date.parse(String(delivery.nextAttemptAt)) - server.clock().getTime();
        assert.ok(wait2 >= 27_000 && wait2 <= 33_000, `the second about 30 s later (${wait2} ms)`);
        server.clock.advance(wait2);
        await dispatch(server);
        delivery = await attemptsReach(manager, projectId, hook.id, 3);
        assert.equal(delivery.status, 'delivered');
        assert.deepEqual(
          delivery.attempts.map((a) => [a.attempt, a.status]),
          [
            [1, 500],
            [2, 500],
            [3, 204],
          ],
        );
        assert.equal(delivery.attempts[0]?.response, 'receiver says no');
        const got = receiver.received.slice(from);
        assert.equal(got.length, 3);
        assert.deepEqual(new Set(got.map((r) => r.headers['webhook-id'])), new Set([delivery.messageId]));
        for (const r of got) assert.equal(r.verifyError, undefined);
        // Redelivered by hand: once more, with the same id and body.
        await manager.client.call(v1.webhooks.redeliverWebhookDelivery, {
          params: { projectId, webhookId: hook.id, deliveryId: delivery.id },
        });
        await attemptsReach(manager, projectId, hook.id, 4);
        assert.equal(receiver.received.at(-1)?.headers['webhook-id'], delivery.messageId);
        assert.equal(receiver.received.at(-1)?.body, got[0]?.body);
        await manager.client.call(v1.webhooks.deleteWebhook, { params: { projectId, webhookId: hook.id } });
      });

      test('429 with Retry-After waits as long as the receiver asks', async () => {
        const hook = await createHook(manager, projectId, { url: receiver.url });
        receiver.answers.push({ status: 429, headers: { 'retry-after': '120' } });
        await manager.client.call(v1.webhooks.testWebhook, { params: { projectId, webhookId: hook.id } });
        const delivery = await attemptsReach(manager, projectId, hook.id, 1);
        assert.equal(delivery.status, 'pending');
        assert.ok(Date.parse(String(delivery.nextAttemptAt)) - server.clock().getTime() >= 120_000);
        await manager.client.call(v1.webhooks.deleteWebhook, { params: { projectId, webhookId: hook.id } });
      });

      test('a receiver down for the whole retry window: 11 attempts over about a day, then the webhook is disabled with an audit entry', async () => {
        const hook = await createHook(manager, projectId, { url: `http://127.0.0.1:${await closedPort()}/down` });
        const started = server.clock().getTime();
        await manager.client.call(v1.webhooks.testWebhook, { params: { projectId, webhookId: hook.id } });
        let delivery = await attemptsReach(manager, projectId, hook.id, 1);
        for (let attempt = 2; delivery.nextAttemptAt !== null; attempt++) {
          assert.ok(attempt <= 11, 'at most 11 attempts');
          server.clock.advance(Date.parse(delivery.nextAttemptAt) - server.clock().getTime());
          await dispatch(server);
          delivery = await attemptsReach(manager, projectId, hook.id, attempt);
        }
        assert.equal(delivery.attempts.length, 11);
        assert.equal(delivery.status, 'failed');
        for (const a of delivery.attempts) assert.match(String(a.error), /^connection: /);
        const hours = (server.clock().getTime() - started) / 3_600_000;
        assert.ok(hours > 20 && hours < 30, `about a day of retries (${hours.toFixed(1)} h)`);
        const read = await manager.client.call(v1.webhooks.getWebhook, { params: { projectId, webhookId: hook.id } });
        assert.equal(read.enabled, false);
        assert.match(String(read.disabledReason), /every delivery failed/);
        const audit = await server.admin.client.call(v1.users.listAuditLog, { query: { action: 'webhook.disable', targetId: hook.id } });
        assert.equal(audit.items.length, 1);
        assert.equal(audit.items[0]?.actorUserId, null);
        // Disabled: the test button refuses, and switching it on again clears the reason.
        await assert.rejects(
          manager.client.call(v1.webhooks.testWebhook, { params: { projectId, webhookId: hook.id } }),
          rejectsWith(409, 'STATE_CONFLICT'),
        );
        const again = await manager.client.call(v1.webhooks.updateWebhook, {
          params: { projectId, webhookId: hook.id },
          body: { enabled: true },
        });
        assert.equal(again.disabledReason, null);
        await manager.client.call(v1.webhooks.deleteWebhook, { params: { projectId, webhookId: hook.id } });
      });

      test('one delivery shows what each attempt sent and got back: URL, headers with the signature masked, the body the receiver got, the answer (HOOK-11)', async () => {
        const hook = await createHook(manager, projectId, { url: receiver.url.replace('http://', 'http://bot:hunter2@') });
        receiver.secret = hook.secret;
        receiver.answers.push({ status: 500, headers: { 'x-receiver-trace': 'trace-1' } });
        const from = receiver.received.length;
        await manager.client.call(v1.webhooks.testWebhook, { params: { projectId, webhookId: hook.id } });
        const queued = await attemptsReach(manager, projectId, hook.id, 1);
        server.clock.advance(6_000);
        await dispatch(server);
        await attemptsReach(manager, projectId, hook.id, 2);
        const params = { projectId, webhookId: hook.id, deliveryId: queued.id };
        const details = await manager.client.call(v1.webhooks.getWebhookDelivery, { params });
        assert.equal(details.messageId, queued.messageId);
        assert.equal(details.status, 'delivered');
        assert.equal(details.attempts.length, 2);
        const got = receiver.received.slice(from);
        for (const [index, attempt] of details.attempts.entries()) {
          const sent = got[index];
          assert.ok(attempt.request && sent, `attempt ${attempt.attempt} kept its request`);
          assert.equal(attempt.request.url, receiver.url.replace('http://', 'http://bot:***@'), 'the password masked');
          assert.equal(attempt.request.body, sent.body, 'the body as the receiver got it');
          assert.equal(attempt.request.headers['webhook-signature'], 'v1,<masked>');
          assert.match(String(sent.headers['webhook-signature']), /^v1,[A-Za-z0-9+/=]{44}$/, 'the receiver got the real one');
          for (const name of ['webhook-id', 'webhook-timestamp', 'content-type', 'content-length', 'user-agent'])
            assert.equal(attempt.request.headers[name], sent.headers[name], name);
        }
        const [failed, delivered] = details.attempts;
        assert.equal(failed?.status, 500);
        assert.equal(failed?.response, 'receiver says no');
        assert.equal(failed?.responseHeaders?.['x-receiver-trace'], 'trace-1');
        assert.equal(delivered?.status, 204);
        assert.ok(delivered?.responseHeaders && 'date' in delivered.responseHeaders);
        // The log stays light: it has no requests.
        const [listed] = (await log(manager, projectId, hook.id)).items;
        assert.equal(listed?.id, queued.id);
        assert.equal('request' in (listed?.attempts[0] ?? {}), false);
        // Nobody stores the real signature.
        const stored = await server.app.attest.db.selectFrom('webhook_attempts').select('request_headers').execute();
        assert.ok(stored.every((row) => !row.request_headers?.includes(String(got[0]?.headers['webhook-signature']))));
        await assert.rejects(tester.client.call(v1.webhooks.getWebhookDelivery, { params }), rejectsWith(403, 'FORBIDDEN'));
        const other = await createHook(manager, projectId, { url: receiver.url, enabled: false });
        await assert.rejects(
          manager.client.call(v1.webhooks.getWebhookDelivery, { params: { ...params, webhookId: other.id } }),
          rejectsWith(404, 'NOT_FOUND'),
          "another webhook's path does not reach it",
        );
        // A Slack webhook's attempt keeps the message it sent, not the event.
        const slack = await createHook(manager, projectId, { url: `${receiver.url}?slack`, kind: 'slack' });
        const slackFrom = receiver.received.length;
        await manager.client.call(v1.webhooks.testWebhook, { params: { projectId, webhookId: slack.id } });
        const slackQueued = await attemptsReach(manager, projectId, slack.id, 1);
        const slackDetails = await manager.client.call(v1.webhooks.getWebhookDelivery, {
          params: { projectId, webhookId: slack.id, deliveryId: slackQueued.id },
        });
        const message = slackDetails.attempts[0]?.request?.body ?? '';
        assert.equal(message, receiver.received[slackFrom]?.body);
        assert.ok('blocks' in JSON.parse(message), message);
        for (const id of [hook.id, other.id, slack.id])
          await manager.client.call(v1.webhooks.deleteWebhook, { params: { projectId, webhookId: id } });
      });

      test('Slack and Teams webhooks get a formatted message: verdict, counts, failures linked to their run pages', async () => {
        const slack = await createHook(manager, projectId, { url: `${receiver.url}?slack`, kind: 'slack', events: ['job.completed'] });
        const teams = await createHook(manager, projectId, { url: `${receiver.url}?teams`, kind: 'teams', events: ['job.completed'] });
        const from = receiver.received.length;
        const job = await tester.client.call(v1.jobs.createJob, { body: { projectId, testIds: [], name: 'release' } });
        const run = await tester.client.call(v1.runs.createRun, {
          body: { projectId, jobId: job.id, name: 'pay <now>', verdict: 'broken' },
        });
        await tester.client.call(v1.jobs.completeJob, { params: { jobId: job.id } });
        // The project's other hooks get this job's run events too, in any order: only the two sent
        // to the Slack and Teams addresses are theirs.
        const chat = () => receiver.received.slice(from).filter((r) => /\?(slack|teams)$/.test(r.path));
        await waitFor(() => chat().length >= 2, { message: 'a Slack and a Teams message' });
        const bodies = chat().map((r) => JSON.parse(r.body));
        const slackBody = bodies.find((b) => 'blocks' in b);
        assert.ok(slackBody, JSON.stringify(bodies));
        const teamsBody = bodies.find((b) => 'attachments' in b);
        assert.match(slackBody.text, /job "release" failed/);
        const slackText = JSON.stringify(slackBody.blocks);
        // Tests, retries folded (HOOK-13).
        assert.match(slackText, /1 test: 0 passed, 0 failed, 1 broken, 0 skipped/);
        assert.ok(slackText.includes(`<https://attest.example.test/runs/${run.id}|pay &lt;now&gt;: broken>`), slackText);
        const card = teamsBody.attachments[0];
        assert.equal(card.contentType, 'application/vnd.microsoft.card.adaptive');
        assert.equal(card.content.type, 'AdaptiveCard');
        assert.ok(JSON.stringify(card.content).includes(`https://attest.example.test/runs/${run.id}`));
        for (const hook of [slack, teams])
          await manager.client.call(v1.webhooks.deleteWebhook, { params: { projectId, webhookId: hook.id } });
      });
    });
  });
}
