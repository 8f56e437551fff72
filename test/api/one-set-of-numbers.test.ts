import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { v1 } from '../../src/client/index.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { type ServerWithTwoProjects, serverWithTwoProjects, unique } from '../helpers/factories.ts';
import { ALSO_FLAKY, FAILING, FLAKY, importFlakyJobs } from '../helpers/flaky-fixture.ts';

// TRIAGE-14: one set of numbers. Every answer counts tests with their retries folded (the final
// attempt decides, flaky when an earlier one failed) and names a test without "(retry N)".

const RETRY = /\(retry \d+\)/;

for (const dialect of DIALECTS) {
  describe(`[${dialect}] one set of numbers (TRIAGE-14)`, () => {
    let { server, projectA, tester, viewer } = {} as ServerWithTwoProjects;
    let jobs: string[] = [];
    before(async () => {
      ({ server, projectA, tester, viewer } = await serverWithTwoProjects(dialect));
      jobs = await importFlakyJobs({
        url: server.url,
        key: tester.key,
        client: viewer.client,
        projectId: projectA,
        file: `${unique('numbers')}.spec.ts`,
        start: server.clock().getTime() - 6 * 3_600_000,
        advance: (ms) => server.clock.advance(ms),
      });
    });
    after(() => server.close());

    test('a test flaky in every job of 10 tests reads the same in its history, the tests list, the dashboard, the job and the comparison', async () => {
      const last = jobs[5] as string;
      // The job: 10 tests in 14 runs; the tests counted once each.
      const job = await viewer.client.call(v1.jobs.getJob, { params: { jobId: last } });
      assert.equal(job.progress.total, 14, 'every attempt is still a run');
      assert.deepEqual(job.progress.tests, { total: 10, passed: 7, failed: 1, broken: 0, skipped: 0, flaky: 2, unfinished: 0 });
      const listed = (await viewer.client.call(v1.jobs.listJobs, { query: { projectId: projectA } })).items.find((j) => j.id === last);
      assert.deepEqual(listed?.progress.tests, job.progress.tests, 'the Jobs tab reads the job list');

      // The test: one outcome per job, each flaky, every attempt kept.
      const tests = (await viewer.client.call(v1.tests.listTests, { query: { projectId: projectA, limit: 200 } })).items;
      assert.equal(tests.length, 10);
      const flaky = tests.find((t) => t.name.endsWith(` › ${FLAKY}`));
      assert.ok(flaky, 'the test is named by its full name, not its last attempt');
      const history = await viewer.client.call(v1.tests.getTestHistory, { params: { testId: flaky.id }, query: {} });
      assert.equal(history.runs.length, 12, 'its attempts stay runs');
      assert.deepEqual(history.outcomeSummary, {
        outcomes: 6,
        passed: 0,
        failed: 0,
        broken: 0,
        skipped: 0,
        flaky: 6,
        unfinished: 0,
        passRate: 1,
      });
      assert.ok(history.outcomes.every((o) => o.verdict === 'flaky' && o.attempts === 2 && o.runIds.length === 2));

      // Its health: the same on the test, in the list, on the dashboard and in the history.
      const one = await viewer.client.call(v1.tests.getTest, { params: { testId: flaky.id } });
      assert.equal(one.health.state, 'flaky');
      assert.equal(one.health.runsConsidered, 6, 'one outcome per job');
      assert.deepEqual(flaky.health, one.health);
      assert.deepEqual(history.health, one.health);
      const dashboard = await viewer.client.call(v1.dashboard.getDashboard, { params: { projectId: projectA }, query: {} });
      const scored = dashboard.flaky.find((entry) => entry.testId === flaky.id);
      assert.deepEqual(
        { state: scored?.state, flakyScore: scored?.flakyScore, runsConsidered: scored?.runsConsidered, name: scored?.name },
        { state: 'flaky', flakyScore: one.health.flakyScore, runsConsidered: 6, name: flaky.name },
      );
      const onDashboard = dashboard.jobs.find((entry) => entry.job.id === last);
      assert.deepEqual(onDashboard?.job.progress.tests, job.progress.tests);
      assert.equal(onDashboard?.passRate, 9 / 10, 'tests passed or flaky, of those that passed, were flaky or failed');
      const tests14 = dashboard.daily.reduce((n, day) => n + day.tests, 0);
      const runs14 = dashboard.daily.reduce((n, day) => n + day.runs, 0);
      assert.deepEqual(
        { tests: tests14, runs: runs14 },
        { tests: 60, runs: 60 + 5 + 4 },
        'each job 10 tests; 9 retries, and the last the 4 more',
      );

      // No answer names a test by its last attempt.
      const runs = (await viewer.client.call(v1.runs.listRuns, { query: { projectId: projectA, jobId: last, limit: 200 } })).items;
      assert.equal(runs.length, 14);
      assert.ok(
        runs.every((run) => !RETRY.test(run.name)),
        runs.map((r) => r.name).join(', '),
      );
      assert.deepEqual(
        runs
          .filter((run) => run.name === FAILING)
          .map((run) => run.attempt)
          .sort(),
        [0, 1, 2],
      );
      const comparison = await viewer.client.call(v1.comparison.compareJobs, { params: { jobId: last }, query: { base: jobs[4] } });
      assert.deepEqual(comparison.counts.tests, 10);
      assert.deepEqual(comparison.flaky.map((t) => t.name).sort(), [FLAKY, ALSO_FLAKY].sort());
      assert.deepEqual(
        comparison.newFailures.map((t) => [t.name, t.attempts]),
        [[FAILING, 3]],
      );
      const named = [...comparison.newFailures, ...comparison.fixed, ...comparison.stillFailing, ...comparison.flaky];
      assert.ok(named.every((t) => !RETRY.test(t.name)));
    });

    test('a run sent as "<title> (retry N)" with attempt N, as reporters before it did, is stored under its test\u2019s name', async () => {
      const job = await tester.client.call(v1.jobs.createJob, { body: { projectId: projectA, name: unique('launch-'), testIds: [] } });
      const testName = unique('legacy › retried');
      const post = (name: string, attempt: number, verdict: 'passed' | 'failed') =>
        tester.client.call(v1.runs.createRun, { body: { projectId: projectA, jobId: job.id, name, testName, attempt, verdict } });
      const first = await post('retried', 0, 'failed');
      const retry = await post('retried (retry 1)', 1, 'passed');
      assert.equal(first.name, 'retried');
      assert.equal(retry.name, 'retried', 'the attempt is the run\u2019s attempt, not part of its name');
      // A title that merely ends like a retry, with another attempt, is the test's own.
      const own = await post('retried (retry 3)', 1, 'passed');
      assert.equal(own.name, 'retried (retry 3)');
      const comparison = await viewer.client.call(v1.comparison.compareJobs, { params: { jobId: job.id }, query: {} });
      assert.deepEqual(comparison.counts.tests, 1);
    });
  });
}
