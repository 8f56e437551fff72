import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { BodyOf, ReplyOf } from '../../src/api/endpoint.ts';
import { type ApiError, v1 } from '../../src/client/index.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createProject, createUser, type ServerWithTwoProjects, serverWithTwoProjects, unique } from '../helpers/factories.ts';
import { firstPointer, isProblem } from '../helpers/problems.ts';
import { createOneStepTest } from '../helpers/records.ts';

type Progress = ReplyOf<typeof v1.jobs.createJob>['progress'];

/** The run counts of a job's `progress`, in the order the API writes them. */
const RUN_COUNTS = ['total', 'queued', 'running', 'completed', 'aborted', 'passed', 'failed', 'broken', 'skipped'] as const;

/**
 * That `job` is `status` and its whole `progress` is what `counts` names, every run count it does
 * not name zero (so a count missing from the answer, or one too many, fails too).
 */
function assertJob(job: { status: string; progress: Progress }, status: string, counts: Partial<Progress> & Pick<Progress, 'tests'>) {
  assert.equal(job.status, status);
  assert.deepEqual(job.progress, {
    ...(Object.fromEntries(RUN_COUNTS.map((count) => [count, 0])) as Record<(typeof RUN_COUNTS)[number], number>),
    ...counts,
  });
}

for (const dialect of DIALECTS) {
  describe(`[${dialect}] jobs`, () => {
    let { server, projectA, projectB, tester, viewer, outsider } = {} as ServerWithTwoProjects;
    before(async () => {
      ({ server, projectA, projectB, tester, viewer, outsider } = await serverWithTwoProjects(dialect));
    });
    after(() => server.close());

    const newTest = (name = unique('test-'), projectId = projectA) => createOneStepTest(server.admin.client, projectId, name);
    const newDevice = async (labels: string[]) => {
      const id = unique('dev-');
      await server.admin.client.call(v1.devices.registerDevice, { body: { id, name: id, platform: 'android', labels } });
      return id;
    };
    const createJob = (body: Omit<BodyOf<typeof v1.jobs.createJob>, 'projectId'>, client = tester.client) =>
      client.call(v1.jobs.createJob, { body: { projectId: projectA, ...body } });
    const runsOf = async (jobId: string) =>
      (await viewer.client.call(v1.runs.listRuns, { query: { projectId: projectA, jobId, limit: 200 } })).items;
    const move = (testRunId: string, body: BodyOf<typeof v1.runs.updateRun>) =>
      tester.client.call(v1.runs.updateRun, { params: { testRunId }, body });

    describe('POST /testmgmt/jobs', () => {
      test('fans out into one queued run per test and device, resolving devices from ids and labels', async () => {
        const lab = unique('lab-');
        const other = unique('lab-');
        const onlyLab = await newDevice([lab]);
        const both = await newDevice([lab, other]);
        await newDevice([other]);
        const named = await newDevice([]);
        const login = await newTest('Login');
        const search = await newTest('Search');

        const job = await createJob({
          name: 'Nightly',
          testIds: [login, search],
          deviceIds: [named, both],
          deviceLabels: [lab],
          environment: 'staging',
          build: '2026.11.22',
        });
        assert.equal(job.name, 'Nightly');
        assertJob(job, 'queued', {
          total: 6,
          queued: 6,
          // Per test and device (TRIAGE-5): the fan-out's six runs are six tests in the job, none finished.
          tests: { total: 6, passed: 0, failed: 0, broken: 0, skipped: 0, flaky: 0, unfinished: 6 },
        });
        assert.deepEqual(job.testIds, [login, search]);
        assert.deepEqual(job.deviceLabels, [lab]);

        const runs = await runsOf(job.id);
        const pairs = runs.map((r) => `${r.testId}@${r.deviceId}`).sort();
        const expected = [login, search].flatMap((t) => [named, both, onlyLab].map((d) => `${t}@${d}`)).sort();
        assert.deepEqual(pairs, expected);
        for (const run of runs) {
          assert.equal(run.status, 'queued');
          assert.equal(run.jobId, job.id);
          assert.equal(run.name, run.testId === login ? 'Login' : 'Search');
          assert.equal(run.environment, 'staging');
          assert.equal(run.build, '2026.11.22');
          assert.equal(run.startedAt, null);
        }
      });

      test('makes one run per test without a device when no device is asked for, and names itself after its tests', async () => {
        const first = await newTest('Checkout');
        const second = await newTest('Refund');
        const job = await createJob({ testIds: [first, second] });
        assert.equal(job.name, 'Checkout and 1 more');
        const runs = await runsOf(job.id);
        assert.deepEqual(
          runs.map((r) => r.deviceId),
          [null, null],
        );
        assert.deepEqual(runs.map((r) => r.testId).sort(), [first, second].sort());
      });

      test('answers 400 naming the entry for unknown or foreign tests, unknown devices and unmatched labels', async () => {
        const mine = await newTest();
        const foreign = await newTest('Foreign', projectB);
        const cases: [Omit<BodyOf<typeof v1.jobs.createJob>, 'projectId'>, string][] = [
          [{ testIds: [mine, foreign] }, '/body/testIds/1'],
          [{ testIds: [mine, '00000000-0000-4000-8000-000000000000'] }, '/body/testIds/1'],
          [{ testIds: [mine], deviceIds: ['no-such-device'] }, '/body/deviceIds/0'],
          [{ testIds: [mine], deviceLabels: [unique('nobody-')] }, '/body/deviceLabels/0'],
          [{ testIds: [mine, mine] }, '/body/testIds'],
        ];
        for (const [body, pointer] of cases) {
          await assert.rejects(createJob(body), (e: ApiError) => {
            assert.equal(e.status, 400, pointer);
            assert.equal(firstPointer(e), pointer);
            return true;
          });
        }
        const jobs = await viewer.client.call(v1.jobs.listJobs, { query: { projectId: projectA, limit: 200 } });
        assert.ok(!jobs.items.some((j) => j.testIds.includes(foreign)));
      });

      test('a launch: testIds [] makes an empty job that runs join by jobId, tests found or created once by testName (IMP-3)', async () => {
        const key = unique('launch-');
        const job = await createJob({ name: 'Playwright launch', testIds: [], idempotencyKey: key, branch: 'main' });
        assert.equal(job.progress.total, 0);
        const again = await createJob({ name: 'Playwright launch', testIds: [], idempotencyKey: key, branch: 'main' });
        assert.equal(again.id, job.id, 'a retried create answers the same job');
        await assert.rejects(createJob({ name: 'Other', testIds: [], idempotencyKey: key }), (e: ApiError) => e.status === 409);

        const fullName = unique('login.spec.ts › Login › ');
        const start = (idempotencyKey: string, body: Partial<BodyOf<typeof v1.runs.createRun>> = {}) =>
          tester.client.call(v1.runs.createRun, {
            body: { projectId: projectA, name: 'signs in', testName: fullName, jobId: job.id, idempotencyKey, ...body },
          });
        const first = await start(unique('r-'));
        const second = await start(unique('r-'));
        assert.ok(first.testId);
        assert.equal(second.testId, first.testId, 'the same full name is the same test');
        assert.equal(first.jobId, job.id);
        const test = await tester.client.call(v1.tests.getTest, { params: { testId: first.testId as string } });
        assert.equal(test.name, fullName);
        assert.equal((await runsOf(job.id)).length, 2);

        const mine = await newTest();
        await assert.rejects(
          start(unique('r-'), { testId: mine }),
          (e: ApiError) => e.status === 400 && firstPointer(e) === '/body/testName',
        );
        const foreignJob = await server.admin.client.call(v1.jobs.createJob, { body: { projectId: projectB, testIds: [] } });
        await assert.rejects(
          start(unique('r-'), { jobId: foreignJob.id }),
          (e: ApiError) => e.status === 400 && firstPointer(e) === '/body/jobId',
        );
        const cancelled = await createJob({ testIds: [] });
        assert.equal(cancelled.status, 'queued', 'a launch without runs waits for them');
        await tester.client.call(v1.jobs.cancelJob, { params: { jobId: cancelled.id } });
        await assert.rejects(start(unique('r-'), { jobId: cancelled.id }), (e: ApiError) => e.status === 409);
      });

      test('refuses a fan-out over 10 000 runs with 400, creating nothing', async () => {
        const project = (await createProject(server, 'Big')).id;
        const label = unique('farm-');
        await Promise.all(Array.from({ length: 100 }, () => newDevice([label])));
        const testIds = await Promise.all(Array.from({ length: 101 }, (_, i) => newTest(`T${i}`, project)));
        await assert.rejects(
          server.admin.client.call(v1.jobs.createJob, { body: { projectId: project, testIds, deviceLabels: [label] } }),
          (e: ApiError) => {
            assert.equal(e.status, 400);
            assert.match(String(e.problem.detail), /10100 runs/);
            return true;
          },
        );
        const runs = await server.admin.client.call(v1.runs.listRuns, { query: { projectId: project } });
        assert.deepEqual(runs.items, []);
        // Exactly at the bound it is accepted, in one transaction of chunked inserts.
        const job = await server.admin.client.call(v1.jobs.createJob, {
          body: { projectId: project, testIds: testIds.slice(0, 100), deviceLabels: [label] },
        });
        assert.equal(job.progress.total, 10_000);
      });

      test('refuses a viewer with 403 and a non-member with 404', async () => {
        const testId = await newTest();
        await assert.rejects(createJob({ testIds: [testId] }, viewer.client), isProblem(403, 'FORBIDDEN'));
        await assert.rejects(createJob({ testIds: [testId] }, outsider.client), isProblem(404, 'NOT_FOUND'));
      });
    });

    describe('GET /testmgmt/jobs/{jobId}', () => {
      test('derives status and progress from its runs as they start and finish', async () => {
        const testIds = [await newTest(), await newTest(), await newTest(), await newTest()];
        const job = await createJob({ testIds });
        const runs = await runsOf(job.id);
        const get = () => viewer.client.call(v1.jobs.getJob, { params: { jobId: job.id } });

        await move(runs[0]?.id as string, { status: 'running' });
        let seen = await get();
        assert.equal(seen.status, 'running');
        assert.equal(seen.progress.running, 1);
        assert.equal(seen.progress.queued, 3);
        assert.ok(seen.startedAt);

        server.clock.advance(1000);
        await move(runs[0]?.id as string, { status: 'completed', verdict: 'passed' });
        for (const [i, verdict] of [
          [1, 'failed'],
          [2, 'broken'],
        ] as const) {
          await move(runs[i]?.id as string, { status: 'running' });
          await move(runs[i]?.id as string, { status: 'completed', verdict });
        }
        seen = await get();
        assertJob(seen, 'running', {
          total: 4,
          queued: 1,
          completed: 3,
          passed: 1,
          failed: 1,
          broken: 1,
          tests: { total: 4, passed: 1, failed: 1, broken: 1, skipped: 0, flaky: 0, unfinished: 1 },
        });
        assert.equal(seen.finishedAt, null);

        server.clock.advance(1000);
        await move(runs[3]?.id as string, { status: 'aborted' });
        seen = await get();
        assert.equal(seen.status, 'completed');
        assert.equal(seen.progress.aborted, 1);
        assert.equal(seen.finishedAt, server.clock.now.toISOString());
      });

      test('stays queued, without a start time, while runs are only aborted and none has started', async () => {
        const job = await createJob({ testIds: [await newTest(), await newTest(), await newTest()] });
        const runs = await runsOf(job.id);
        const get = () => viewer.client.call(v1.jobs.getJob, { params: { jobId: job.id } });

        await move(runs[0]?.id as string, { status: 'aborted' });
        let seen = await get();
        assert.equal(seen.status, 'queued');
        assert.equal(seen.startedAt, null);
        assert.equal(seen.finishedAt, null);
        assert.deepEqual([seen.progress.queued, seen.progress.running, seen.progress.aborted], [2, 0, 1]);
        const listed = await viewer.client.call(v1.jobs.listJobs, { query: { projectId: projectA, limit: 200 } });
        assert.equal(listed.items.find((j) => j.id === job.id)?.status, 'queued');

        server.clock.advance(1000);
        await move(runs[1]?.id as string, { status: 'running' });
        seen = await get();
        assert.equal(seen.status, 'running');
        assert.equal(seen.startedAt, server.clock.now.toISOString());
      });

      test("answers 404 for another project's job exactly as for an unknown one", async () => {
        const job = await createJob({ testIds: [await newTest()] });
        const hidden = await outsider.client.call(v1.jobs.getJob, { params: { jobId: job.id } }).catch((e: ApiError) => e);
        const missing = await outsider.client
          .call(v1.jobs.getJob, { params: { jobId: '00000000-0000-4000-8000-000000000000' } })
          .catch((e: ApiError) => e);
        assert.equal((hidden as ApiError).status, 404);
        const { instance: _h, ...hiddenBody } = (hidden as ApiError).problem;
        const { instance: _m, ...missingBody } = (missing as ApiError).problem;
        assert.deepEqual(hiddenBody, missingBody);
      });
    });

    describe('GET /testmgmt/jobs', () => {
      test("lists a project's jobs newest first with their progress, paging with a cursor", async () => {
        const project = (await createProject(server, 'Jobs')).id;
        const member = await createUser(server, ['tester'], { projects: [project] });
        const testId = await newTest('Listed', project);
        const ids: string[] = [];
        for (let i = 0; i < 3; i++) {
          server.clock.advance(1000);
          ids.push((await member.client.call(v1.jobs.createJob, { body: { projectId: project, name: `J${i}`, testIds: [testId] } })).id);
        }
        const first = await member.client.call(v1.jobs.listJobs, { query: { projectId: project, limit: 2 } });
        const rest = await member.client.call(v1.jobs.listJobs, {
          query: { projectId: project, limit: 2, cursor: first.nextCursor as string },
        });
        const items = [...first.items, ...rest.items];
        assert.deepEqual(
          items.map((j) => j.id),
          [...ids].reverse(),
        );
        assert.ok(items.every((j) => j.progress.total === 1 && j.status === 'queued'));
        await assert.rejects(outsider.client.call(v1.jobs.listJobs, { query: { projectId: project } }), isProblem(404, 'NOT_FOUND'));
      });
    });

    describe('POST /testmgmt/jobs/{jobId}/cancel', () => {
      test('aborts the queued runs, leaves the running one to its runner, and marks the job cancelled', async () => {
        const job = await createJob({ testIds: [await newTest(), await newTest(), await newTest()] });
        const runs = await runsOf(job.id);
        await move(runs[0]?.id as string, { status: 'running' });
        const cancelled = await tester.client.call(v1.jobs.cancelJob, { params: { jobId: job.id } });
        assertJob(cancelled, 'cancelled', {
          total: 3,
          running: 1,
          aborted: 2,
          tests: { total: 3, passed: 0, failed: 0, broken: 0, skipped: 0, flaky: 0, unfinished: 3 },
        });
        assert.equal(cancelled.cancelledAt, server.clock.now.toISOString());
        const after = await runsOf(job.id);
        assert.deepEqual(after.map((r) => r.status).sort(), ['aborted', 'aborted', 'running']);
        // An aborted run cannot be started any more; the running one still completes.
        const aborted = after.find((r) => r.status === 'aborted');
        await assert.rejects(move(aborted?.id as string, { status: 'running' }), isProblem(409, 'STATE_CONFLICT'));
        await move(runs[0]?.id as string, { status: 'completed', verdict: 'passed' });
        assert.equal((await viewer.client.call(v1.jobs.getJob, { params: { jobId: job.id } })).status, 'cancelled');
      });

      test('answers 409 for a job already cancelled or completed', async () => {
        const job = await createJob({ testIds: [await newTest()] });
        await tester.client.call(v1.jobs.cancelJob, { params: { jobId: job.id } });
        await assert.rejects(tester.client.call(v1.jobs.cancelJob, { params: { jobId: job.id } }), isProblem(409, 'STATE_CONFLICT'));

        const done = await createJob({ testIds: [await newTest()] });
        const [run] = await runsOf(done.id);
        await move(run?.id as string, { status: 'running' });
        await move(run?.id as string, { status: 'completed', verdict: 'passed' });
        await assert.rejects(tester.client.call(v1.jobs.cancelJob, { params: { jobId: done.id } }), isProblem(409, 'STATE_CONFLICT'));
        assert.equal((await viewer.client.call(v1.jobs.getJob, { params: { jobId: done.id } })).status, 'completed');
      });

      test('refuses a viewer with 403 and a non-member with 404, changing nothing', async () => {
        const job = await createJob({ testIds: [await newTest()] });
        await assert.rejects(viewer.client.call(v1.jobs.cancelJob, { params: { jobId: job.id } }), isProblem(403, 'FORBIDDEN'));
        await assert.rejects(outsider.client.call(v1.jobs.cancelJob, { params: { jobId: job.id } }), isProblem(404, 'NOT_FOUND'));
        assert.equal((await viewer.client.call(v1.jobs.getJob, { params: { jobId: job.id } })).status, 'queued');
      });
    });
  });
}
