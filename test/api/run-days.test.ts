import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { v1 } from '../../src/client/index.ts';
import { type JobRunSummary, jobRunSummaries } from '../../src/server/db/repositories/jobs.ts';
import { sweepRetention } from '../../src/server/services/operations/retention.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createProject, createUser, type TestUser, unique } from '../helpers/factories.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

// The dashboard's rollups (TRIAGE-8): every path that writes runs keeps `run_days` (migration 0023)
// equal to what aggregating the runs themselves gives, with TRIAGE-5's rule (a failed attempt that a
// later attempt of its test in its job superseded is not a failure) read from the runs directly, and
// `group_days` (migration 0025) equal to the failure occurrences counted per group and day, and
// `job_rollups` (migration 0035, SCALE-11), as the jobs views read it, equal to the jobs' runs recounted.

const DAY = 86_400_000;
const ago = (days: number) => new Date(Date.now() - days * DAY).toISOString();

/** A day's row with its counts as numbers (PostgreSQL answers bigint sums as text) and its summed length rounded. */
function dayRow(r: Record<string, unknown>) {
  return {
    project_id: String(r.project_id),
    day: String(r.day),
    branch: String(r.branch),
    runs: Number(r.runs),
    passed: Number(r.passed),
    failed: Number(r.failed),
    skipped: Number(r.skipped),
    // SQLite sums lengths from julianday(): equal to the millisecond, not to the last bit.
    duration_sum: Math.round(Number(r.duration_sum)),
    durations: Number(r.durations),
  };
}

for (const dialect of DIALECTS) {
  describe(`[${dialect}] the dashboard's daily rollup (TRIAGE-8)`, () => {
    let server: TestServer;
    let manager: TestUser;
    let projectId = '';

    before(async () => {
      server = await startTestServer(dialect, { ATTEST_RETENTION_INTERVAL_MINUTES: '0' });
      manager = await createUser(server, ['manager']);
      projectId = (await createProject(server, unique('Rollup '))).id;
      await server.admin.client.call(v1.projects.addMember, { params: { projectId, email: manager.email } });
    });
    after(() => server.close());

    /** The rollup's rows (those with runs), as the dashboard reads them. */
    const rollup = async () => {
      const rows = await server.app.attest.db
        .selectFrom('run_days')
        .select(['project_id', 'day', 'branch', 'runs', 'passed', 'failed', 'skipped', 'duration_sum', 'durations'])
        .where('runs', '>', 0)
        .orderBy('project_id')
        .orderBy('day')
        .orderBy('branch')
        .execute();
      return rows.map(dayRow);
    };

    /** The same figures aggregated from the runs, superseded attempts found by looking for later ones. */
    const fromRuns = async () => {
      const duration = dialect === 'postgres' ? sql`r.duration_ms` : sql`(julianday(r.finished_at) - julianday(r.started_at)) * 86400000.0`;
      const rows = await sql<Record<string, number | string>>`
        select r.project_id, substr(r.finished_at, 1, 10) as day, coalesce(r.branch, '') as branch, count(*) as runs,
          sum(case when r.verdict = 'passed' then 1 else 0 end) as passed,
          sum(case when r.verdict in ('failed', 'broken') and (r.job_id is null or r.test_id is null or not exists (
            select 1 from test_runs later where later.job_id = r.job_id and later.test_id = r.test_id and later.attempt > r.attempt
          )) then 1 else 0 end) as failed,
          sum(case when r.verdict = 'skipped' then 1 else 0 end) as skipped,
          coalesce(sum(${duration}), 0) as duration_sum, count(${duration}) as durations
        from test_runs r where r.status = 'completed' and r.finished_at is not null
        group by r.project_id, substr(r.finished_at, 1, 10), coalesce(r.branch, '')
        order by r.project_id, day, branch`.execute(server.app.attest.db);
      return rows.rows.map(dayRow);
    };

    /** The top groups' rollup (migration 0025): its rows with occurrences, counts as numbers. */
    const groupRollup = async () =>
      (
        await server.app.attest.db
          .selectFrom('group_days')
          .select(['project_id', 'day', 'group_id', 'occurrences'])
          .where('occurrences', '>', 0)
          .orderBy('project_id')
          .orderBy('day')
          .orderBy('group_id')
          .execute()
      ).map((row) => ({ ...row, occurrences: Number(row.occurrences) }));

    /** The same counted from the occurrences. */
    const fromOccurrences = async () =>
      (
        await sql<{ project_id: string; day: string; group_id: string; occurrences: number | string }>`
          select project_id, substr(at, 1, 10) as day, group_id, count(*) as occurrences from failure_occurrences
          group by project_id, substr(at, 1, 10), group_id order by project_id, day, group_id`.execute(server.app.attest.db)
      ).rows.map((row) => ({ ...row, occurrences: Number(row.occurrences) }));

    /** Every job's run summary as the jobs views read it (the `job_rollups` rows, SCALE-11), and as recounted from the runs. */
    const jobSummaries = async () => {
      const db = server.app.attest.db;
      const jobIds = (await db.selectFrom('jobs').select('id').orderBy('id').execute()).map((row) => row.id);
      const read = await jobRunSummaries(db, jobIds);
      const recounted = new Map<string, JobRunSummary>();
      const runs = await db
        .selectFrom('test_runs')
        .select(['job_id', 'status', 'verdict', 'started_at', 'finished_at', 'created_at'])
        .where('job_id', 'is not', null)
        .execute();
      for (const r of runs) {
        const summary = recounted.get(r.job_id as string) ?? {
          ...{ queued: 0, running: 0, completed: 0, aborted: 0, passed: 0, failed: 0, broken: 0, skipped: 0 },
          ...{ firstStarted: null, lastFinished: null, lastCreated: null },
        };
        summary[r.status] += 1;
        if (r.status === 'completed' && r.verdict) summary[r.verdict] += 1;
        const earliest = (a: string | null, b: string | null) => (a === null || (b !== null && b < a) ? b : a);
        const latest = (a: string | null, b: string | null) => (a === null || (b !== null && b > a) ? b : a);
        summary.firstStarted = earliest(summary.firstStarted, r.started_at);
        summary.lastFinished = latest(summary.lastFinished, r.finished_at);
        summary.lastCreated = latest(summary.lastCreated, r.created_at);
        recounted.set(r.job_id as string, summary);
      }
      const sorted = (map: Map<string, JobRunSummary>) => [...map].sort(([a], [b]) => (a < b ? -1 : 1));
      return { read: sorted(read), recounted: sorted(recounted) };
    };

    const agrees = async (what: string) => {
      assert.deepEqual(await rollup(), await fromRuns(), what);
      const jobs = await jobSummaries();
      assert.deepEqual(jobs.read, jobs.recounted, `${what}: the jobs' rollup`);
      assert.deepEqual(await groupRollup(), await fromOccurrences(), `${what}: the top groups' rollup`);
    };

    const job = async (branch: string) =>
      (await manager.client.call(v1.jobs.createJob, { body: { projectId, testIds: [], branch, name: unique('build-') } })).id;
    const run = (body: Record<string, unknown>) =>
      manager.client.call(v1.runs.createRun, { body: { projectId, name: unique('run-'), ...body } as never });

    test('runs posted finished, retried, completed later, deleted, and their job and test deleted: the rollup follows', async () => {
      const main = await job('main');
      // A retried test: its failed first attempt stops counting once the second is in.
      await run({
        jobId: main,
        testName: 'retried',
        branch: 'main',
        attempt: 0,
        verdict: 'failed',
        startedAt: ago(2.01),
        finishedAt: ago(2),
      });
      await agrees('one failed attempt');
      const second = await run({
        jobId: main,
        testName: 'retried',
        branch: 'main',
        attempt: 1,
        verdict: 'passed',
        startedAt: ago(2.01),
        finishedAt: ago(2),
      });
      await agrees('superseded by a later attempt');
      // Attempts recorded out of order: the earlier one arrives after the later one.
      await run({ jobId: main, testName: 'late', branch: 'main', attempt: 2, verdict: 'passed', startedAt: ago(1.01), finishedAt: ago(1) });
      await run({ jobId: main, testName: 'late', branch: 'main', attempt: 1, verdict: 'broken', startedAt: ago(3.01), finishedAt: ago(3) });
      await agrees('an earlier attempt recorded after a later one');
      // Without a branch, skipped, and one still running that completes later.
      await run({ testName: 'plain', verdict: 'skipped', startedAt: ago(1.5), finishedAt: ago(1.5) });
      const running = await run({ jobId: main, testName: 'running', branch: 'main' });
      await agrees('a running run is not counted');
      await manager.client.call(v1.runs.updateRun, { params: { testRunId: running.id }, body: { status: 'completed', verdict: 'failed' } });
      await agrees('a run completed later is');
      // The attempt that superseded another goes: the failed first attempt counts again.
      await manager.client.call(v1.runs.deleteRun, { params: { testRunId: second.id } });
      await agrees('the superseding attempt deleted');

      for (const branch of ['feature/x', 'feature/y']) {
        const other = await job(branch);
        for (const attempt of [0, 1])
          await run({ jobId: other, testName: 'retried', branch, attempt, verdict: 'failed', startedAt: ago(0.02), finishedAt: ago(0.01) });
      }
      await agrees('other branches');
      // A job deleted through the API goes with its runs.
      const jobs = await manager.client.call(v1.jobs.listJobs, { query: { projectId, limit: 100 } });
      const [x, y] = ['feature/x', 'feature/y'].map((branch) => jobs.items.find((j) => j.branch === branch)?.id as string);
      await manager.client.call(v1.jobs.deleteJob, { params: { jobId: x as string } });
      await agrees('a job deleted with its runs');
      // A job row gone by itself (the foreign key's ON DELETE SET NULL): its runs stay without a job,
      // and each failed attempt counts as failed on its own, as the runs say.
      await server.app.attest.db
        .deleteFrom('jobs')
        .where('id', '=', y as string)
        .execute();
      await agrees('runs left without their job');
      const tests = await manager.client.call(v1.tests.listTests, { query: { projectId, limit: 100 } });
      const late = tests.items.find((t) => t.name === 'late');
      assert.ok(late);
      await manager.client.call(v1.tests.deleteTest, { params: { testId: late.id }, query: { cascade: true } });
      await agrees('the test deleted');
      const rows = await rollup();
      assert.ok(
        rows.some((row) => row.branch === 'feature/y' && row.failed === 2),
        'both failed attempts count once their job is gone',
      );
      assert.ok(
        rows.some((row) => row.branch === '' && row.skipped === 1),
        'a run without a branch is on the rollup',
      );
    });

    test("an import writes a test's attempts in one statement, then its job goes in one: the rollup follows", async () => {
      // Repeated test cases are attempts 0, 1, … of their test in the import's job (docs/imports.md),
      // written in one statement per batch: each statement's rows must supersede one another.
      const cases = [
        '<testcase classname="c" name="rerun" time="1"><failure message="no"/></testcase>',
        '<testcase classname="c" name="rerun" time="1"><failure message="again"/></testcase>',
        '<testcase classname="c" name="rerun" time="1"/>',
        '<testcase classname="c" name="broken" time="1"><error message="x"/></testcase>',
        '<testcase classname="c" name="broken" time="1"><failure message="y"/></testcase>',
        '<testcase classname="c" name="once" time="1"><skipped/></testcase>',
      ];
      const report = `<testsuite name="${unique('suite-')}" tests="6">${cases.join('')}</testsuite>`;
      const started = await manager.client.importReport(
        projectId,
        { name: 'rerun.xml', bytes: new TextEncoder().encode(report) },
        { branch: 'imported' },
      );
      const done = await waitFor(
        async () => {
          const record = await manager.client.call(v1.imports.getImport, { params: { projectId, importId: String(started.id) } });
          return ['queued', 'processing'].includes(record.status) ? undefined : record;
        },
        { timeoutMs: 30_000, message: 'the import finishes' },
      );
      assert.equal(done.status, 'completed');
      await agrees('an import with reruns');
      const imported = (await rollup()).filter((row) => row.branch === 'imported');
      assert.deepEqual(
        imported.map((row) => [row.runs, row.passed, row.failed, row.skipped]),
        [[6, 1, 1, 1]],
        'six runs: the rerun passed at last, the broken test failed once (its last attempt), one skipped',
      );
      await manager.client.call(v1.jobs.deleteJob, { params: { jobId: String(done.jobId) } });
      await agrees('the import job deleted');
    });

    test('a sweep of retention takes expired runs off the rollup; a deleted project takes its rollup with it', async () => {
      const doomed = (await createProject(server, unique('Doomed '))).id;
      await server.admin.client.call(v1.projects.addMember, { params: { projectId: doomed, email: manager.email } });
      await manager.client.call(v1.projects.updateProject, { params: { projectId: doomed }, body: { retention: { days: 30 } } });
      const old = (await manager.client.call(v1.jobs.createJob, { body: { projectId: doomed, testIds: [], branch: 'main', name: 'old' } }))
        .id;
      for (const [attempt, days] of [
        [0, 40],
        [1, 40],
        [2, 5],
        // Left for the project's cascade: deleting attempt 3 would make attempt 2 count again.
        [3, 4],
      ] as const) {
        await manager.client.call(v1.runs.createRun, {
          body: {
            projectId: doomed,
            name: 'r',
            jobId: old,
            testName: 'swept',
            branch: 'main',
            attempt,
            verdict: 'failed',
            startedAt: ago(days + 0.01),
            finishedAt: ago(days),
          },
        });
      }
      await agrees('before the sweep');
      await sweepRetention(server.app.attest);
      await agrees('after the sweep');
      await server.admin.client.call(v1.projects.deleteProject, { params: { projectId: doomed } });
      await agrees('after the project went');
      const left = await server.app.attest.db.selectFrom('run_days').select('project_id').where('project_id', '=', doomed).execute();
      assert.deepEqual(left, []);
    });

    test('the dashboard reads the rollup: per day on a branch and over all branches, failures of superseded attempts left out', async () => {
      const dashboard = await manager.client.call(v1.dashboard.getDashboard, { params: { projectId }, query: { days: 7 } });
      const onMain = await manager.client.call(v1.dashboard.getDashboard, { params: { projectId }, query: { days: 7, branch: 'main' } });
      const expected = (await fromRuns()).filter((row) => row.project_id === projectId);
      for (const [answer, rows] of [
        [dashboard, expected],
        [onMain, expected.filter((row) => row.branch === 'main')],
      ] as const) {
        for (const point of answer.daily) {
          const ofDay = rows.filter((row) => row.day === point.day);
          const sum = (key: 'runs' | 'passed' | 'failed' | 'skipped') => ofDay.reduce((total, row) => total + row[key], 0);
          assert.deepEqual(
            [point.runs, point.passed, point.failed, point.skipped],
            [sum('runs'), sum('passed'), sum('failed'), sum('skipped')],
            point.day,
          );
        }
        assert.ok(answer.daily.some((point) => point.runs > 0));
      }
      // The top groups over all branches come from group_days, on a branch from the occurrences: both
      // count the window's occurrences of each group, trend and total.
      const since = dashboard.since;
      for (const [answer, branch] of [
        [dashboard, null],
        [onMain, 'main'],
      ] as const) {
        const occurrences = (await server.app.attest.db.selectFrom('failure_occurrences').selectAll().execute()).filter(
          (o) => o.project_id === projectId && o.at >= since && (branch === null || o.branch === branch),
        );
        assert.ok(answer.topGroups.length > 0, `${branch ?? 'every branch'}: some group failed runs`);
        for (const group of answer.topGroups) {
          const mine = occurrences.filter((o) => o.group_id === group.id);
          assert.equal(group.occurrences, mine.length, group.title);
          for (const point of group.trend)
            assert.equal(point.occurrences, mine.filter((o) => o.at.startsWith(point.day)).length, point.day);
        }
      }
    });
  });
}
