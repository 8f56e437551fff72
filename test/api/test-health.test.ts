import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { v1 } from '../../src/client/index.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { type ServerWithTwoProjects, serverWithTwoProjects, unique } from '../helpers/factories.ts';
import { jsonHeaders, rawRequest } from '../helpers/http.ts';
import { firstPointer, isProblem } from '../helpers/problems.ts';
import { createOneStepTest } from '../helpers/records.ts';

// TRIAGE-5 (retries folded into their test) and TRIAGE-6 (health and quarantine), docs/triage.md.

const DAY = 86_400_000;
/** A Playwright JSON report of `titles`, each passing, but `flaky`, which fails and then passes on its retry. */
const playwrightReport = (file: string, titles: string[], flaky: string) => ({
  config: { projects: [{ name: 'chromium' }] },
  suites: [
    {
      title: file,
      specs: titles.map((title) => ({
        title,
        tests: [
          {
            projectName: 'chromium',
            results:
              title === flaky
                ? [
                    {
                      status: 'failed',
                      retry: 0,
                      duration: 120,
                      startTime: '2026-03-02T09:00:00.000Z',
                      errors: [{ message: 'Error: expect(received).toBe(expected)\n\nExpected: 2\nReceived: 3' }],
                      error: { message: 'Error: expect(received).toBe(expected)' },
                    },
                    { status: 'passed', retry: 1, duration: 100, startTime: '2026-03-02T09:00:01.000Z' },
                  ]
                : [{ status: 'passed', retry: 0, duration: 50, startTime: '2026-03-02T09:00:00.000Z' }],
          },
        ],
      })),
    },
  ],
});

for (const dialect of DIALECTS) {
  describe(`[${dialect}] test health`, () => {
    let { server, projectA, projectB, tester, viewer, outsider } = {} as ServerWithTwoProjects;
    before(async () => {
      ({ server, projectA, projectB, tester, viewer, outsider } = await serverWithTwoProjects(dialect));
    });
    after(() => server.close());

    const newTest = (projectId = projectA) => createOneStepTest(server.admin.client, projectId);

    /** A completed run of the test without a job (an outcome of its own), a second after the one before. */
    const record = async (testId: string, verdict: 'passed' | 'failed' | 'broken', labels: { branch?: string; commit?: string } = {}) => {
      server.clock.advance(1000);
      return tester.client.call(v1.runs.createRun, { body: { projectId: projectA, name: 'run', testId, verdict, ...labels } });
    };
    const getTest = (testId: string, client = viewer.client) => client.call(v1.tests.getTest, { params: { testId } });
    /** The fields of TRIAGE-6; the monitor's are TRIAGE-11's (test/api/health-monitors.test.ts). */
    const core = ({ state, flakyScore, runsConsidered, quarantine }: Awaited<ReturnType<typeof getTest>>['health']) => ({
      state,
      flakyScore,
      runsConsidered,
      quarantine,
    });
    const historyOf = (testId: string) => viewer.client.call(v1.tests.getTestHistory, { params: { testId }, query: {} });
    const listTests = (query: { sort?: 'newest' | 'flaky'; health?: 'stable' | 'flaky' | 'broken' | 'quarantined' }) =>
      viewer.client.call(v1.tests.listTests, { query: { projectId: projectA, limit: 200, ...query } });

    const importReport = async (report: unknown) => {
      const body = Buffer.from(JSON.stringify(report));
      const answer = await rawRequest(`${server.url}/api/v1/projects/${projectA}/imports`, {
        method: 'POST',
        headers: { ...jsonHeaders(tester.key), 'content-type': 'application/json', 'content-length': body.length },
        body,
      });
      assert.equal(answer.status, 202, answer.text);
      for (let i = 0; i < 400; i++) {
        const record = await viewer.client.call(v1.imports.getImport, {
          params: { projectId: projectA, importId: String(answer.json.id) },
        });
        if (record.status === 'completed') return record.jobId as string;
        assert.notEqual(record.status, 'failed', record.error ?? '');
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      throw new Error('the import did not finish');
    };

    test('runs of one test completing at the same moment all complete, and its health counts them (TRIAGE-6)', async () => {
      const testId = await newTest();
      const runs = await Promise.all(
        Array.from({ length: 8 }, () => tester.client.call(v1.runs.createRun, { body: { projectId: projectA, name: 'run', testId } })),
      );
      // Eight completions racing: each transaction rewrites the test's health row; none may fail on another's.
      const completed = await Promise.all(
        runs.map((run, i) =>
          tester.client.call(v1.runs.updateRun, {
            params: { testRunId: run.id },
            body: { status: 'completed', verdict: i % 2 === 0 ? 'passed' : 'failed' },
          }),
        ),
      );
      assert.ok(completed.every((run) => run.status === 'completed'));
      const { health } = await getTest(testId);
      assert.equal(health.runsConsidered, 8);
    });

    describe('retries folded into their test (TRIAGE-5)', () => {
      test('a Playwright job of 8 tests with one flaky test reports 8 tests, 1 flaky, and the history counts that job as passed', async () => {
        const file = `${unique('retry')}.spec.ts`;
        const titles = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'flaky one'];
        const jobId = await importReport(playwrightReport(file, titles, 'flaky one'));

        const job = await viewer.client.call(v1.jobs.getJob, { params: { jobId } });
        assert.equal(job.progress.total, 9, 'every attempt is still a run');
        assert.equal(job.progress.failed, 1);
        assert.deepEqual(job.progress.tests, { total: 8, passed: 7, failed: 0, broken: 0, skipped: 0, flaky: 1, unfinished: 0 });

        const runs = (await viewer.client.call(v1.runs.listRuns, { query: { projectId: projectA, jobId, limit: 200 } })).items;
        const retried = runs.filter((run) => runs.filter((other) => other.testId === run.testId).length === 2);
        assert.deepEqual(retried.map((run) => run.attempt).sort(), [0, 1]);
        const testId = retried[0]?.testId as string;

        const history = await historyOf(testId);
        assert.equal(history.summary.runs, 2);
        assert.equal(history.outcomes.length, 1);
        const [outcome] = history.outcomes;
        assert.equal(outcome?.jobId, jobId);
        assert.equal(outcome?.verdict, 'flaky');
        assert.equal(outcome?.attempts, 2);
        assert.deepEqual(
          outcome?.runIds,
          [...retried].sort((a, b) => a.attempt - b.attempt).map((run) => run.id),
        );
        assert.equal(outcome?.runId, retried.find((run) => run.attempt === 1)?.id);
        assert.equal(history.outcomeSummary.passRate, 1);
        assert.deepEqual(
          { outcomes: history.outcomeSummary.outcomes, flaky: history.outcomeSummary.flaky, failed: history.outcomeSummary.failed },
          { outcomes: 1, flaky: 1, failed: 0 },
        );
        // Every attempt is still a run of the history, carrying its attempt.
        assert.deepEqual(history.runs.map((run) => run.attempt).sort(), [0, 1]);
      });

      test('POST /testmgmt/testruns takes an attempt; the highest attempt decides, and a run answer carries it', async () => {
        const job = await tester.client.call(v1.jobs.createJob, { body: { projectId: projectA, name: unique('launch-'), testIds: [] } });
        const [flaky, failing, retrying] = [await newTest(), await newTest(), await newTest()];
        const post = (testId: string, attempt: number, verdict?: 'passed' | 'failed' | 'broken') => {
          server.clock.advance(1000);
          const body = { projectId: projectA, jobId: job.id, name: 'run', testId, attempt };
          return tester.client.call(v1.runs.createRun, { body: verdict ? { ...body, verdict } : body });
        };
        // Posted out of order: the attempt, not the arrival, decides.
        await post(flaky, 1, 'passed');
        await post(flaky, 0, 'failed');
        await post(failing, 0, 'passed');
        const last = await post(failing, 1, 'broken');
        assert.equal(last.attempt, 1);
        await post(retrying, 0, 'failed');
        const running = await post(retrying, 1);
        assert.equal(running.attempt, 1);
        const seen = await viewer.client.call(v1.jobs.getJob, { params: { jobId: job.id } });
        assert.deepEqual(seen.progress.tests, { total: 3, passed: 0, failed: 0, broken: 1, skipped: 0, flaky: 1, unfinished: 1 });
        assert.equal((await viewer.client.call(v1.runs.getRun, { params: { testRunId: last.id } })).attempt, 1);

        await assert.rejects(post(flaky, 101, 'passed'), (error: Parameters<typeof firstPointer>[0]) => {
          assert.equal(firstPointer(error), '/body/attempt');
          return true;
        });
        const first = await record(await newTest(), 'passed');
        assert.equal(first.attempt, 0);
      });
    });

    describe('health (TRIAGE-6)', () => {
      test('a test alternating pass and fail is flaky; one that passes, then fails 10 times in a row, is broken and not flaky', async () => {
        const alternating = await newTest();
        for (let i = 0; i < 10; i++) await record(alternating, i % 2 === 0 ? 'passed' : 'failed', { branch: 'main' });
        const flaky = (await getTest(alternating)).health;
        assert.equal(flaky.state, 'flaky');
        assert.equal(flaky.runsConsidered, 10);
        assert.equal(flaky.flakyScore, 0.9, '9 flips in 10 outcomes');
        assert.equal(flaky.quarantine, null);

        const breaking = await newTest();
        await record(breaking, 'passed', { branch: 'main' });
        for (let i = 0; i < 10; i++) await record(breaking, i % 2 === 0 ? 'failed' : 'broken', { branch: 'main' });
        const broken = (await getTest(breaking)).health;
        assert.deepEqual(core(broken), { state: 'broken', flakyScore: 0, runsConsidered: 11, quarantine: null });
        assert.deepEqual((await historyOf(breaking)).health, broken);

        // Fixed: one pass ends the streak; a break and its fix are no flips (docs/triage.md).
        await record(breaking, 'passed', { branch: 'main' });
        assert.deepEqual(core((await getTest(breaking)).health), { state: 'stable', flakyScore: 0, runsConsidered: 12, quarantine: null });
      });

      test('a job that becomes an incident at its 20th failure leaves out of the flaky score the tests it failed before', async () => {
        const earlier = await newTest();
        for (let i = 0; i < 4; i++) await record(earlier, 'passed', { branch: 'main' });
        const job = await tester.client.call(v1.jobs.createJob, { body: { projectId: projectA, testIds: [] } });
        const fail = async (testId: string) => {
          server.clock.advance(1000);
          await tester.client.call(v1.runs.createRun, {
            body: {
              projectId: projectA,
              name: 'run',
              testId,
              jobId: job.id,
              branch: 'main',
              verdict: 'failed',
              results: { steps: [{ title: 'connect', status: 'failed', error: 'connect ECONNREFUSED 10.0.0.7:5432' }] },
            },
          });
        };
        await fail(earlier);
        // Before the outage is known, its failure is a flip: 1 in 5 outcomes, though no monitor fires on a fresh failure (TRIAGE-11).
        assert.deepEqual(core((await getTest(earlier)).health), { state: 'stable', flakyScore: 0.2, runsConsidered: 5, quarantine: null });
        for (let i = 0; i < 18; i++) await fail(await newTest());
        assert.equal(
          (await viewer.client.call(v1.jobs.getJob, { params: { jobId: job.id } })).incident,
          null,
          '19 failures: no incident yet',
        );
        await fail(await newTest());
        assert.equal((await viewer.client.call(v1.jobs.getJob, { params: { jobId: job.id } })).incident?.failedRuns, 20);
        // The 20th failure made the job an incident: the first test's failure in it no longer counts.
        assert.deepEqual(core((await getTest(earlier)).health), { state: 'stable', flakyScore: 0, runsConsidered: 4, quarantine: null });
        assert.deepEqual((await historyOf(earlier)).health, (await getTest(earlier)).health);
      });

      test('flips count only between outcomes of one branch; a commit with both verdicts counts', async () => {
        const testId = await newTest();
        // Two branches, each steady: no flakiness, though the outcomes alternate in time.
        for (let i = 0; i < 6; i++) await record(testId, i % 2 === 0 ? 'passed' : 'failed', { branch: i % 2 === 0 ? 'main' : 'feature' });
        assert.equal((await getTest(testId)).health.state, 'stable');
        assert.equal((await getTest(testId)).health.flakyScore, 0);

        const rerun = await newTest();
        for (let i = 0; i < 9; i++) await record(rerun, 'passed', { branch: 'main', commit: `c${i}` });
        // Elsewhere: the project's jobs ran on main, so health is scored there and another branch counts for nothing (TRIAGE-11).
        await record(rerun, 'failed', { branch: 'other', commit: 'c8' });
        assert.deepEqual(core((await getTest(rerun)).health), { state: 'stable', flakyScore: 0, runsConsidered: 9, quarantine: null });
        // The same commit, run again on main, fails: a commit with both verdicts (and a flip) fires the retry monitor.
        await record(rerun, 'failed', { branch: 'main', commit: 'c8' });
        const health = (await getTest(rerun)).health;
        assert.deepEqual(core(health), { state: 'flaky', flakyScore: 0.2, runsConsidered: 10, quarantine: null });
        assert.equal(health.monitor, 'retry');
      });

      test('GET /testmgmt/tests sorts by flaky score with sort=flaky and filters by health=', async () => {
        // On main: the project's jobs ran there, so health is scored there (TRIAGE-11).
        const main = { branch: 'main' };
        const steady = await newTest();
        await record(steady, 'passed', main);
        await record(steady, 'passed', main);
        const shaky = await newTest();
        for (const verdict of ['passed', 'failed', 'passed', 'passed'] as const) await record(shaky, verdict, main);
        const shakier = await newTest();
        for (let i = 0; i < 12; i++) await record(shakier, i % 2 === 0 ? 'passed' : 'failed', main);

        const sorted = (await listTests({ sort: 'flaky' })).items;
        const scores = sorted.map((t) => t.health.flakyScore);
        assert.deepEqual(
          scores,
          [...scores].sort((a, b) => b - a),
          'highest score first',
        );
        const at = (id: string) => sorted.findIndex((t) => t.id === id);
        assert.ok(at(shakier) < at(shaky) && at(shaky) < at(steady));
        assert.equal(sorted[at(shakier)]?.health.flakyScore, 0.917, '11 flips in 12 outcomes');

        // Paged two at a time, the same order.
        const paged: string[] = [];
        let cursor: string | undefined;
        do {
          const page = await viewer.client.call(v1.tests.listTests, {
            query: { projectId: projectA, sort: 'flaky', limit: 2, ...(cursor ? { cursor } : {}) },
          });
          paged.push(...page.items.map((t) => t.id));
          cursor = page.nextCursor ?? undefined;
        } while (cursor);
        assert.deepEqual(
          paged,
          sorted.map((t) => t.id),
        );

        const flakyOnes = (await listTests({ health: 'flaky' })).items;
        assert.ok(flakyOnes.every((t) => t.health.state === 'flaky'));
        assert.ok(flakyOnes.some((t) => t.id === shakier) && !flakyOnes.some((t) => t.id === steady));
        const stableOnes = (await listTests({ health: 'stable' })).items;
        assert.ok(stableOnes.some((t) => t.id === steady) && !stableOnes.some((t) => t.id === shakier));
        // A test that never ran is stable.
        const fresh = await newTest();
        assert.ok((await listTests({ health: 'stable' })).items.some((t) => t.id === fresh));
        assert.ok((await listTests({ health: 'broken' })).items.every((t) => t.health.state === 'broken'));
      });
    });

    describe('PUT and DELETE /testmgmt/tests/{testId}/quarantine, GET /projects/{projectId}/quarantine', () => {
      const quarantine = (testId: string, body: { owner: string; reason: string; expiresAt?: string }, client = tester.client) =>
        client.call(v1.tests.quarantineTest, { params: { testId }, body });
      const quarantined = (projectId = projectA, client = viewer.client) =>
        client.call(v1.tests.listQuarantines, { params: { projectId } });

      test('quarantines for 14 days by default, shows it on the test and in the list, audited; releases it', async () => {
        const testId = await newTest();
        const answer = await quarantine(testId, { owner: 'qa@example.com', reason: 'Times out on CI' });
        const expiresAt = new Date(server.clock.now.getTime() + 14 * DAY).toISOString();
        assert.deepEqual(answer, {
          testId,
          fullName: null,
          name: answer.name,
          owner: 'qa@example.com',
          reason: 'Times out on CI',
          expiresAt,
          expired: false,
          state: 'quarantined',
        });
        assert.deepEqual((await getTest(testId)).health.quarantine, {
          owner: 'qa@example.com',
          reason: 'Times out on CI',
          expiresAt,
          expired: false,
        });
        assert.ok((await quarantined()).items.some((entry) => entry.testId === testId && !entry.expired));
        assert.ok((await listTests({ health: 'quarantined' })).items.some((t) => t.id === testId));
        const audit = await server.admin.client.call(v1.users.listAuditLog, { query: { action: 'test.quarantine', targetId: testId } });
        assert.equal(audit.items[0]?.details.owner, 'qa@example.com');

        // Renewed: the same test, a new owner and expiry.
        const later = new Date(server.clock.now.getTime() + 30 * DAY).toISOString();
        assert.equal((await quarantine(testId, { owner: 'dev@example.com', reason: 'Fixing it', expiresAt: later })).expiresAt, later);
        assert.equal((await getTest(testId)).health.quarantine?.owner, 'dev@example.com');

        await tester.client.call(v1.tests.releaseTest, { params: { testId } });
        assert.equal((await getTest(testId)).health.quarantine, null);
        assert.ok(!(await quarantined()).items.some((entry) => entry.testId === testId));
        const released = await server.admin.client.call(v1.users.listAuditLog, { query: { action: 'test.release', targetId: testId } });
        assert.equal(released.items.length, 1);
        await assert.rejects(tester.client.call(v1.tests.releaseTest, { params: { testId } }), isProblem(404, 'NOT_FOUND'));
      });

      test('refuses an expiry in the past or beyond 365 days, and empty fields, with 400', async () => {
        const testId = await newTest();
        const cases: [Record<string, string>, string][] = [
          [{ owner: 'a', reason: 'b', expiresAt: new Date(server.clock.now.getTime() - 1000).toISOString() }, '/body/expiresAt'],
          [{ owner: 'a', reason: 'b', expiresAt: new Date(server.clock.now.getTime() + 366 * DAY).toISOString() }, '/body/expiresAt'],
          [{ owner: '', reason: 'b' }, '/body/owner'],
          [{ owner: 'a', reason: '' }, '/body/reason'],
        ];
        for (const [body, pointer] of cases) {
          await assert.rejects(
            quarantine(testId, body as { owner: string; reason: string }),
            (error: Parameters<typeof firstPointer>[0]) => {
              assert.equal(firstPointer(error), pointer);
              return true;
            },
          );
        }
        assert.equal((await getTest(testId)).health.quarantine, null);
        // 365 days is allowed.
        const limit = new Date(server.clock.now.getTime() + 365 * DAY).toISOString();
        assert.equal((await quarantine(testId, { owner: 'a', reason: 'b', expiresAt: limit })).expiresAt, limit);
      });

      test("a viewer may not quarantine; another project's test is as unknown as a missing one", async () => {
        const testId = await newTest();
        await assert.rejects(quarantine(testId, { owner: 'a', reason: 'b' }, viewer.client), isProblem(403, 'FORBIDDEN'));
        const foreign = await newTest(projectB);
        await assert.rejects(quarantine(foreign, { owner: 'a', reason: 'b' }), isProblem(404, 'NOT_FOUND'));
        await assert.rejects(tester.client.call(v1.tests.releaseTest, { params: { testId: foreign } }), isProblem(404, 'NOT_FOUND'));
        await assert.rejects(quarantined(projectB), isProblem(404, 'NOT_FOUND'));
        await quarantine(foreign, { owner: 'b', reason: 'theirs' }, outsider.client);
        assert.ok(!(await quarantined()).items.some((entry) => entry.testId === foreign));
      });

      test('a quarantine ends by itself when its time passes: listed as expired, after the active ones, until released', async () => {
        const { id: projectId } = await server.admin.client.call(v1.projects.createProject, {
          body: { key: unique('Q').toUpperCase().slice(0, 10), name: 'Q' },
        });
        const [soon, later] = [await newTest(projectId), await newTest(projectId)];
        await server.admin.client.call(v1.tests.quarantineTest, {
          params: { testId: soon },
          body: { owner: 'a', reason: 'short', expiresAt: new Date(server.clock.now.getTime() + DAY).toISOString() },
        });
        await server.admin.client.call(v1.tests.quarantineTest, { params: { testId: later }, body: { owner: 'b', reason: 'long' } });
        const list = () => server.admin.client.call(v1.tests.listQuarantines, { params: { projectId } });
        assert.deepEqual(
          (await list()).items.map((entry) => [entry.testId, entry.expired]),
          [
            [later, false],
            [soon, false],
          ],
        );
        server.clock.advance(2 * DAY);
        assert.deepEqual(
          (await list()).items.map((entry) => [entry.testId, entry.expired]),
          [
            [later, false],
            [soon, true],
          ],
        );
        assert.equal((await server.admin.client.call(v1.tests.getTest, { params: { testId: soon } })).health.quarantine?.expired, true);
        const active = await server.admin.client.call(v1.tests.listTests, { query: { projectId, health: 'quarantined' } });
        assert.deepEqual(
          active.items.map((t) => t.id),
          [later],
        );
      });
    });
  });
}
