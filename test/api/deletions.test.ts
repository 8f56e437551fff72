import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type ApiError, v1 } from '../../src/client/index.ts';
import { collectGarbage, verifyStorage } from '../../src/server/services/operations/maintenance.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { type ServerWithManagedProject, serverWithManagedProject, unique } from '../helpers/factories.ts';
import { randomPng } from '../helpers/png.ts';

// RET-1: runs, jobs and tests can be deleted by a manager, with what they hold, audited; a second
// delete is a 404; their bytes come back through garbage collection, and deleting while other runs
// take uploads and results loses none of those.

for (const dialect of DIALECTS) {
  describe(`[${dialect}] deleting runs, jobs and tests (RET-1)`, () => {
    let { server, projectId, manager, tester } = {} as ServerWithManagedProject;
    before(async () => {
      ({ server, projectId, manager, tester } = await serverWithManagedProject(dialect, 'Deletions'));
    });
    after(() => server.close());

    /** Garbage collection with no grace at all: only the holds of uploads in flight protect their bytes. */
    const collect = () => collectGarbage({ ...server.app.attest, clock: () => new Date(Date.now() + 60_000) }, { graceMs: 0 });
    const status = (promise: Promise<unknown>) =>
      promise.then(
        () => 200,
        (e: ApiError) => e.status,
      );

    /** A completed run with two steps, a cell and one screenshot of its own bytes; answers its id and the screenshot's blob. */
    async function runWithShot(options: { testName?: string; jobId?: string } = {}) {
      const run = await tester.client.call(v1.runs.createRun, { body: { projectId, name: unique('run-'), ...options } });
      await tester.client.call(v1.results.appendResults, {
        params: { testRunId: run.id },
        body: {
          steps: [
            { key: 'a', title: 'Open', status: 'passed', cells: [{ name: 'log', text: 'ok' }] },
            { key: 'b', title: 'Pay', status: 'failed' },
          ],
        },
      });
      const shot = await tester.client.upload(projectId, { testRunId: run.id, stepKey: 'b', kind: 'screenshot', name: 'pay.png' }, [
        { name: 'pay.png', bytes: await randomPng(20, 14), type: 'image/png' },
      ]);
      await tester.client.call(v1.runs.updateRun, { params: { testRunId: run.id }, body: { status: 'completed', verdict: 'failed' } });
      return { id: run.id, testId: run.testId, artifactId: String(shot.id), sha256: String(shot.sha256) };
    }

    test('a run goes with its steps, cells and artifacts; a tester may not; twice is a 404; GC frees its bytes', async () => {
      const run = await runWithShot();
      assert.equal(await status(tester.client.call(v1.runs.deleteRun, { params: { testRunId: run.id } })), 403);
      await manager.client.call(v1.runs.deleteRun, { params: { testRunId: run.id } });
      assert.equal(await status(tester.client.call(v1.runs.getRun, { params: { testRunId: run.id } })), 404);
      assert.equal(await status(tester.client.call(v1.results.getResults, { params: { testRunId: run.id } })), 404);
      const details = await tester.client.call(v1.artifacts.getArtifacts, { query: { ids: run.artifactId } });
      assert.deepEqual(details.missing, [run.artifactId]);
      assert.equal(await status(manager.client.call(v1.runs.deleteRun, { params: { testRunId: run.id } })), 404);

      const audit = await server.admin.client.call(v1.users.listAuditLog, { query: { action: 'run.delete', targetId: run.id } });
      assert.equal(audit.items.length, 1);

      const ctx = server.app.attest;
      assert.ok(await ctx.blobs.head(run.sha256), 'the bytes stay until garbage collection');
      await collect();
      assert.equal(await ctx.blobs.head(run.sha256), undefined, 'garbage collection freed them');
    });

    test('a job goes with all its runs', async () => {
      const job = await tester.client.call(v1.jobs.createJob, { body: { projectId, name: 'Nightly', testIds: [] } });
      const runs = [await runWithShot({ jobId: job.id }), await runWithShot({ jobId: job.id })];
      const other = await runWithShot();
      await manager.client.call(v1.jobs.deleteJob, { params: { jobId: job.id } });
      assert.equal(await status(tester.client.call(v1.jobs.getJob, { params: { jobId: job.id } })), 404);
      for (const run of runs) assert.equal(await status(tester.client.call(v1.runs.getRun, { params: { testRunId: run.id } })), 404);
      assert.equal(await status(tester.client.call(v1.runs.getRun, { params: { testRunId: other.id } })), 200, 'other runs stay');
      assert.equal(await status(manager.client.call(v1.jobs.deleteJob, { params: { jobId: job.id } })), 404);
    });

    test('a test with runs is a 409 unless cascade=true, which takes its history with it', async () => {
      const testName = unique('login.spec.ts › Login › ');
      const first = await runWithShot({ testName });
      await runWithShot({ testName });
      const testId = first.testId as string;
      await assert.rejects(manager.client.call(v1.tests.deleteTest, { params: { testId } }), (e: ApiError) => {
        assert.equal(e.status, 409);
        assert.match(String(e.problem.detail), /2 runs of this test exist/);
        return true;
      });
      assert.equal(
        await status(tester.client.call(v1.runs.getRun, { params: { testRunId: first.id } })),
        200,
        'the refusal changed nothing',
      );
      await manager.client.call(v1.tests.deleteTest, { params: { testId }, query: { cascade: true } });
      assert.equal(await status(tester.client.call(v1.tests.getTest, { params: { testId } })), 404);
      assert.equal(await status(tester.client.call(v1.runs.getRun, { params: { testRunId: first.id } })), 404);

      const bare = await tester.client.call(v1.tests.createTest, {
        body: { projectId, name: 'No runs', steps: [{ action: 'a', expected: 'b' }] },
      });
      await manager.client.call(v1.tests.deleteTest, { params: { testId: bare.id } });
      assert.equal(await status(manager.client.call(v1.tests.deleteTest, { params: { testId: bare.id } })), 404);
    });

    test('deleting runs and collecting garbage while another run takes uploads and results loses none of its writes', async () => {
      const kept = await tester.client.call(v1.runs.createRun, { body: { projectId, name: 'kept' } });
      const doomed = await Promise.all(Array.from({ length: 6 }, () => runWithShot()));
      const acknowledged: { artifactId: string; sha256: string }[] = [];
      const steps: string[] = [];
      const writes = (async () => {
        for (let i = 0; i < 12; i++) {
          const receipt = await tester.client.call(v1.results.appendResults, {
            params: { testRunId: kept.id },
            body: { steps: [{ key: `k${i}`, title: `Step ${i}`, status: 'passed' }] },
          });
          steps.push(receipt.steps[0]?.id as string);
          const shot = await tester.client.upload(
            projectId,
            { testRunId: kept.id, stepKey: `k${i}`, kind: 'screenshot', name: `k${i}.png` },
            [{ name: `k${i}.png`, bytes: await randomPng(18, 12), type: 'image/png' }],
          );
          acknowledged.push({ artifactId: String(shot.id), sha256: String(shot.sha256) });
        }
      })();
      const deletes = (async () => {
        for (const run of doomed) {
          await manager.client.call(v1.runs.deleteRun, { params: { testRunId: run.id } });
          await collect();
        }
      })();
      await Promise.all([writes, deletes]);
      await collect();

      const results = await tester.client.call(v1.results.getResults, { params: { testRunId: kept.id }, query: { partial: true } });
      assert.deepEqual(
        results.steps.map((s) => s.id),
        steps,
        'every acknowledged results post is there',
      );
      const details = await tester.client.call(v1.artifacts.getArtifacts, {
        query: { ids: acknowledged.map((a) => a.artifactId).join(',') },
      });
      assert.equal(details.items.length, acknowledged.length, 'every acknowledged upload is there');
      for (const { sha256 } of acknowledged) assert.ok(await server.app.attest.blobs.head(sha256), 'with its bytes');
      const report = await verifyStorage({ ...server.app.attest, database: server.app.attest.database });
      assert.deepEqual([report.integrity, report.missingBlobs, report.badBlobs], [[], [], []]);
    });
  });
}
