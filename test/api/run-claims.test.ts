import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { BodyOf } from '../../src/api/endpoint.ts';
import { LEASE_SECONDS_DEFAULT } from '../../src/api/v1/runs.ts';
import { type ApiError, v1 } from '../../src/client/index.ts';
import { requeueExpiredRuns } from '../../src/server/services/records/run-claims.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createProject, createUser, type TestUser, unique } from '../helpers/factories.ts';
import { firstPointer } from '../helpers/problems.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

// SCALE-6: runners claim queued runs under a lease. A claim hands the oldest matching queued run
// to one caller (204 when none), a heartbeat extends the holder's lease, and an expired lease
// returns the run to the queue. Each test works in a project of its own and names it in its
// claims, so the queued runs of one test never reach another's claims.

const seconds = (n: number) => n * 1000;

for (const dialect of DIALECTS) {
  describe(`[${dialect}] runner claims`, () => {
    let server: TestServer;
    let tester: TestUser;
    let viewer: TestUser;
    let outsider: TestUser;

    before(async () => {
      server = await startTestServer(dialect);
      tester = await createUser(server, ['tester']);
      viewer = await createUser(server, ['viewer']);
      outsider = await createUser(server, ['tester'], { projects: [(await createProject(server, 'elsewhere')).id] });
    });
    after(() => server.close());

    /** A project of the test's own, with the tester and viewer as members and `tests` tests. */
    async function freshProject(tests = 1): Promise<{ projectId: string; testIds: string[] }> {
      const projectId = (await createProject(server, 'claims')).id;
      for (const { email } of [tester, viewer]) await server.admin.client.call(v1.projects.addMember, { params: { projectId, email } });
      const testIds: string[] = [];
      for (let i = 0; i < tests; i++) {
        const created = await tester.client.call(v1.tests.createTest, {
          body: { projectId, name: unique('test-'), steps: [{ action: 'open', expected: 'shown' }] },
        });
        testIds.push(created.id);
      }
      return { projectId, testIds };
    }

    const registerDevice = async (labels: string[]) => {
      const id = unique('dev-');
      await server.admin.client.call(v1.devices.registerDevice, { body: { id, name: id, platform: 'android', labels } });
      return id;
    };
    /** Queued runs of the project's tests, one per test and device (one per test without devices). */
    const queue = (body: Partial<BodyOf<typeof v1.jobs.createJob>> & { projectId: string; testIds: string[] }) =>
      tester.client.call(v1.jobs.createJob, { body });
    const runsOfJob = async (jobId: string) => (await tester.client.call(v1.runs.listRuns, { query: { jobId, limit: 200 } })).items;
    const claim = (projectId: string, body: Partial<BodyOf<typeof v1.runs.claimRun>> = {}, client = tester.client) =>
      client.claimRun({ runner: 'runner-1', projectId, ...body });
    const getRun = (testRunId: string) => tester.client.call(v1.runs.getRun, { params: { testRunId } });
    const rejects = async (call: Promise<unknown>, status: number, code?: string) =>
      assert.rejects(call, (e: ApiError) => {
        assert.equal(e.status, status, JSON.stringify(e.problem));
        if (code) assert.equal(e.code, code);
        return true;
      });
    const isoIn = (ms: number) => new Date(server.clock.now.getTime() + ms).toISOString();

    describe('POST /testmgmt/testruns/claim', () => {
      test("hands the oldest queued run to the caller, running under the runner's lease; 204 once none is left", async () => {
        const { projectId, testIds } = await freshProject(2);
        const older = await queue({ projectId, testIds: [testIds[0] as string] });
        server.clock.advance(seconds(1));
        const newer = await queue({ projectId, testIds: [testIds[1] as string] });
        const [first] = await runsOfJob(older.id);
        const [second] = await runsOfJob(newer.id);

        const claimed = await claim(projectId, { runner: 'lab-2 runner' });
        assert.ok(claimed);
        assert.equal(claimed.id, first?.id, 'the oldest first');
        assert.equal(claimed.status, 'running');
        assert.equal(claimed.runner, 'lab-2 runner');
        assert.equal(claimed.startedAt, server.clock.now.toISOString());
        assert.equal(claimed.leaseExpiresAt, isoIn(seconds(LEASE_SECONDS_DEFAULT)));
        assert.deepEqual(await getRun(claimed.id), claimed, 'the run as GET answers it');
        const job = await tester.client.call(v1.jobs.getJob, { params: { jobId: older.id } });
        assert.equal(job.status, 'running');
        assert.equal(job.progress.running, 1);

        const next = await claim(projectId, { leaseSeconds: 60 });
        assert.equal(next?.id, second?.id);
        assert.equal(next?.leaseExpiresAt, isoIn(seconds(60)));
        assert.equal(await claim(projectId), undefined, '204: nothing left');
        const raw = await fetch(`${server.url}/api/v1/testmgmt/testruns/claim`, {
          method: 'POST',
          headers: { 'service.api-token': tester.key, 'content-type': 'application/json', accept: 'application/json' },
          body: JSON.stringify({ runner: 'runner-1', projectId }),
        });
        assert.equal(raw.status, 204);
        assert.equal(await raw.text(), '');
      });

      test('matches a device named in deviceIds, or carrying every one of deviceLabels; a run without a device matches any claim', async () => {
        const { projectId, testIds } = await freshProject();
        const phone = await registerDevice(['android', 'phone']);
        const tablet = await registerDevice(['android', 'tablet']);
        const elsewhere = await registerDevice(['android', 'phone', 'lab-9']);
        const onDevices = await queue({ projectId, testIds, deviceIds: [phone, tablet] });
        const byDevice = new Map((await runsOfJob(onDevices.id)).map((run) => [run.deviceId, run.id]));

        assert.equal(await claim(projectId, { deviceLabels: ['phone', 'tablet'] }), undefined, 'no device carries both');
        assert.equal(await claim(projectId, { deviceIds: [elsewhere], deviceLabels: ['lab-9'] }), undefined, 'no run on these');
        assert.equal(await claim(projectId), undefined, 'a runner that names no device gets only runs without one');
        const byLabels = await claim(projectId, { deviceLabels: ['android', 'phone'] });
        assert.equal(byLabels?.id, byDevice.get(phone));

        server.clock.advance(seconds(1));
        const anywhere = await queue({ projectId, testIds });
        const [deviceless] = await runsOfJob(anywhere.id);
        // The tablet's run is older, but this runner serves another device: it gets the run without one.
        const other = await claim(projectId, { deviceIds: [elsewhere] });
        assert.equal(other?.id, deviceless?.id);
        assert.equal(other?.deviceId, null);
        const byId = await claim(projectId, { deviceIds: [phone, tablet] });
        assert.equal(byId?.id, byDevice.get(tablet));
        assert.equal(byId?.deviceId, tablet);
      });

      test('never hands out a run of a project the caller cannot see; naming such a project, or one that does not exist, is a 404', async () => {
        const { projectId, testIds } = await freshProject();
        const job = await queue({ projectId, testIds });
        assert.equal(await claim(projectId, {}, outsider.client).catch((e: ApiError) => e.status), 404);
        assert.equal(await claim(randomUUID()).catch((e: ApiError) => e.status), 404);
        assert.equal(await outsider.client.claimRun({ runner: 'outsider' }), undefined, "the outsider's own projects have nothing queued");
        const [run] = await runsOfJob(job.id);
        assert.equal(run?.status, 'queued');
        const claimed = await tester.client.claimRun({ runner: 'runner-1' });
        assert.equal(claimed?.projectId, projectId, "without projectId: from any of the caller's projects");
      });

      test('needs a tester with a key that may write: a viewer and a read-only key get 403 and the run stays queued', async () => {
        const { projectId, testIds } = await freshProject();
        const job = await queue({ projectId, testIds });
        await rejects(claim(projectId, {}, viewer.client), 403, 'FORBIDDEN');
        const readOnly = await server.admin.client.call(v1.users.createApiKey, {
          params: { email: tester.email },
          body: { name: 'read only', scope: 'read' },
        });
        await rejects(claim(projectId, {}, server.client(readOnly.key)), 403, 'FORBIDDEN');
        await rejects(claim(projectId, {}, server.client()), 401, 'UNAUTHENTICATED');
        assert.equal((await runsOfJob(job.id))[0]?.status, 'queued');
      });

      test('a runner name and a lease out of bounds are 400s naming the field', async () => {
        const { projectId } = await freshProject();
        const pointer = (body: Record<string, unknown>) =>
          claim(projectId, body as never).then(
            () => 'accepted',
            (e: ApiError) => `${e.status} ${firstPointer(e)}`,
          );
        assert.equal(await pointer({ runner: '' }), '400 /body/runner');
        assert.equal(await pointer({ runner: 'tab\there' }), '400 /body/runner');
        assert.equal(await pointer({ runner: 'r'.repeat(129) }), '400 /body/runner');
        assert.equal(await pointer({ leaseSeconds: 4 }), '400 /body/leaseSeconds');
        assert.equal(await pointer({ leaseSeconds: 3601 }), '400 /body/leaseSeconds');
        assert.equal(await pointer({ deviceLabels: ['two words'] }), '400 /body/deviceLabels/0');
      });
    });

    describe('lease expiry', () => {
      test('an expired lease returns the run to the queue, the job counts it queued again, and another runner claims it', async () => {
        const { projectId, testIds } = await freshProject();
        const job = await queue({ projectId, testIds });
        const claimed = await claim(projectId, { runner: 'gone', leaseSeconds: 30 });
        assert.ok(claimed);
        // The sweep covers every project: other tests' expired leases may go back with this one.
        server.clock.advance(seconds(30) - 1);
        await requeueExpiredRuns(server.app.attest);
        assert.equal((await getRun(claimed.id)).status, 'running', 'still leased a millisecond before it ends');
        server.clock.advance(1);
        assert.ok((await requeueExpiredRuns(server.app.attest)) >= 1);

        const requeued = await getRun(claimed.id);
        assert.equal(requeued.status, 'queued');
        assert.equal(requeued.runner, null);
        assert.equal(requeued.leaseExpiresAt, null);
        assert.equal(requeued.startedAt, null);
        const progress = await tester.client.call(v1.jobs.getJob, { params: { jobId: job.id } });
        assert.equal(progress.status, 'queued');
        assert.equal(progress.progress.queued, 1);
        assert.equal(progress.progress.running, 0);

        const again = await claim(projectId, { runner: 'next' });
        assert.equal(again?.id, claimed.id);
        assert.equal(again?.runner, 'next');
      });

      test("a cancelled job's running run is aborted when its lease expires, and never claimed again", async () => {
        const { projectId, testIds } = await freshProject(2);
        const job = await queue({ projectId, testIds });
        const claimed = await claim(projectId, { runner: 'gone', leaseSeconds: 10 });
        assert.ok(claimed);
        await tester.client.call(v1.jobs.cancelJob, { params: { jobId: job.id } });
        assert.equal((await getRun(claimed.id)).status, 'running', 'a running run goes on while its runner holds it');
        server.clock.advance(seconds(10));
        await requeueExpiredRuns(server.app.attest);
        const ended = await getRun(claimed.id);
        assert.equal(ended.status, 'aborted');
        assert.equal(ended.runner, null);
        assert.equal(ended.leaseExpiresAt, null);
        assert.ok(ended.finishedAt);
        assert.equal(await claim(projectId, { runner: 'next' }), undefined, 'nothing of the cancelled job to claim');

        // A sweep that had not seen the cancel yet put the run back in the queue: no claim takes it.
        await server.app.attest.db
          .updateTable('test_runs')
          .set({ status: 'queued', started_at: null, finished_at: null })
          .where('id', '=', claimed.id)
          .execute();
        assert.equal(await claim(projectId, { runner: 'next' }), undefined, 'a queued run of a cancelled job is not handed out');
      });

      test('a claim returns expired runs to the queue itself before it picks', async () => {
        const { projectId, testIds } = await freshProject();
        await queue({ projectId, testIds });
        const claimed = await claim(projectId, { runner: 'gone', leaseSeconds: 10 });
        assert.equal(await claim(projectId, { runner: 'next' }), undefined, 'leased: nothing to claim');
        server.clock.advance(seconds(10));
        const again = await claim(projectId, { runner: 'next' });
        assert.equal(again?.id, claimed?.id);
      });
    });

    describe('POST /testmgmt/testruns/{testRunId}/heartbeat', () => {
      test("extends the holder's lease from now; completing the run ends it, and a heartbeat then is a 409", async () => {
        const { projectId, testIds } = await freshProject();
        await queue({ projectId, testIds });
        const claimed = await claim(projectId, { leaseSeconds: 60 });
        assert.ok(claimed);
        server.clock.advance(seconds(50));
        const beat = await tester.client.heartbeatRun(claimed.id, { runner: 'runner-1', leaseSeconds: 120 });
        assert.equal(beat.leaseExpiresAt, isoIn(seconds(120)));
        assert.equal(beat.status, 'running');
        server.clock.advance(seconds(100));
        await requeueExpiredRuns(server.app.attest);
        assert.equal((await getRun(claimed.id)).runner, 'runner-1', 'the heartbeat kept it');
        const defaulted = await tester.client.heartbeatRun(claimed.id, { runner: 'runner-1' });
        assert.equal(defaulted.leaseExpiresAt, isoIn(seconds(LEASE_SECONDS_DEFAULT)));

        const done = await tester.client.call(v1.runs.updateRun, {
          params: { testRunId: claimed.id },
          body: { status: 'completed', verdict: 'passed' },
        });
        assert.equal(done.runner, null);
        assert.equal(done.leaseExpiresAt, null);
        await rejects(tester.client.heartbeatRun(claimed.id, { runner: 'runner-1' }), 409, 'STATE_CONFLICT');
      });

      test("is a 409 for another runner's run, after expiry (requeued or not), and for a run never claimed", async () => {
        const { projectId, testIds } = await freshProject();
        await queue({ projectId, testIds });
        const claimed = await claim(projectId, { runner: 'first', leaseSeconds: 10 });
        assert.ok(claimed);
        await rejects(tester.client.heartbeatRun(claimed.id, { runner: 'second' }), 409, 'STATE_CONFLICT');
        server.clock.advance(seconds(10));
        const expired = await tester.client.heartbeatRun(claimed.id, { runner: 'first' }).catch((e: ApiError) => e);
        assert.equal((expired as ApiError).status, 409);
        assert.match(String((expired as ApiError).problem.detail), /lease expired/);

        const taken = await claim(projectId, { runner: 'second' });
        assert.equal(taken?.id, claimed.id);
        const lost = await tester.client.heartbeatRun(claimed.id, { runner: 'first' }).catch((e: ApiError) => e);
        assert.equal((lost as ApiError).status, 409);
        assert.match(String((lost as ApiError).problem.detail), /Another runner/);
        assert.equal((await tester.client.heartbeatRun(claimed.id, { runner: 'second' })).runner, 'second');

        const streamed = await tester.client.call(v1.runs.createRun, { body: { projectId, name: 'reporter run' } });
        await rejects(tester.client.heartbeatRun(streamed.id, { runner: 'first' }), 409, 'STATE_CONFLICT');
      });

      test('results from a runner that lost its lease are still accepted while the run runs: writes are authorised by key, not lease', async () => {
        const { projectId, testIds } = await freshProject();
        await queue({ projectId, testIds });
        const claimed = await claim(projectId, { runner: 'first', leaseSeconds: 10 });
        assert.ok(claimed);
        server.clock.advance(seconds(10));
        assert.equal((await claim(projectId, { runner: 'second' }))?.id, claimed.id);
        const posted = await tester.client.call(v1.results.appendResults, {
          params: { testRunId: claimed.id },
          body: { steps: [{ title: 'late step', status: 'passed' }] },
        });
        assert.equal(posted.steps.length, 1);
      });

      test("is a 404 for a run of a project the caller cannot see, and needs a tester's key", async () => {
        const { projectId, testIds } = await freshProject();
        await queue({ projectId, testIds });
        const claimed = await claim(projectId);
        assert.ok(claimed);
        await rejects(outsider.client.heartbeatRun(claimed.id, { runner: 'runner-1' }), 404, 'NOT_FOUND');
        await rejects(viewer.client.heartbeatRun(claimed.id, { runner: 'runner-1' }), 403, 'FORBIDDEN');
        await rejects(tester.client.heartbeatRun(randomUUID(), { runner: 'runner-1' }), 404, 'NOT_FOUND');
      });
    });
  });
}
