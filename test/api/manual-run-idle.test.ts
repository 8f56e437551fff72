import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { v1 } from '../../src/client/index.ts';
import { endIdleManualRuns, IDLE_NOTE_CELL } from '../../src/server/services/tests/manual-runs.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createProject, createUser, type TestUser, unique } from '../helpers/factories.ts';
import { randomPng } from '../helpers/png.ts';
import { rejectsWith } from '../helpers/problems.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

// TCM-9: a run executed by hand and left open ends `aborted` once nothing was recorded on it for
// ATTEST_LAUNCH_IDLE_MINUTES, with a note saying so; its job then completes. Time moves on the
// server's hand-moved clock; the sweep the upkeep plugin schedules is run here as it would run.

const IDLE_MINUTES = 30;
const MINUTE = 60_000;

for (const dialect of DIALECTS) {
  describe(`[${dialect}] a manual run left idle (TCM-9)`, () => {
    let server: TestServer;
    let tester: TestUser;
    let projectId: string;
    const sweep = () => endIdleManualRuns(server.app.attest);
    const runOf = (testRunId: string) => tester.client.call(v1.runs.getRun, { params: { testRunId } });
    const manualTest = () =>
      tester.client.call(v1.tests.createTest, {
        body: {
          projectId,
          name: unique('by hand '),
          steps: [
            { action: 'Open the shop', expected: 'It shows' },
            { action: 'Pay', expected: 'Paid' },
          ],
        },
      });
    const step = (testRunId: string, key: string, status: 'running' | 'passed') =>
      tester.client.call(v1.results.appendResults, {
        params: { testRunId },
        body: { idempotencyKey: `${key}:${status}`, steps: [{ key, title: key, status, startedAt: server.clock().toISOString() }] },
      });

    before(async () => {
      server = await startTestServer(dialect, { ATTEST_LAUNCH_IDLE_MINUTES: String(IDLE_MINUTES) });
      projectId = (await createProject(server, 'Manual')).id;
      tester = await createUser(server, ['tester'], { projects: [projectId] });
    });
    after(() => server.close());

    test("a job's run taken by hand and left ends aborted after the idle time, with a note; the job completes and the run takes nothing more", async () => {
      const definition = await manualTest();
      const job = await tester.client.call(v1.jobs.createJob, { body: { projectId, testIds: [definition.id] } });
      const [queued] = (await tester.client.call(v1.runs.listRuns, { query: { projectId, jobId: job.id } })).items;
      assert.ok(queued);
      await tester.client.call(v1.runs.updateRun, { params: { testRunId: queued.id }, body: { status: 'running' } });
      await step(queued.id, 'step-1', 'passed');
      const lastAt = server.clock().toISOString();
      server.clock.advance(IDLE_MINUTES * MINUTE - 1000);
      const untilIdle = await sweep();
      assert.equal((await runOf(queued.id)).status, 'running', 'a second short of the idle time it stays open');
      assert.ok(
        untilIdle >= 60_000 && untilIdle <= 61_000,
        `the sweep comes back when it falls idle, at least a minute on (${untilIdle} ms)`,
      );
      server.clock.advance(2000);
      await sweep();
      const ended = await runOf(queued.id);
      assert.equal(ended.status, 'aborted');
      assert.equal(ended.verdict, null);
      assert.equal(ended.finishedAt, server.clock().toISOString());
      const results = await tester.client.call(v1.results.getResults, { params: { testRunId: queued.id }, query: { partial: true } });
      const note = results.cells.find((cell) => cell.name === IDLE_NOTE_CELL);
      assert.ok(note, JSON.stringify(results.cells));
      assert.match(note.text, new RegExp(`nothing was recorded on this run for ${IDLE_MINUTES} minutes \\(ATTEST_LAUNCH_IDLE_MINUTES\\)`));
      assert.ok(note.text.includes(`the last at ${lastAt}`), note.text);
      assert.deepEqual(
        results.steps.map((s) => [s.title, s.status]),
        [['step-1', 'passed']],
        'what was recorded stays',
      );
      const read = await tester.client.call(v1.jobs.getJob, { params: { jobId: job.id } });
      assert.equal(read.status, 'completed', 'its only run is finished');
      assert.equal(read.progress.aborted, 1);
      await assert.rejects(step(queued.id, 'step-2', 'passed'), rejectsWith(409, 'RUN_FROZEN'));
      // A second sweep finds nothing to do.
      await sweep();
      const again = await tester.client.call(v1.results.getResults, { params: { testRunId: queued.id }, query: { partial: true } });
      assert.equal(again.cells.filter((cell) => cell.name === IDLE_NOTE_CELL).length, 1);
    });

    test('anything recorded keeps it open: a step, a results post, a screenshot each count from when they came', async () => {
      const definition = await manualTest();
      const run = await tester.client.call(v1.runs.createRun, { body: { projectId, testId: definition.id, name: definition.name } });
      server.clock.advance(20 * MINUTE);
      await step(run.id, 'step-1', 'running');
      server.clock.advance(20 * MINUTE);
      await sweep();
      assert.equal((await runOf(run.id)).status, 'running', '40 minutes since it started, 20 since its step');
      await step(run.id, 'step-1', 'passed');
      server.clock.advance(20 * MINUTE);
      await sweep();
      assert.equal((await runOf(run.id)).status, 'running', 'the step finished 20 minutes ago');
      await tester.client.upload(projectId, { testRunId: run.id, kind: 'screenshot', name: 'later.png', stepKey: 'step-1' }, [
        { name: 'later.png', bytes: await randomPng(), type: 'image/png' },
      ]);
      server.clock.advance(IDLE_MINUTES * MINUTE - MINUTE);
      await sweep();
      assert.equal((await runOf(run.id)).status, 'running', 'the screenshot came 29 minutes ago');
      server.clock.advance(2 * MINUTE);
      await sweep();
      assert.equal((await runOf(run.id)).status, 'aborted');
    });

    test("a reporter's run (a test without steps of its own), a run without a test and a finished run are left alone", async () => {
      const reported = await tester.client.call(v1.runs.createRun, {
        body: { projectId, name: 'checkout', testName: unique('spec › checkout ') },
      });
      const bare = await tester.client.call(v1.runs.createRun, { body: { projectId, name: 'no test' } });
      const definition = await manualTest();
      const done = await tester.client.call(v1.runs.createRun, { body: { projectId, testId: definition.id, name: definition.name } });
      await tester.client.call(v1.runs.updateRun, { params: { testRunId: done.id }, body: { status: 'completed', verdict: 'passed' } });
      server.clock.advance(3 * IDLE_MINUTES * MINUTE);
      await sweep();
      assert.equal((await runOf(reported.id)).status, 'running');
      assert.equal((await runOf(bare.id)).status, 'running');
      const finished = await runOf(done.id);
      assert.deepEqual([finished.status, finished.verdict], ['completed', 'passed']);
      const results = await tester.client.call(v1.results.getResults, { params: { testRunId: done.id } });
      assert.equal(results.cells.length, 0, 'no note on a run that ended by itself');
    });
  });
}
