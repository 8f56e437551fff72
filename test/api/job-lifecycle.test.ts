import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { BodyOf } from '../../src/api/endpoint.ts';
import { type ApiError, v1 } from '../../src/client/index.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createProject, createUser, type TestUser, twoProjects, unique } from '../helpers/factories.ts';
import { firstPointer } from '../helpers/problems.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

// A launch (a job created with testIds []) is open until its reporter closes it or it idles out
// (JOB-1, JOB-2); jobs and runs carry a CI link (JOB-3); lists take a project key, and a job's runs
// are listed by the job alone (JOB-4).

const IDLE_MINUTES = 30;
const minutes = (n: number) => n * 60_000;

for (const dialect of DIALECTS) {
  describe(`[${dialect}] job lifecycle`, () => {
    let server: TestServer;
    let projectA: string;
    let projectB: string;
    let keyA: string;
    let tester: TestUser;
    let viewer: TestUser;
    let outsider: TestUser;

    before(async () => {
      server = await startTestServer(dialect, { ATTEST_LAUNCH_IDLE_MINUTES: String(IDLE_MINUTES) });
      ({ projectA, projectB, tester, viewer, outsider } = await twoProjects(server));
      keyA = (await viewer.client.call(v1.projects.getProject, { params: { projectId: projectA } })).key;
    });
    after(() => server.close());

    const launch = (body: Partial<BodyOf<typeof v1.jobs.createJob>> = {}) =>
      tester.client.call(v1.jobs.createJob, { body: { projectId: projectA, name: unique('launch-'), testIds: [], ...body } });
    const join = (jobId: string, body: Partial<BodyOf<typeof v1.runs.createRun>> = {}) =>
      tester.client.call(v1.runs.createRun, {
        body: { projectId: projectA, name: unique('test-'), testName: unique('spec.ts › '), jobId, ...body },
      });
    const finish = (testRunId: string, verdict: 'passed' | 'failed' = 'passed') =>
      tester.client.call(v1.runs.updateRun, { params: { testRunId }, body: { status: 'completed', verdict } });
    const getJob = (jobId: string) => viewer.client.call(v1.jobs.getJob, { params: { jobId } });
    const listed = async (jobId: string) => {
      const page = await viewer.client.call(v1.jobs.listJobs, { query: { projectId: projectA, limit: 200 } });
      const job = page.items.find((j) => j.id === jobId);
      assert.ok(job, 'the job is listed');
      return job;
    };
    const complete = (jobId: string, client = tester.client) => client.call(v1.jobs.completeJob, { params: { jobId } });
    const rejects = async (call: Promise<unknown>, status: number, code?: string) =>
      assert.rejects(call, (e: ApiError) => {
        assert.equal(e.status, status);
        if (code) assert.equal(e.code, code);
        return true;
      });

    describe('a launch streamed as the live reporter sends it', () => {
      test('shows running at every poll until the last result and the complete call, then completed once with finishedAt (JOB-1)', async () => {
        const job = await launch({ branch: 'main' });
        assert.equal(job.status, 'queued', 'no run yet');
        assert.equal(job.closedAt, null);
        const seen: string[] = [];
        const poll = async () => {
          const [one, inList] = [await getJob(job.id), await listed(job.id)];
          assert.equal(inList.status, one.status, 'the list says what the job says');
          seen.push(one.status);
          return one;
        };
        for (let i = 0; i < 4; i++) {
          const run = await join(job.id);
          await poll();
          await tester.client.call(v1.results.appendResults, {
            params: { testRunId: run.id },
            body: { steps: [{ key: 'open', title: 'Open the page', status: 'passed' }] },
          });
          await poll();
          await finish(run.id, i === 2 ? 'failed' : 'passed');
          // Between two tests: every run so far has finished, and the launch is still running.
          const between = await poll();
          assert.equal(between.finishedAt, null);
          // A pause before the next test, shorter than the idle timeout.
          server.clock.advance(minutes(IDLE_MINUTES) - 1000);
          await poll();
        }
        assert.deepEqual(new Set(seen), new Set(['running']), `every poll said running: ${seen.join(', ')}`);

        const closed = await complete(job.id);
        assert.equal(closed.status, 'completed');
        assert.ok(closed.closedAt);
        assert.ok(closed.finishedAt);
        assert.deepEqual([closed.progress.total, closed.progress.completed, closed.progress.passed, closed.progress.failed], [4, 4, 3, 1]);
        const runs = (await viewer.client.call(v1.runs.listRuns, { query: { jobId: job.id, limit: 200 } })).items;
        const lastFinish = runs
          .map((r) => r.finishedAt as string)
          .sort()
          .at(-1);
        assert.equal(closed.finishedAt, lastFinish, 'a job finished when its last run did');

        // Completed once: later polls, however far on, answer the same.
        server.clock.advance(minutes(5 * IDLE_MINUTES));
        assert.deepEqual(await getJob(job.id), closed);
        assert.deepEqual(await listed(job.id), closed);
      });

      test('a run still running when the launch is closed keeps it running until that run finishes', async () => {
        const job = await launch();
        const first = await join(job.id);
        await finish(first.id);
        const last = await join(job.id);
        const closed = await complete(job.id);
        assert.equal(closed.status, 'running');
        assert.ok(closed.closedAt);
        assert.equal(closed.finishedAt, null);
        await finish(last.id);
        const done = await getJob(job.id);
        assert.equal(done.status, 'completed');
        assert.equal(done.closedAt, closed.closedAt);
        assert.equal(done.finishedAt, (await viewer.client.call(v1.runs.getRun, { params: { testRunId: last.id } })).finishedAt);
      });

      test('a launch with tests named by the job keeps the old rule: completed when its runs are', async () => {
        const testId = (
          await tester.client.call(v1.tests.createTest, {
            body: { projectId: projectA, name: unique('t-'), steps: [{ action: 'a', expected: 'b' }] },
          })
        ).id;
        const job = await tester.client.call(v1.jobs.createJob, { body: { projectId: projectA, testIds: [testId] } });
        const [run] = (await viewer.client.call(v1.runs.listRuns, { query: { jobId: job.id } })).items;
        assert.ok(run);
        await tester.client.call(v1.runs.updateRun, { params: { testRunId: run.id }, body: { status: 'running' } });
        await finish(run.id);
        const done = await getJob(job.id);
        assert.equal(done.status, 'completed');
        assert.equal(done.closedAt, null);
        assert.equal(done.finishedAt, (await viewer.client.call(v1.runs.getRun, { params: { testRunId: run.id } })).finishedAt);
      });
    });

    describe('POST /testmgmt/jobs/{jobId}/complete', () => {
      test('is idempotent: a second call changes nothing and answers the same', async () => {
        const job = await launch();
        await finish((await join(job.id)).id);
        const first = await complete(job.id);
        server.clock.advance(5000);
        const second = await complete(job.id);
        assert.deepEqual(second, first);
        assert.equal(first.status, 'completed');
      });

      test('a closed launch takes no more runs: 409 STATE_CONFLICT', async () => {
        const job = await launch();
        await complete(job.id);
        const closed = await getJob(job.id);
        assert.equal(closed.status, 'completed', 'closed with no run: completed');
        assert.equal(closed.finishedAt, closed.closedAt);
        await rejects(join(job.id), 409, 'STATE_CONFLICT');
        assert.equal((await getJob(job.id)).progress.total, 0);
      });

      test('answers 409 for a job created with tests and for a cancelled launch', async () => {
        const testId = (
          await tester.client.call(v1.tests.createTest, {
            body: { projectId: projectA, name: unique('t-'), steps: [{ action: 'a', expected: 'b' }] },
          })
        ).id;
        const planned = await tester.client.call(v1.jobs.createJob, { body: { projectId: projectA, testIds: [testId] } });
        await rejects(complete(planned.id), 409, 'STATE_CONFLICT');
        const cancelled = await launch();
        await tester.client.call(v1.jobs.cancelJob, { params: { jobId: cancelled.id } });
        await rejects(complete(cancelled.id), 409, 'STATE_CONFLICT');
        assert.equal((await getJob(cancelled.id)).closedAt, null);
      });

      test('refuses a viewer with 403, and answers 404 to a non-member and for an unknown job', async () => {
        const job = await launch();
        await rejects(complete(job.id, viewer.client), 403, 'FORBIDDEN');
        await rejects(complete(job.id, outsider.client), 404, 'NOT_FOUND');
        await rejects(complete('00000000-0000-4000-8000-000000000000'), 404, 'NOT_FOUND');
        assert.equal((await getJob(job.id)).closedAt, null);
      });
    });

    describe('the launch idle timeout (ATTEST_LAUNCH_IDLE_MINUTES)', () => {
      test('a launch never closed ends once no run is open and none was created or finished for the timeout (JOB-2)', async () => {
        const job = await launch();
        const run = await join(job.id);
        server.clock.advance(minutes(IDLE_MINUTES) * 3);
        assert.equal((await getJob(job.id)).status, 'running', 'a run still open is never idle');
        await finish(run.id);
        const finishedAt = (await viewer.client.call(v1.runs.getRun, { params: { testRunId: run.id } })).finishedAt;
        server.clock.advance(minutes(IDLE_MINUTES) - 1);
        assert.equal((await getJob(job.id)).status, 'running');
        server.clock.advance(1);
        const ended = await getJob(job.id);
        assert.equal(ended.status, 'completed');
        assert.equal(ended.finishedAt, finishedAt);
        assert.equal(ended.closedAt, null, 'derived, nothing written');

        // The end was a presumption: a run that still comes opens the launch again.
        const late = await join(job.id);
        assert.equal((await getJob(job.id)).status, 'running');
        await finish(late.id);
        await complete(job.id);
        assert.equal((await getJob(job.id)).status, 'completed');
      });

      test('a launch that never got a run stays queued until the timeout, then completed', async () => {
        const job = await launch();
        server.clock.advance(minutes(IDLE_MINUTES) - 1);
        assert.equal((await getJob(job.id)).status, 'queued');
        server.clock.advance(1);
        const ended = await getJob(job.id);
        assert.equal(ended.status, 'completed');
        assert.equal(ended.startedAt, null);
        assert.equal(ended.finishedAt, ended.createdAt);
      });
    });

    describe('a server-side import', () => {
      test('closes the job it made when it finishes (JOB-1)', async () => {
        const xml = `<testsuite name="${unique('s')}"><testcase classname="a" name="one"/><testcase classname="a" name="two"/></testsuite>`;
        const accepted = await tester.client.importReport(projectA, { name: 'r.xml', bytes: Buffer.from(xml) });
        const record = await waitFor(async () => {
          const r = await viewer.client.call(v1.imports.getImport, { params: { projectId: projectA, importId: String(accepted.id) } });
          return r.status === 'completed' || r.status === 'failed' ? r : undefined;
        });
        assert.equal(record.status, 'completed');
        const job = await getJob(record.jobId as string);
        assert.equal(job.status, 'completed');
        assert.equal(job.closedAt, record.finishedAt);
        await rejects(join(job.id), 409, 'STATE_CONFLICT');
        // A reporter's or the CLI's complete call after it is answered as the job is.
        assert.deepEqual(await complete(job.id), job);
      });

      test('carries its ciUrl onto the job and every run it writes', async () => {
        const ciUrl = 'https://ci.example.com/job/shop/912/';
        const xml = `<testsuite name="${unique('s')}"><testcase classname="a" name="one"/><testcase classname="a" name="two"/></testsuite>`;
        const accepted = await tester.client.importReport(projectA, { name: 'r.xml', bytes: Buffer.from(xml) }, { ciUrl });
        const record = await waitFor(async () => {
          const r = await viewer.client.call(v1.imports.getImport, { params: { projectId: projectA, importId: String(accepted.id) } });
          return r.status === 'completed' || r.status === 'failed' ? r : undefined;
        });
        assert.equal(record.status, 'completed');
        assert.equal((await getJob(record.jobId as string)).ciUrl, ciUrl);
        const runs = (await viewer.client.call(v1.runs.listRuns, { query: { jobId: record.jobId as string } })).items;
        assert.equal(runs.length, 2);
        for (const run of runs) assert.equal(run.ciUrl, ciUrl);
      });
    });

    describe('ciUrl', () => {
      const CI = 'https://github.com/acme/shop/actions/runs/4512?check_suite_focus=true';

      test('a job keeps its ciUrl and copies it onto its runs; a run, bulk or streamed, keeps its own (JOB-3)', async () => {
        const testId = (
          await tester.client.call(v1.tests.createTest, {
            body: { projectId: projectA, name: unique('t-'), steps: [{ action: 'a', expected: 'b' }] },
          })
        ).id;
        const job = await tester.client.call(v1.jobs.createJob, { body: { projectId: projectA, testIds: [testId], ciUrl: CI } });
        assert.equal(job.ciUrl, CI);
        assert.equal((await getJob(job.id)).ciUrl, CI);
        const [fanned] = (await viewer.client.call(v1.runs.listRuns, { query: { jobId: job.id } })).items;
        assert.equal(fanned?.ciUrl, CI);

        const streamed = await join((await launch({ ciUrl: CI })).id, { ciUrl: 'http://jenkins.local:8080/job/shop/77/' });
        assert.equal(streamed.ciUrl, 'http://jenkins.local:8080/job/shop/77/');
        const bulk = await tester.client.call(v1.runs.createRun, {
          body: { projectId: projectA, name: 'bulk', verdict: 'passed', ciUrl: CI, results: { steps: [{ title: 's', status: 'passed' }] } },
        });
        assert.equal(bulk.ciUrl, CI);
        assert.equal((await viewer.client.call(v1.runs.getRun, { params: { testRunId: bulk.id } })).ciUrl, CI);
        const plain = await tester.client.call(v1.runs.createRun, { body: { projectId: projectA, name: 'plain' } });
        assert.equal(plain.ciUrl, null);
        assert.equal((await launch()).ciUrl, null);
      });

      test('anything but an absolute http(s) URL, or one too long, is a 400 naming ciUrl, and nothing is created', async () => {
        const bad = [
          'javascript:alert(1)//http://x',
          'ftp://ci.example.com/build/1',
          'https://',
          'http://[::1',
          'https://ci.example.com/a b',
          'https://ci.example.com/\u00e9',
          `https://ci.example.com/${'a'.repeat(2000)}`,
          '/relative/build/1',
        ];
        const before = (await viewer.client.call(v1.jobs.listJobs, { query: { projectId: projectA, limit: 200 } })).items.length;
        for (const ciUrl of bad) {
          await assert.rejects(launch({ ciUrl }), (e: ApiError) => e.status === 400 && firstPointer(e) === '/body/ciUrl', ciUrl);
          await assert.rejects(
            tester.client.call(v1.runs.createRun, { body: { projectId: projectA, name: 'bad', ciUrl } }),
            (e: ApiError) => e.status === 400 && firstPointer(e) === '/body/ciUrl',
            ciUrl,
          );
        }
        assert.equal((await viewer.client.call(v1.jobs.listJobs, { query: { projectId: projectA, limit: 200 } })).items.length, before);
      });
    });

    describe('?projectId= takes the project key; ?jobId= alone lists a job', () => {
      test('GET /testmgmt/jobs, /testruns and /tests take the short key in any case (JOB-4)', async () => {
        const job = await launch();
        const run = await join(job.id);
        for (const projectId of [keyA, keyA.toLowerCase(), projectA]) {
          const jobs = await viewer.client.call(v1.jobs.listJobs, { query: { projectId, limit: 200 } });
          assert.ok(
            jobs.items.some((j) => j.id === job.id),
            projectId,
          );
          const runs = await viewer.client.call(v1.runs.listRuns, { query: { projectId, limit: 200 } });
          assert.ok(
            runs.items.some((r) => r.id === run.id),
            projectId,
          );
          const tests = await viewer.client.call(v1.tests.listTests, { query: { projectId, limit: 200 } });
          assert.ok(
            tests.items.some((t) => t.id === run.testId),
            projectId,
          );
        }
      });

      test('an unknown key and another project’s key answer 404; a value that is neither id nor key 400', async () => {
        const keyB = (await outsider.client.call(v1.projects.getProject, { params: { projectId: projectB } })).key;
        for (const projectId of ['NOSUCHKEY1', keyB]) {
          await rejects(viewer.client.call(v1.jobs.listJobs, { query: { projectId } }), 404, 'NOT_FOUND');
          await rejects(viewer.client.call(v1.runs.listRuns, { query: { projectId } }), 404, 'NOT_FOUND');
          await rejects(viewer.client.call(v1.tests.listTests, { query: { projectId } }), 404, 'NOT_FOUND');
        }
        for (const projectId of ['web-1', '1WEB', 'x']) {
          await assert.rejects(
            viewer.client.call(v1.jobs.listJobs, { query: { projectId } }),
            (e: ApiError) => e.status === 400 && firstPointer(e) === '/query/projectId',
          );
        }
      });

      test('GET /testmgmt/testruns?jobId= needs no projectId; a job that is unknown or not visible answers 404', async () => {
        const job = await launch();
        const runs = [await join(job.id), await join(job.id)];
        const listed = await viewer.client.call(v1.runs.listRuns, { query: { jobId: job.id, limit: 1 } });
        assert.equal(listed.items.length, 1);
        assert.ok(listed.nextCursor);
        const rest = await viewer.client.call(v1.runs.listRuns, { query: { jobId: job.id, limit: 1, cursor: listed.nextCursor } });
        assert.deepEqual([...listed.items, ...rest.items].map((r) => r.id).sort(), runs.map((r) => r.id).sort());
        assert.equal(
          (await viewer.client.call(v1.runs.listRuns, { query: { jobId: job.id.toUpperCase(), status: 'completed' } })).items.length,
          0,
          'other filters still narrow, and an upper-case id is the same job',
        );

        await rejects(outsider.client.call(v1.runs.listRuns, { query: { jobId: job.id } }), 404, 'NOT_FOUND');
        await rejects(viewer.client.call(v1.runs.listRuns, { query: { jobId: '00000000-0000-4000-8000-000000000000' } }), 404, 'NOT_FOUND');
        await assert.rejects(
          viewer.client.call(v1.runs.listRuns, { query: {} }),
          (e: ApiError) => e.status === 400 && firstPointer(e) === '/query/projectId',
        );
        await assert.rejects(
          viewer.client.call(v1.runs.listRuns, { query: { jobId: 'not-a-uuid' } }),
          (e: ApiError) => e.status === 400 && firstPointer(e) === '/query/jobId',
        );
        // With both, the project decides what is visible and the job narrows: another project's job lists nothing.
        const other = await createProject(server, 'C');
        const both = await createUser(server, ['viewer'], { projects: [projectA, other.id] });
        assert.equal((await both.client.call(v1.runs.listRuns, { query: { projectId: other.id, jobId: job.id } })).items.length, 0);
      });
    });
  });
}
