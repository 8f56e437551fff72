import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { v1 } from '../../src/client/index.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createProject, createUser, type TestUser } from '../helpers/factories.ts';
import { firstPointer, isProblem } from '../helpers/problems.ts';
import { createOneStepTest } from '../helpers/records.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';

// The quarantine lifecycle (TRIAGE-13, docs/triage.md): a fix attempt verified by the next runs
// on its branch, the manual disabled, automatic quarantine of flaky tests; every transition in the
// audit log and delivered to a receiver that verifies it with the `standardwebhooks` package.

const LIFECYCLE_EVENTS = ['test.quarantined', 'test.fix_pending', 'test.fixed', 'test.unquarantined', 'test.disabled', 'test.enabled'];

interface LifecycleEvent {
  type: string;
  data: {
    test: { id: string };
    state: string;
    previousState: string;
    run: { id: string } | null;
    fixAttempt: { outcome: string; passes: number; failedRunId: string | null } | null;
    quarantine: { owner: string; automatic: boolean } | null;
  };
}

for (const dialect of DIALECTS) {
  describe(`[${dialect}] the quarantine lifecycle`, () => {
    let server: TestServer;
    let receiver: WebhookReceiver;
    let projectId = '';
    let manager: TestUser;
    let tester: TestUser;
    let viewer: TestUser;
    before(async () => {
      server = await startTestServer(dialect, { ATTEST_WEBHOOK_ALLOW_PRIVATE: 'true' });
      receiver = await startWebhookReceiver();
      projectId = (await createProject(server, 'Lifecycle')).id;
      manager = await createUser(server, ['manager'], { projects: [projectId] });
      tester = await createUser(server, ['tester'], { projects: [projectId] });
      viewer = await createUser(server, ['viewer'], { projects: [projectId] });
      const hook = await manager.client.call(v1.webhooks.createWebhook, {
        params: { projectId },
        body: { name: 'lifecycle', url: receiver.url, events: LIFECYCLE_EVENTS as never },
      });
      receiver.secret = hook.secret;
    });
    after(async () => {
      await receiver.close();
      await server.close();
    });

    const newTest = (project = projectId) => createOneStepTest(server.admin.client, project);
    /** A completed run of the test, a second after the one before. */
    const record = async (
      testId: string,
      verdict: 'passed' | 'failed' | 'skipped',
      branch: string | undefined,
      options: { jobId?: string; project?: string; commit?: string } = {},
    ) => {
      server.clock.advance(1000);
      return tester.client.call(v1.runs.createRun, {
        body: {
          projectId: options.project ?? projectId,
          name: 'run',
          testId,
          verdict,
          ...(branch ? { branch } : {}),
          ...(options.jobId ? { jobId: options.jobId } : {}),
          ...(options.commit ? { commit: options.commit } : {}),
        },
      });
    };
    const quarantine = (testId: string) =>
      tester.client.call(v1.tests.quarantineTest, { params: { testId }, body: { owner: 'qa@example.com', reason: 'Flaky on CI' } });
    const lifecycleOf = async (testId: string) => (await viewer.client.call(v1.tests.getTest, { params: { testId } })).health;
    const fixAttempt = (testId: string, body: { commit?: string; note?: string; branch?: string } = {}, user = tester) =>
      user.client.call(v1.lifecycle.startFixAttempt, { params: { testId }, body });
    const auditOf = async (action: string, testId: string) =>
      (await server.admin.client.call(v1.users.listAuditLog, { query: { action, targetId: testId } })).items;
    /** The verified lifecycle events of this test, once `types` all arrived, in the order sent. */
    const eventsOf = (testId: string, types: string[]) =>
      waitFor(
        () => {
          const events = receiver.received
            .map((received) => received.verified as LifecycleEvent | undefined)
            .filter((event): event is LifecycleEvent => event?.data?.test?.id === testId);
          const got = events.map((event) => event.type);
          return types.every((type) => got.includes(type)) ? events : undefined;
        },
        { message: `${types.join(', ')} delivered for ${testId}` },
      );

    test('a fix attempt followed by 20 passes on its branch ends fixed with its quarantine released; audited and delivered', async () => {
      const testId = await newTest();
      // The project's default branch is, for now, the branch most of its jobs ran on: main (two jobs) over feature (one).
      for (const branch of ['main', 'main', 'feature']) {
        const job = await tester.client.call(v1.jobs.createJob, { body: { projectId, testIds: [], branch, name: 'ci' } });
        await record(testId, 'passed', branch, { jobId: job.id });
      }
      await quarantine(testId);
      assert.equal((await lifecycleOf(testId)).lifecycle.state, 'quarantined');

      const started = await fixAttempt(testId, { commit: 'a1b2c3d', note: 'Waits for the dialog' });
      assert.equal(started.state, 'fix-pending');
      assert.equal(started.fixAttempt?.branch, 'main');
      assert.equal(started.fixAttempt?.commit, 'a1b2c3d');
      assert.equal(started.fixAttempt?.required, 20);
      assert.equal(started.fixAttempt?.outcome, 'pending');
      const listed = await viewer.client.call(v1.tests.listQuarantines, { params: { projectId } });
      assert.equal(listed.items.find((entry) => entry.testId === testId)?.state, 'fix-pending', 'still quarantined while verified');

      // Runs of another branch, and skipped runs, do not count.
      await record(testId, 'failed', 'feature');
      await record(testId, 'skipped', 'main');
      for (let i = 0; i < 19; i++) await record(testId, 'passed', 'main');
      let health = await lifecycleOf(testId);
      assert.equal(health.lifecycle.state, 'fix-pending');
      assert.equal(health.lifecycle.fixAttempt?.passes, 19);
      assert.notEqual(health.quarantine, null);

      const last = await record(testId, 'passed', 'main');
      health = await lifecycleOf(testId);
      assert.equal(health.lifecycle.state, 'fixed');
      assert.equal(health.lifecycle.fixAttempt?.outcome, 'fixed');
      assert.equal(health.lifecycle.fixAttempt?.passes, 20);
      assert.equal(health.quarantine, null, 'the quarantine is released');
      const stillListed = await viewer.client.call(v1.tests.listQuarantines, { params: { projectId } });
      assert.ok(!stillListed.items.some((entry) => entry.testId === testId));

      assert.equal((await auditOf('test.fix-attempt', testId))[0]?.details.commit, 'a1b2c3d');
      const fixed = await auditOf('test.fixed', testId);
      assert.equal(fixed.length, 1);
      assert.equal(fixed[0]?.details.runId, last.id);

      const events = await eventsOf(testId, ['test.quarantined', 'test.fix_pending', 'test.fixed']);
      assert.deepEqual(
        events.map((event) => [event.type, event.data.previousState, event.data.state]),
        [
          ['test.quarantined', 'active', 'quarantined'],
          ['test.fix_pending', 'quarantined', 'fix-pending'],
          ['test.fixed', 'fix-pending', 'fixed'],
        ],
      );
      assert.equal(events[2]?.data.run?.id, last.id);
      assert.equal(events[2]?.data.fixAttempt?.passes, 20);
    });

    test('with one failure among the 20 runs it returns to quarantined, naming the failing run; audited and delivered', async () => {
      const testId = await newTest();
      await quarantine(testId);
      const started = await fixAttempt(testId, { branch: 'release' });
      assert.equal(started.fixAttempt?.branch, 'release');
      for (let i = 0; i < 5; i++) await record(testId, 'passed', 'release');
      const failing = await record(testId, 'failed', 'release');
      for (let i = 0; i < 14; i++) await record(testId, 'passed', 'release');

      const health = await lifecycleOf(testId);
      assert.equal(health.lifecycle.state, 'quarantined');
      assert.equal(health.lifecycle.fixAttempt?.outcome, 'failed');
      assert.equal(health.lifecycle.fixAttempt?.failedRunId, failing.id);
      assert.equal(health.lifecycle.fixAttempt?.passes, 5, 'the passes after the failure count for nothing');
      assert.equal(health.quarantine?.owner, 'qa@example.com', 'the quarantine stays');

      const failed = await auditOf('test.fix-failed', testId);
      assert.equal(failed.length, 1);
      assert.equal(failed[0]?.details.runId, failing.id);
      const events = await eventsOf(testId, ['test.fix_pending']);
      const back = await waitFor(() => events.find((event) => event.type === 'test.quarantined' && event.data.run !== null), {
        message: 'test.quarantined naming the run',
      });
      assert.equal(back.data.run?.id, failing.id);
      assert.equal(back.data.previousState, 'fix-pending');
      assert.equal(back.data.fixAttempt?.failedRunId, failing.id);

      // A second attempt may start from there.
      assert.equal((await fixAttempt(testId, { branch: 'release' })).fixAttempt?.passes, 0);
    });

    test('a fix attempt needs a quarantined test (409 otherwise, nothing changed), a tester (403) and a valid body (400)', async () => {
      const testId = await newTest();
      await assert.rejects(fixAttempt(testId), isProblem(409, 'STATE_CONFLICT'));
      assert.equal((await lifecycleOf(testId)).lifecycle.state, 'active');
      assert.equal((await auditOf('test.fix-attempt', testId)).length, 0);
      await quarantine(testId);
      await assert.rejects(fixAttempt(testId, {}, viewer), isProblem(403, 'FORBIDDEN'));
      for (const [body, pointer] of [
        [{ surprise: 1 }, '/body'],
        [{ note: '' }, '/body/note'],
      ] as const) {
        await assert.rejects(fixAttempt(testId, body as never), (error: never) => {
          assert.equal(isProblem(400, 'INVALID_INPUT')(error), true);
          assert.ok((firstPointer(error) ?? '').startsWith(pointer));
          return true;
        });
      }
      assert.equal((await lifecycleOf(testId)).lifecycle.state, 'quarantined');
      await fixAttempt(testId);
      await assert.rejects(fixAttempt(testId), isProblem(409, 'STATE_CONFLICT'), 'already pending');
      const other = await createProject(server, 'Elsewhere');
      const foreign = await newTest(other.id);
      await assert.rejects(fixAttempt(foreign), isProblem(404, 'NOT_FOUND'));
    });

    test('disable ends a pending attempt and keeps the quarantine; enable returns to quarantined; each audited and delivered', async () => {
      const testId = await newTest();
      await quarantine(testId);
      await fixAttempt(testId, { branch: 'main' });
      const disabled = await tester.client.call(v1.lifecycle.disableTest, {
        params: { testId },
        body: { reason: 'Rewritten this sprint' },
      });
      assert.equal(disabled.state, 'disabled');
      assert.equal(disabled.disabled?.reason, 'Rewritten this sprint');
      assert.equal(disabled.fixAttempt?.outcome, 'cancelled');
      await assert.rejects(
        tester.client.call(v1.lifecycle.disableTest, { params: { testId }, body: { reason: 'again' } }),
        isProblem(409, 'STATE_CONFLICT'),
      );
      // Runs of a disabled test verify nothing.
      await record(testId, 'passed', 'main');
      assert.equal((await lifecycleOf(testId)).lifecycle.fixAttempt?.passes, 0);

      const enabled = await tester.client.call(v1.lifecycle.enableTest, { params: { testId } });
      assert.equal(enabled.state, 'quarantined');
      assert.equal(enabled.disabled, null);
      await assert.rejects(tester.client.call(v1.lifecycle.enableTest, { params: { testId } }), isProblem(409, 'STATE_CONFLICT'));
      assert.equal((await auditOf('test.disable', testId)).length, 1);
      assert.equal((await auditOf('test.enable', testId)).length, 1);

      await tester.client.call(v1.tests.releaseTest, { params: { testId } });
      assert.equal((await lifecycleOf(testId)).lifecycle.state, 'active');
      const events = await eventsOf(testId, ['test.disabled', 'test.enabled', 'test.unquarantined']);
      assert.deepEqual(
        events.filter((event) => event.type !== 'test.quarantined' && event.type !== 'test.fix_pending').map((e) => [e.type, e.data.state]),
        [
          ['test.disabled', 'disabled'],
          ['test.enabled', 'quarantined'],
          ['test.unquarantined', 'active'],
        ],
      );
    });

    test('autoQuarantine (off by default) quarantines a test whose health is flaky when it fails, never a broken one', async () => {
      const project = (await createProject(server, 'Auto')).id;
      await server.admin.client.call(v1.projects.addMember, { params: { projectId: project, email: tester.email } });
      await server.admin.client.call(v1.projects.addMember, { params: { projectId: project, email: viewer.email } });
      const off = await newTest(project);
      // One commit passed and failed: the retry monitor calls it flaky (TRIAGE-11).
      for (const verdict of ['passed', 'failed'] as const) await record(off, verdict, 'main', { project, commit: 'c1' });
      let health = await lifecycleOf(off);
      assert.equal(health.state, 'flaky');
      assert.equal(health.quarantine, null, 'off by default');

      const settings = await server.admin.client.call(v1.projects.updateProject, {
        params: { projectId: project },
        body: { triage: { autoQuarantine: true, fixPasses: 3 } },
      });
      assert.equal(settings.triage.autoQuarantine, true);
      const flaky = await newTest(project);
      await record(flaky, 'passed', 'main', { project, commit: 'c2' });
      const failure = await record(flaky, 'failed', 'main', { project, commit: 'c2' });
      health = await lifecycleOf(flaky);
      assert.equal(health.state, 'flaky');
      assert.equal(health.lifecycle.state, 'quarantined');
      assert.equal(health.quarantine?.owner, 'attest');
      const audit = await auditOf('test.quarantine', flaky);
      assert.equal(audit[0]?.details.automatic, true);
      assert.equal(audit[0]?.actorUserId, null);
      assert.ok(failure.id);

      const broken = await newTest(project);
      for (let i = 0; i < 7; i++) await record(broken, 'failed', 'main', { project });
      health = await lifecycleOf(broken);
      assert.equal(health.state, 'broken');
      assert.equal(health.quarantine, null, 'a broken test is never quarantined automatically');
      assert.equal(health.lifecycle.state, 'active');

      // The project's fixPasses: three passes verify the automatic quarantine's fix.
      assert.equal((await fixAttempt(flaky, { branch: 'main' })).fixAttempt?.required, 3);
      for (let i = 0; i < 3; i++) await record(flaky, 'passed', 'main', { project });
      assert.equal((await lifecycleOf(flaky)).lifecycle.state, 'fixed');
      await assert.rejects(
        server.admin.client.call(v1.projects.updateProject, { params: { projectId: project }, body: { triage: { fixPasses: 0 } } }),
        isProblem(400, 'INVALID_INPUT'),
      );
    });
  });
}
