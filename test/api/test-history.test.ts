import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Static } from 'typebox';
import type { Verdict as VerdictSchema } from '../../src/api/v1/run-states.ts';
import { type ApiError, v1 } from '../../src/client/index.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { type ServerWithTwoProjects, serverWithTwoProjects } from '../helpers/factories.ts';
import { firstPointer, isProblem } from '../helpers/problems.ts';
import { createOneStepTest } from '../helpers/records.ts';

type Verdict = Static<typeof VerdictSchema>;

// SPEC-2.1: a test's history, newest first, with verdict flips marked.

for (const dialect of DIALECTS) {
  describe(`[${dialect}] test history`, () => {
    let { server, projectA, projectB, tester, viewer, outsider } = {} as ServerWithTwoProjects;
    before(async () => {
      ({ server, projectA, projectB, tester, viewer, outsider } = await serverWithTwoProjects(dialect));
    });
    after(() => server.close());

    const newTest = (projectId = projectA) => createOneStepTest(server.admin.client, projectId);

    /** A completed run of the test (or a running one, for `null`), a second after the one before. */
    const record = async (testId: string, verdict: Verdict | null, labels: { branch?: string; build?: string } = {}) => {
      server.clock.advance(1000);
      const body = { projectId: projectA, name: `run ${verdict ?? 'running'}`, testId, ...labels };
      const run = await tester.client.call(v1.runs.createRun, { body: verdict === null ? body : { ...body, verdict } });
      return run.id;
    };

    const historyOf = (testId: string, limit?: number, client = viewer.client) =>
      client.call(v1.tests.getTestHistory, { params: { testId }, query: limit === undefined ? {} : { limit } });

    describe('GET /testmgmt/tests/{testId}/history', () => {
      test('lists the runs newest first with their labels, and counts them by verdict', async () => {
        const testId = await newTest();
        const other = await newTest();
        const first = await record(testId, 'passed', { branch: 'main', build: '1' });
        await record(other, 'failed');
        const second = await record(testId, 'skipped', { branch: 'main', build: '2' });
        const third = await record(testId, 'broken');
        const fourth = await record(testId, null);

        const history = await historyOf(testId);
        assert.equal(history.testId, testId);
        assert.deepEqual(
          history.runs.map((r) => r.id),
          [fourth, third, second, first],
        );
        const [running, , skipped, passed] = history.runs;
        assert.equal(running?.status, 'running');
        assert.equal(running?.verdict, null);
        assert.equal(running?.finishedAt, null);
        assert.equal(skipped?.verdict, 'skipped');
        assert.equal(skipped?.build, '2');
        assert.equal(passed?.status, 'completed');
        assert.equal(passed?.branch, 'main');
        assert.equal(passed?.build, '1');
        assert.equal(passed?.jobId, null);
        assert.equal(passed?.deviceId, null);
        assert.equal(passed?.environment, null);
        assert.ok(passed?.createdAt && passed.finishedAt);
        assert.deepEqual(history.summary, { runs: 4, passed: 1, failed: 0, broken: 1, skipped: 1, flakyFlips: 0 });
      });

      test('an unrun test has an empty history', async () => {
        const history = await historyOf(await newTest());
        assert.deepEqual(history.runs, []);
        assert.deepEqual(history.summary, { runs: 0, passed: 0, failed: 0, broken: 0, skipped: 0, flakyFlips: 0 });
      });

      test('answers the newest `limit` runs, 50 when not asked', async () => {
        const testId = await newTest();
        const ids: string[] = [];
        for (let i = 0; i < 53; i++) ids.push(await record(testId, 'passed'));
        const newestFirst = ids.reverse();
        assert.deepEqual(
          (await historyOf(testId)).runs.map((r) => r.id),
          newestFirst.slice(0, 50),
        );
        const three = await historyOf(testId, 3);
        assert.deepEqual(
          three.runs.map((r) => r.id),
          newestFirst.slice(0, 3),
        );
        assert.equal(three.summary.runs, 3);
        assert.equal(three.summary.passed, 3);
      });

      test('marks a run flaky when it passed or failed and the last older run that did had the other verdict', async () => {
        const testId = await newTest();
        // Oldest to newest; broken, skipped and unfinished runs are stepped over, never marked.
        const sequence: [Verdict | null, boolean][] = [
          ['passed', false], // nothing older to compare with
          ['passed', false],
          ['failed', true],
          ['broken', false],
          ['failed', false], // compared with the failure before the broken run
          ['skipped', false],
          ['passed', true], // compared with the failure before the skipped run
          [null, false],
          ['failed', true],
        ];
        const ids: string[] = [];
        for (const [verdict] of sequence) ids.push(await record(testId, verdict));

        const history = await historyOf(testId);
        assert.deepEqual(
          history.runs.map((r) => [r.id, r.flaky]),
          ids.map((id, i) => [id, sequence[i]?.[1]]).reverse(),
        );
        assert.deepEqual(history.summary, { runs: 9, passed: 3, failed: 3, broken: 1, skipped: 1, flakyFlips: 3 });
      });

      test('compares the oldest run answered with a run older than the window', async () => {
        const testId = await newTest();
        await record(testId, 'failed');
        await record(testId, 'broken');
        const passed = await record(testId, 'passed');
        const again = await record(testId, 'passed');

        const window = await historyOf(testId, 2);
        assert.deepEqual(
          window.runs.map((r) => [r.id, r.flaky]),
          [
            [again, false],
            [passed, true],
          ],
        );
        assert.equal(window.summary.flakyFlips, 1);
      });

      test('runs created in the same instant keep one order, and flips follow it', async () => {
        const testId = await newTest();
        server.clock.advance(1000);
        const ids: string[] = [];
        for (const verdict of ['passed', 'failed', 'passed'] as const) {
          const body = { projectId: projectA, name: 'same instant', testId, verdict };
          ids.push((await tester.client.call(v1.runs.createRun, { body })).id);
        }
        const history = await historyOf(testId);
        // Same creation time: ordered by id, newest first meaning the greatest id first.
        const byId = [...ids].sort().reverse();
        assert.deepEqual(
          history.runs.map((r) => r.id),
          byId,
        );
        const verdicts = history.runs.map((r) => r.verdict);
        const expectedFlaky = verdicts.map((v, i) => {
          const older = verdicts.slice(i + 1).find((o) => o === 'passed' || o === 'failed');
          return older !== undefined && older !== v;
        });
        assert.deepEqual(
          history.runs.map((r) => r.flaky),
          expectedFlaky,
        );
      });

      test("answers 404 for another project's test exactly as for an unknown one", async () => {
        const foreign = await newTest(projectB);
        await assert.rejects(historyOf(foreign), isProblem(404, 'NOT_FOUND'));
        await assert.rejects(historyOf('00000000-0000-4000-8000-000000000000'), isProblem(404, 'NOT_FOUND'));
        // A member of the other project reads it.
        assert.deepEqual((await historyOf(foreign, undefined, outsider.client)).runs, []);
      });

      test('refuses a limit outside 1..200 (the configured page size) with 400', async () => {
        const testId = await newTest();
        for (const limit of [0, 201]) {
          await assert.rejects(historyOf(testId, limit), (e: ApiError) => {
            assert.equal(e.status, 400);
            assert.equal(firstPointer(e), '/query/limit');
            return true;
          });
        }
      });
    });
  });
}
