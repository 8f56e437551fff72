import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { v1 } from '../../src/client/index.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { type ServerWithTwoProjects, serverWithTwoProjects, unique } from '../helpers/factories.ts';
import { ALSO_FLAKY, FLAKY, importFlakyJobs } from '../helpers/flaky-fixture.ts';
import { firstPointer } from '../helpers/problems.ts';

// TRIAGE-15: what flakiness costs in CI time, on the fixture of test/helpers/flaky-fixture.ts, by hand:
// - retried failures: `badge looks right` fails for 1,000 ms then passes, in each of the 6 jobs; `login
//   works` fails for 2,500 ms then passes in the last. 7 attempts, 6 × 1,000 + 2,500 = 8,500 ms. The
//   test failing all three attempts in the last job passed on no retry: not counted.
// - flaky-only jobs: the first 5 (the last has a test that failed in the end), each from its first
//   start to its last finish: 1,000 + 400 + 300 + 200 + 7 × 100 = 2,600 ms; 5 × 2,600 = 13,000 ms.

for (const dialect of DIALECTS) {
  describe(`[${dialect}] GET /projects/{projectId}/flaky-cost (TRIAGE-15)`, () => {
    let { server, projectA, projectB, tester, viewer } = {} as ServerWithTwoProjects;
    let jobs: string[] = [];
    before(async () => {
      ({ server, projectA, projectB, tester, viewer } = await serverWithTwoProjects(dialect));
      jobs = await importFlakyJobs({
        url: server.url,
        key: tester.key,
        client: viewer.client,
        projectId: projectA,
        file: `${unique('cost')}.spec.ts`,
        start: server.clock().getTime() - 6 * 3_600_000,
        advance: (ms) => server.clock.advance(ms),
      });
    });
    after(() => server.close());

    test('the flaky cost of the fixture equals the hand-computed value, per project, per test and on the dashboard', async () => {
      const cost = await viewer.client.call(v1.flakyCost.getFlakyCost, { params: { projectId: projectA }, query: {} });
      assert.equal(cost.days, 30);
      assert.deepEqual(cost.retriedFailures, { attempts: 7, durationMs: 8_500 });
      assert.deepEqual(cost.flakyOnlyJobs, { jobs: 5, durationMs: 13_000 });
      assert.equal(cost.truncated, false);
      assert.deepEqual(
        cost.tests.map((t) => [t.name, t.attempts, t.durationMs]),
        [
          [FLAKY, 6, 6_000],
          [ALSO_FLAKY, 1, 2_500],
        ],
      );
      // The rows behind each figure.
      assert.equal(cost.attempts.length, 7);
      assert.equal(
        cost.attempts.reduce((n, a) => n + a.durationMs, 0),
        8_500,
      );
      assert.ok(cost.attempts.every((a) => a.attempt === 0 && a.verdict === 'failed'));
      assert.deepEqual(cost.jobs.map((j) => j.jobId).sort(), jobs.slice(0, 5).sort());
      assert.ok(cost.jobs.every((j) => j.durationMs === 2_600 && j.flakyTests === 1));

      const flakyTest = cost.tests[0]?.testId as string;
      const one = await viewer.client.call(v1.flakyCost.getFlakyCost, {
        params: { projectId: projectA },
        query: { testId: flakyTest, days: 7 },
      });
      assert.deepEqual(one.retriedFailures, { attempts: 6, durationMs: 6_000 });
      assert.deepEqual(one.flakyOnlyJobs, { jobs: 5, durationMs: 13_000 }, 'the jobs where this test was the only failure');

      const dashboard = await viewer.client.call(v1.dashboard.getDashboard, { params: { projectId: projectA }, query: {} });
      assert.deepEqual(dashboard.flakyCost, { retriedFailures: cost.retriedFailures, flakyOnlyJobs: cost.flakyOnlyJobs });

      // Another project's cost is its own; a window past every run counts nothing.
      const other = await server.admin.client.call(v1.flakyCost.getFlakyCost, { params: { projectId: projectB }, query: {} });
      assert.deepEqual(other.retriedFailures, { attempts: 0, durationMs: 0 });
      server.clock.advance(10 * 86_400_000);
      const later = await viewer.client.call(v1.flakyCost.getFlakyCost, { params: { projectId: projectA }, query: { days: 1 } });
      assert.deepEqual([later.retriedFailures.attempts, later.flakyOnlyJobs.jobs], [0, 0]);
    });

    test('the tests list by flaky cost: the tests flaky-cost names, in its order, paged and filtered; days only with that sort', async () => {
      const cost = await viewer.client.call(v1.flakyCost.getFlakyCost, { params: { projectId: projectA }, query: {} });
      const list = (query: Record<string, unknown>) =>
        viewer.client.call(v1.tests.listTests, { query: { projectId: projectA, sort: 'flakyCost', ...query } as never });
      const all = await list({});
      assert.deepEqual(
        all.items.map((t) => t.id),
        cost.tests.map((t) => t.testId),
      );
      assert.equal(all.nextCursor, null);
      // Paged one at a time, the cursor carrying on below the last cost.
      const first = await list({ limit: 1 });
      assert.deepEqual([first.items.length, first.items[0]?.id], [1, cost.tests[0]?.testId]);
      assert.ok(first.nextCursor);
      const second = await list({ limit: 1, cursor: first.nextCursor });
      assert.deepEqual(
        second.items.map((t) => t.id),
        [cost.tests[1]?.testId],
      );
      assert.equal(second.nextCursor, null);
      // Filters narrow it as they narrow the other orders.
      const named = await list({ q: ALSO_FLAKY.slice(-12) });
      assert.deepEqual(
        named.items.map((t) => t.id),
        [cost.tests[1]?.testId],
      );
      // A window past every retry (the clock moved 10 days on) lists none.
      assert.deepEqual((await list({ days: 1 })).items, []);
      // Another sort's cursor, and `days` without this sort, are refused.
      const newest = await viewer.client.call(v1.tests.listTests, { query: { projectId: projectA, limit: 1 } });
      await assert.rejects(list({ cursor: newest.nextCursor }), (error: Parameters<typeof firstPointer>[0]) => {
        assert.equal(firstPointer(error), '/query/cursor');
        return true;
      });
      await assert.rejects(
        viewer.client.call(v1.tests.listTests, { query: { projectId: projectA, days: 7 } }),
        (error: Parameters<typeof firstPointer>[0]) => {
          assert.equal(firstPointer(error), '/query/days');
          return true;
        },
      );
    });

    test('a window outside 1 to 90 days, or a test id that is no UUID, is a 400', async () => {
      for (const [query, pointer] of [
        [{ days: 0 }, '/query/days'],
        [{ days: 91 }, '/query/days'],
        [{ testId: 'nope' }, '/query/testId'],
      ] as const) {
        await assert.rejects(
          viewer.client.call(v1.flakyCost.getFlakyCost, { params: { projectId: projectA }, query: query as never }),
          (error: Parameters<typeof firstPointer>[0]) => {
            assert.equal(firstPointer(error), pointer);
            return true;
          },
        );
      }
    });
  });
}
