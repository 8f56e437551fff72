import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type ApiError, v1 } from '../../src/client/index.ts';
import { requeueExpiredRuns } from '../../src/server/services/records/run-claims.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createProject, createUser, type TestUser, unique } from '../helpers/factories.ts';
import { startPeerServer, startTestServer, type TestServer } from '../helpers/server.ts';

// SCALE-6: 20 concurrent claimers drain 500 queued runs, on PostgreSQL
// through two instances on one database (10 claimers each), on SQLite through its one instance:
// every run is claimed exactly once and none is left queued. A claimer that stops heartbeating
// loses its run to another claimer, while one that keeps beating keeps its own.

const RUNS = 500;
const TESTS = 25;
const DEVICES = RUNS / TESTS;
const CLAIMERS = 20;
const seconds = (n: number) => n * 1000;

for (const dialect of DIALECTS) {
  describe(`[${dialect}] ${CLAIMERS} runners claiming ${RUNS} queued runs${dialect === 'postgres' ? ' through two instances' : ''}`, () => {
    let first: TestServer;
    let second: TestServer;
    let tester: TestUser;
    let projectId: string;
    let testIds: string[];
    const label = unique('drain-');

    before(async () => {
      first = await startTestServer(dialect);
      second = dialect === 'postgres' ? await startPeerServer(first) : first;
      // Each instance compares leases with its own clock: both start at the same time here.
      second.clock.now = first.clock.now;
      projectId = (await createProject(first, 'drain')).id;
      tester = await createUser(first, ['tester'], { projects: [projectId] });
      testIds = [];
      for (let i = 0; i < TESTS; i++) {
        const body = { projectId, name: `test ${i}`, steps: [{ action: 'open', expected: 'shown' }] };
        testIds.push((await tester.client.call(v1.tests.createTest, { body })).id);
      }
      for (let i = 0; i < DEVICES; i++) {
        const id = unique('drain-dev-');
        await first.admin.client.call(v1.devices.registerDevice, { body: { id, name: id, platform: 'android', labels: [label] } });
      }
    });
    after(async () => {
      if (second !== first) await second.close();
      await first.close();
    });

    const advanceBoth = (ms: number) => {
      first.clock.advance(ms);
      if (second !== first) second.clock.advance(ms);
    };
    const getJob = (jobId: string) => tester.client.call(v1.jobs.getJob, { params: { jobId } });

    test('every run is claimed exactly once, by one claimer, and none is left queued', async () => {
      const job = await tester.client.call(v1.jobs.createJob, { body: { projectId, testIds, deviceLabels: [label] } });
      assert.equal(job.progress.queued, RUNS);

      const claimers = Array.from({ length: CLAIMERS }, (_, i) => ({
        runner: `runner-${i}`,
        client: (i % 2 === 0 ? first : second).client(tester.key),
      }));
      const holder = new Map<string, string>();
      const twice: string[] = [];
      const claimedThrough = new Map<TestServer, number>();
      await Promise.all(
        claimers.map(async ({ runner, client }, i) => {
          const server = i % 2 === 0 ? first : second;
          for (;;) {
            const run = await client.claimRun({ runner, projectId, deviceLabels: [label] });
            if (!run) return;
            assert.equal(run.runner, runner);
            assert.equal(run.status, 'running');
            const earlier = holder.get(run.id);
            if (earlier) twice.push(`${run.id}: ${earlier} and ${runner}`);
            holder.set(run.id, runner);
            claimedThrough.set(server, (claimedThrough.get(server) ?? 0) + 1);
          }
        }),
      );

      assert.deepEqual(twice, [], 'no run is handed out twice');
      assert.equal(holder.size, RUNS);
      const drained = await getJob(job.id);
      assert.equal(drained.progress.queued, 0);
      assert.equal(drained.progress.running, RUNS);
      const listed = await tester.client.call(v1.runs.listRuns, { query: { jobId: job.id, status: 'queued' } });
      assert.deepEqual(listed.items, []);
      if (second !== first) {
        assert.ok((claimedThrough.get(first) ?? 0) > 0 && (claimedThrough.get(second) ?? 0) > 0, 'both instances handed out runs');
      }
      const runners = new Set(holder.values());
      assert.ok(runners.size > 1, `the claimers shared the work (${runners.size} got runs)`);
    });

    test('a claimer that stops heartbeating loses its run and another claims it; one that keeps beating keeps its own', async () => {
      const job = await tester.client.call(v1.jobs.createJob, { body: { projectId, testIds: testIds.slice(0, 2) } });
      const silent = first.client(tester.key);
      const beating = second.client(tester.key);
      const next = second.client(tester.key);
      const lost = await silent.claimRun({ runner: 'silent', projectId, leaseSeconds: 10 });
      const kept = await beating.claimRun({ runner: 'beating', projectId, leaseSeconds: 10 });
      assert.ok(lost && kept);
      assert.equal(await next.claimRun({ runner: 'next', projectId }), undefined, 'both runs are leased');

      advanceBoth(seconds(6));
      await beating.heartbeatRun(kept.id, { runner: 'beating', leaseSeconds: 10 });
      advanceBoth(seconds(6));
      // The silent runner's lease ended 2 seconds ago; the sweep of either instance returns its run.
      await requeueExpiredRuns(first.app.attest);
      const waiting = await getJob(job.id);
      assert.equal(waiting.progress.queued, 1);
      assert.equal(waiting.progress.running, 1);

      const taken = await next.claimRun({ runner: 'next', projectId });
      assert.equal(taken?.id, lost.id);
      assert.equal(taken?.runner, 'next');
      const refused = await silent.heartbeatRun(lost.id, { runner: 'silent' }).catch((error: ApiError) => error);
      assert.equal((refused as ApiError).status, 409);
      assert.equal((refused as ApiError).code, 'STATE_CONFLICT');
      assert.equal((await beating.heartbeatRun(kept.id, { runner: 'beating' })).runner, 'beating');
      assert.equal((await getJob(job.id)).progress.running, 2);
    });
  });
}
