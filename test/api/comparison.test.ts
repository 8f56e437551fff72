import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type AttestClient, v1 } from '../../src/client/index.ts';
import { attest } from '../helpers/cli.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { type ServerWithTwoProjects, serverWithTwoProjects, unique } from '../helpers/factories.ts';
import { firstPointer, rejectsWith } from '../helpers/problems.ts';

// TRIAGE-7 and TRIAGE-8: two jobs compared test by test, `attest gate` on that comparison, and the
// project dashboard, all from runs recorded the way a reporter records them (a launch, runs joining
// it with their attempts, each failure with its message).

type Attempt = 'passed' | 'failed' | 'broken' | 'skipped';
/** Per test: its attempts in order, each a verdict or a verdict with the failure's message. */
type Plan = Record<string, (Attempt | [Attempt, string])[]>;

/** A launch on `branch` whose runs are the plan's attempts; closed, so it completes. */
async function recordJob(client: AttestClient, projectId: string, branch: string, plan: Plan): Promise<string> {
  const job = await client.call(v1.jobs.createJob, { body: { projectId, testIds: [], branch, name: unique('build-') } });
  for (const [testName, attempts] of Object.entries(plan)) {
    for (const [attempt, planned] of attempts.entries()) {
      const [verdict, message] = typeof planned === 'string' ? [planned, `${testName} failed on port ${40000 + attempt}`] : planned;
      const failing = verdict === 'failed' || verdict === 'broken';
      await client.call(v1.runs.createRun, {
        body: {
          projectId,
          jobId: job.id,
          name: testName,
          testName,
          branch,
          attempt,
          verdict,
          results: { steps: [{ title: 'check', status: verdict, ...(failing ? { error: message } : {}) }] },
        },
      });
    }
  }
  await client.call(v1.jobs.completeJob, { params: { jobId: job.id } });
  return job.id;
}

const names = (tests: { name: string }[]) => tests.map((t) => t.name).sort();

for (const dialect of DIALECTS) {
  describe(`[${dialect}] comparing jobs and the gate`, () => {
    let { server, projectA, projectB, tester, viewer } = {} as ServerWithTwoProjects;
    let baseJob = '';
    let headJob = '';
    before(async () => {
      ({ server, projectA, projectB, tester, viewer } = await serverWithTwoProjects(dialect));
      baseJob = await recordJob(tester.client, projectA, 'main', {
        'suite › stays green': ['passed'],
        'suite › breaks now': ['passed'],
        'suite › keeps failing': [['failed', 'Expected status 200, received 500 from http://10.0.0.7:8080/api/orders/123']],
        'suite › gets fixed': [['failed', 'Timeout 5000ms exceeded waiting for locator("#save")']],
        'suite › retried into green': ['passed'],
      });
      server.clock.advance(60_000);
      headJob = await recordJob(tester.client, projectA, 'main', {
        'suite › stays green': ['passed'],
        'suite › breaks now': [['failed', 'expect(received).toHaveText(expected) on locator(".total"): expected "12.00", received "0"']],
        'suite › keeps failing': [['failed', 'Expected status 200, received 500 from http://10.0.0.9:8081/api/orders/456']],
        'suite › gets fixed': ['passed'],
        'suite › retried into green': [['failed', 'socket hang up connecting to 10.1.1.1:5432'], 'passed'],
        'suite › brand new': ['passed'],
      });
    });
    after(() => server.close());

    test('against the latest completed job of the branch: new failures, fixed, still failing, flaky, new error groups', async () => {
      const comparison = await viewer.client.call(v1.comparison.compareJobs, { params: { jobId: headJob }, query: { baseBranch: 'main' } });
      assert.equal(comparison.base?.id, baseJob);
      assert.deepEqual(comparison.counts, {
        tests: 6,
        newFailures: 1,
        fixed: 1,
        stillFailing: 1,
        newErrorGroups: 2,
        flaky: 1,
        quarantined: 0,
      });
      assert.deepEqual(names(comparison.newFailures), ['suite › breaks now']);
      assert.equal(comparison.newFailures[0]?.baseVerdict, 'passed');
      assert.equal(comparison.newFailures[0]?.verdict, 'failed');
      assert.ok(comparison.newFailures[0]?.failureGroupId);
      assert.deepEqual(names(comparison.fixed), ['suite › gets fixed']);
      // The same cause with another address, port and order id is the same group: still failing, not new.
      assert.deepEqual(names(comparison.stillFailing), ['suite › keeps failing']);
      assert.deepEqual(names(comparison.flaky), ['suite › retried into green']);
      assert.equal(comparison.flaky[0]?.attempts, 2);
      const groups = comparison.newErrorGroups;
      assert.equal(groups.length, 2);
      const flakyGroup = groups.find((g) => g.flakyOnly);
      assert.equal(flakyGroup?.category, 'network');
      const realGroup = groups.find((g) => !g.flakyOnly);
      assert.equal(realGroup?.id, comparison.newFailures[0]?.failureGroupId);
      assert.equal(realGroup?.tests, 1);
    });

    test('without a base named, the latest completed job on the same branch; with `base`, that job', async () => {
      const implicit = await viewer.client.call(v1.comparison.compareJobs, { params: { jobId: headJob }, query: {} });
      assert.equal(implicit.base?.id, baseJob);
      const explicit = await viewer.client.call(v1.comparison.compareJobs, { params: { jobId: headJob }, query: { base: baseJob } });
      assert.deepEqual(explicit.counts, implicit.counts);
      // The other way round: what the head fixed, the base broke.
      const reversed = await viewer.client.call(v1.comparison.compareJobs, { params: { jobId: baseJob }, query: { base: headJob } });
      assert.deepEqual(names(reversed.newFailures), ['suite › gets fixed']);
      assert.deepEqual(names(reversed.fixed), ['suite › breaks now']);
    });

    test('a first job has no base: every failure is new', async () => {
      const comparison = await viewer.client.call(v1.comparison.compareJobs, { params: { jobId: baseJob }, query: {} });
      assert.equal(comparison.base, null);
      assert.deepEqual(names(comparison.newFailures), ['suite › gets fixed', 'suite › keeps failing']);
      assert.equal(comparison.counts.newErrorGroups, 2);
    });

    test('refusals: a base of another project, the job itself, base with baseBranch; another project answers 404', async () => {
      const elsewhere = await server.admin.client.call(v1.jobs.createJob, { body: { projectId: projectB, testIds: [], name: 'b' } });
      for (const [query, pointer] of [
        [{ base: elsewhere.id }, '/query/base'],
        [{ base: headJob }, '/query/base'],
        [{ base: baseJob, baseBranch: 'main' }, '/query/baseBranch'],
      ] as const) {
        const error = await viewer.client.call(v1.comparison.compareJobs, { params: { jobId: headJob }, query }).catch((e) => e);
        assert.ok(rejectsWith(400, 'INVALID_INPUT')(error), JSON.stringify(query));
        assert.equal(firstPointer(error), pointer);
      }
      const hidden = await viewer.client.call(v1.comparison.compareJobs, { params: { jobId: elsewhere.id }, query: {} }).catch((e) => e);
      assert.ok(rejectsWith(404, 'NOT_FOUND')(hidden));
    });

    test('attest gate: exit 1 with new failures and groups, printed; a quarantine and --allow-flaky let the job through', async () => {
      const env = { ATTEST_URL: server.url, ATTEST_API_KEY: tester.key };
      const failed = await attest(['gate', '--job', headJob, '--base-branch', 'main'], env);
      assert.equal(failed.code, 1, failed.output);
      assert.match(failed.stdout, /new failures:\n\s+suite › breaks now\s+\(passed → failed\)/);
      assert.match(failed.stdout, /gate: failed: 1 new failure, 2 new error groups, 1 flaky test/);

      const json = await attest(['gate', '--job', headJob, '--json'], env);
      assert.equal(json.code, 1);
      const parsed = JSON.parse(json.stdout) as { pass: boolean; comparison: { counts: { newFailures: number } } };
      assert.equal(parsed.pass, false);
      assert.equal(parsed.comparison.counts.newFailures, 1);

      // Quarantine the new failure: it still shows, but no longer counts; the flaky test alone still fails the gate.
      const comparison = await viewer.client.call(v1.comparison.compareJobs, { params: { jobId: headJob }, query: {} });
      const breaking = comparison.newFailures[0]?.testId as string;
      await tester.client.call(v1.tests.quarantineTest, {
        params: { testId: breaking },
        body: { owner: tester.email, reason: 'tracked in SHOP-12' },
      });
      const quarantined = await viewer.client.call(v1.comparison.compareJobs, { params: { jobId: headJob }, query: {} });
      assert.equal(quarantined.counts.newFailures, 0);
      assert.deepEqual(names(quarantined.quarantined), ['suite › breaks now']);
      assert.equal(quarantined.quarantined[0]?.quarantined, true);
      assert.equal(quarantined.counts.newErrorGroups, 1, 'the quarantined test brings no new group');
      const flakyOnly = await attest(['gate', '--job', headJob], env);
      assert.equal(flakyOnly.code, 1, flakyOnly.output);
      assert.match(flakyOnly.stdout, /quarantined \(not counted\):\n\s+suite › breaks now/);
      const allowed = await attest(['gate', '--job', headJob, '--allow-flaky'], env);
      assert.equal(allowed.code, 0, allowed.output);
      assert.match(allowed.stdout, /gate: passed/);
      await tester.client.call(v1.tests.releaseTest, { params: { testId: breaking } });
      const released = await attest(['gate', '--job', headJob, '--allow-flaky'], env);
      assert.equal(released.code, 1, released.output);
    });

    test("attest gate --allow-flaky lets through a new failure of a test whose health was flaky, and says why; a stable test's new failure fails it either way", async () => {
      const env = { ATTEST_URL: server.url, ATTEST_API_KEY: tester.key };
      const [W, S, B] = ['wobbly › sometimes', 'wobbly › steady', 'wobbly › long broken'];
      const jobs: string[] = [];
      const record = async (plan: Plan) => {
        server.clock.advance(60_000);
        jobs.push(await recordJob(tester.client, projectA, 'wobbly', plan));
        return jobs[jobs.length - 1] as string;
      };
      // Before the jobs judged: W once failed then passed on a retry (flaky: the retry monitor, TRIAGE-11), S always
      // passes (stable), B failed 5 times (broken), then was skipped.
      for (const w of ['passed', 'flaky', 'passed', 'passed', 'passed'] as const)
        await record({ [W]: w === 'flaky' ? ['failed', 'passed'] : [w], [S]: ['passed'], [B]: ['failed'] });
      await record({ [W]: ['passed'], [S]: ['passed'], [B]: ['skipped'] });
      const flakyFails = await record({
        [W]: [['failed', 'wobbly: element #cart detached from the DOM']],
        [S]: ['passed'],
        [B]: ['failed'],
      });

      const comparison = await viewer.client.call(v1.comparison.compareJobs, {
        params: { jobId: flakyFails },
        query: { allowFlaky: true },
      });
      const wobbly = comparison.newFailures.find((t) => t.name === W);
      assert.deepEqual([wobbly?.health, wobbly?.counted, wobbly?.reason], ['flaky', false, 'flaky-health']);
      // Broken before the job and failing again: still failing, not new, though the base skipped it.
      assert.deepEqual(
        comparison.stillFailing.map((t) => [t.name, t.health, t.counted, t.reason]),
        [[B, 'broken', false, 'broken']],
      );
      assert.deepEqual(comparison.counted, { tests: 0, errorGroups: 0 });
      assert.equal(comparison.pass, true);
      assert.ok(comparison.newErrorGroups.every((g) => !g.counted && g.reason === 'tests-let-through'));
      const strict = await viewer.client.call(v1.comparison.compareJobs, { params: { jobId: flakyFails }, query: {} });
      assert.deepEqual(
        strict.newFailures.map((t) => [t.name, t.counted, t.reason]),
        [[W, true, 'new-failure']],
      );
      assert.equal(strict.pass, false);

      const allowed = await attest(['gate', '--job', flakyFails, '--allow-flaky'], env);
      assert.equal(allowed.code, 0, allowed.output);
      assert.match(
        allowed.stdout,
        /wobbly › sometimes\s+\(passed → failed, health flaky\) not counted: its health was flaky before this job/,
      );
      assert.match(allowed.stdout, /wobbly › long broken\s+\(skipped → failed, health broken\) not counted: its health was broken/);
      assert.match(allowed.stdout, /gate: passed/);
      const json = JSON.parse((await attest(['gate', '--job', flakyFails, '--allow-flaky', '--json'], env)).stdout) as {
        pass: boolean;
        comparison: { newFailures: { reason: string; counted: boolean }[] };
      };
      assert.equal(json.pass, true);
      assert.deepEqual(
        json.comparison.newFailures.map((t) => [t.counted, t.reason]),
        [[false, 'flaky-health']],
      );
      const plain = await attest(['gate', '--job', flakyFails], env);
      assert.equal(plain.code, 1, plain.output);
      assert.match(plain.stdout, /wobbly › sometimes\s+\(passed → failed, health flaky\) counted: a new failure/);

      // S passed 7 times, then fails: a new failure. (Its stored health, this failure in it, is flaky: 1 flip in 8.)
      const steadyFails = await record({ [W]: ['passed'], [S]: [['failed', 'steady: expected 3 items, got 2']], [B]: ['failed'] });
      for (const args of [[], ['--allow-flaky']]) {
        const gate = await attest(['gate', '--job', steadyFails, ...args], env);
        assert.equal(gate.code, 1, gate.output);
        assert.match(gate.stdout, /wobbly › steady\s+\(passed → failed\) counted: a new failure/);
        assert.match(gate.stdout, /gate: failed: 1 new failure, 1 new error group/);
      }
    });

    test('attest gate exits 2 when it cannot answer', async () => {
      const env = { ATTEST_URL: server.url, ATTEST_API_KEY: tester.key };
      const unknown = await attest(['gate', '--job', '00000000-0000-4000-8000-000000000000'], env);
      assert.equal(unknown.code, 2, unknown.output);
      assert.match(unknown.stderr, /cannot answer: .*404/);
      const both = await attest(['gate', '--job', headJob, '--base', baseJob, '--base-branch', 'main'], env);
      assert.equal(both.code, 2);
      // A job still under way: its unfinished tests are neither failures nor passes yet.
      const open = await tester.client.call(v1.jobs.createJob, {
        body: { projectId: projectA, testIds: [], branch: 'main', name: 'open' },
      });
      await tester.client.call(v1.runs.createRun, {
        body: { projectId: projectA, jobId: open.id, name: 'suite › stays green', testName: 'suite › stays green' },
      });
      const unfinished = await attest(['gate', '--job', open.id], env);
      assert.equal(unfinished.code, 2, unfinished.output);
      assert.match(unfinished.stderr, /is running; gate it once it has completed/);
    });

    test('the dashboard: daily trend, latest jobs with folded tests, top error groups with sparklines', async () => {
      const dashboard = await viewer.client.call(v1.dashboard.getDashboard, {
        params: { projectId: projectA },
        query: { branch: 'main', days: 7 },
      });
      assert.equal(dashboard.days, 7);
      assert.equal(dashboard.daily.length, 7);
      // Base: 3 passed, 2 failed. Head: 4 passed (the retried one's final attempt among them), 2 failed; its failed first attempt is superseded.
      const recorded = dashboard.daily.reduce((sum, day) => sum + day.runs, 0);
      assert.equal(recorded, 12);
      const passed = dashboard.daily.reduce((sum, day) => sum + day.passed, 0);
      const failed = dashboard.daily.reduce((sum, day) => sum + day.failed, 0);
      assert.equal(passed, 7);
      assert.equal(failed, 4);
      assert.deepEqual(
        dashboard.jobs.map((point) => point.job.id),
        [headJob, baseJob],
      );
      const head = dashboard.jobs[0];
      assert.equal(head?.job.progress.tests.total, 6);
      assert.equal(head?.job.progress.tests.flaky, 1);
      assert.equal(head?.passRate, 4 / 6);
      const top = dashboard.topGroups[0];
      assert.ok(top);
      assert.equal(top.occurrences, 2, 'the order failure, in both jobs');
      assert.equal(top.trend.length, 7);
      assert.equal(
        top.trend.reduce((sum, day) => sum + day.occurrences, 0),
        2,
      );
      const elsewhere = await viewer.client.call(v1.dashboard.getDashboard, {
        params: { projectId: projectA },
        query: { branch: 'nowhere' },
      });
      assert.equal(elsewhere.jobs.length, 0);
      assert.equal(elsewhere.topGroups.length, 0);
      assert.equal(elsewhere.days, 14);
      const refused = await viewer.client
        .call(v1.dashboard.getDashboard, { params: { projectId: projectA }, query: { days: 91 } })
        .catch((e) => e);
      assert.ok(rejectsWith(400)(refused));
      const hidden = await viewer.client.call(v1.dashboard.getDashboard, { params: { projectId: projectB }, query: {} }).catch((e) => e);
      assert.ok(rejectsWith(404, 'NOT_FOUND')(hidden));
    });

    test("the dashboard's daily mean duration is the mean of the runs' lengths that day", async () => {
      const finished = Date.now() - 3_600_000;
      for (const seconds of [2, 5]) {
        await tester.client.call(v1.runs.createRun, {
          body: {
            projectId: projectA,
            name: 'suite › timed',
            branch: 'timed',
            verdict: 'passed',
            startedAt: new Date(finished - seconds * 1000).toISOString(),
            finishedAt: new Date(finished).toISOString(),
          },
        });
      }
      const dashboard = await viewer.client.call(v1.dashboard.getDashboard, {
        params: { projectId: projectA },
        query: { branch: 'timed', days: 2 },
      });
      const day = dashboard.daily.find((point) => point.runs > 0);
      assert.equal(day?.day, new Date(finished).toISOString().slice(0, 10));
      assert.equal(day?.runs, 2);
      assert.equal(day?.meanDurationMs, 3500);
    });
  });
}
