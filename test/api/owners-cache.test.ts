import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type ApiError, v1 } from '../../src/client/index.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createProject, createUser, type TestUser, unique } from '../helpers/factories.ts';
import { randomPng } from '../helpers/png.ts';
import { databaseSettled, startTestServer, type TestServer } from '../helpers/server.ts';

// PERF-7: which project owns a run, test, job or artifact, and which project has an id or a key,
// is kept once the database answered it. A request addressing it again runs one query fewer; a
// deletion forgets what it may have made untrue before it is acknowledged; a kept owner never lets
// a caller of another project in.

for (const dialect of DIALECTS) {
  describe(`[${dialect}] owners kept in memory (PERF-7)`, () => {
    let server: TestServer;
    let projectId: string;
    let manager: TestUser;
    let tester: TestUser;
    let outsider: TestUser;

    before(async () => {
      server = await startTestServer(dialect);
      projectId = (await createProject(server, 'Owners')).id;
      const other = (await createProject(server, 'Elsewhere')).id;
      manager = await createUser(server, ['manager'], { projects: [projectId] });
      tester = await createUser(server, ['tester'], { projects: [projectId] });
      outsider = await createUser(server, ['tester'], { projects: [other] });
    });
    after(() => server.close());

    const status = (promise: Promise<unknown>) =>
      promise.then(
        () => 200,
        (e: ApiError) => e.status,
      );

    /** The statements the database ran for `request`, once earlier work has settled. */
    async function statementsOf(request: () => Promise<unknown>): Promise<number> {
      await databaseSettled(server);
      const before = server.app.attest.database.stats.statements;
      await request();
      await databaseSettled(server);
      return server.app.attest.database.stats.statements - before;
    }

    /** A run of a test (by name), in a job, with one screenshot. */
    async function recorded() {
      const job = await tester.client.call(v1.jobs.createJob, { body: { projectId, name: unique('job-'), testIds: [] } });
      const run = await tester.client.call(v1.runs.createRun, {
        body: { projectId, name: unique('run-'), testName: unique('test-'), jobId: job.id },
      });
      const shot = await tester.client.upload(projectId, { testRunId: run.id, kind: 'screenshot', name: 's.png' }, [
        { name: 's.png', bytes: await randomPng(20, 14), type: 'image/png' },
      ]);
      return { jobId: job.id, runId: run.id, testId: run.testId as string, artifactId: String(shot.id) };
    }

    const content = (key: string, artifactId: string) =>
      fetch(`${server.url}/api/v1/artifact/artifacts/${artifactId}/content`, { headers: { 'service.api-token': key } }).then(
        async (answer) => {
          await answer.arrayBuffer();
          if (answer.status !== 200) throw Object.assign(new Error(`content: ${answer.status}`), { status: answer.status });
        },
      );

    test('a run, test, job, artifact or project addressed again is checked against its kept owner: one query fewer', async () => {
      // Created first: a new project empties the credentials cache (PERF-1), which would add the keys' lookups.
      const fresh = await createProject(server, 'Fresh');
      const { jobId, runId, testId, artifactId } = await recorded();
      await server.admin.client.call(v1.meta.getMe, {}); // the admin's key known again
      const requests: Record<string, () => Promise<unknown>> = {
        run: () => tester.client.call(v1.runs.getRun, { params: { testRunId: runId } }),
        test: () => tester.client.call(v1.tests.getTest, { params: { testId } }),
        job: () => tester.client.call(v1.jobs.getJob, { params: { jobId } }),
        artifact: () => content(tester.key, artifactId),
        'project id': () => server.admin.client.call(v1.projects.getProject, { params: { projectId: fresh.id } }),
        'project key': () => server.admin.client.call(v1.projects.getProject, { params: { projectId: fresh.key.toLowerCase() } }),
      };
      for (const [what, request] of Object.entries(requests)) {
        const first = await statementsOf(request);
        const second = await statementsOf(request);
        assert.equal(first - second, 1, `${what}: the second request found its owner kept (${first} then ${second} statements)`);
      }
    });

    test('a kept owner lets no caller of another project in', async () => {
      const { runId, testId, jobId, artifactId } = await recorded();
      await tester.client.call(v1.runs.getRun, { params: { testRunId: runId } });
      await tester.client.call(v1.tests.getTest, { params: { testId } });
      await tester.client.call(v1.jobs.getJob, { params: { jobId } });
      await content(tester.key, artifactId);
      assert.equal(await status(outsider.client.call(v1.runs.getRun, { params: { testRunId: runId } })), 404);
      assert.equal(
        await status(outsider.client.call(v1.results.appendResults, { params: { testRunId: runId }, body: { steps: [] } })),
        404,
      );
      assert.equal(await status(outsider.client.call(v1.tests.getTest, { params: { testId } })), 404);
      assert.equal(await status(outsider.client.call(v1.jobs.getJob, { params: { jobId } })), 404);
      assert.equal(await status(content(outsider.key, artifactId)), 404);
      assert.equal(await status(outsider.client.call(v1.projects.getProject, { params: { projectId } })), 404);
    });

    test('a deleted project key given to a new project names the new one on the very next request', async () => {
      const old = await createProject(server, 'Old');
      assert.equal((await server.admin.client.call(v1.projects.getProject, { params: { projectId: old.key } })).id, old.id);
      await server.admin.client.call(v1.projects.deleteProject, { params: { projectId: old.id } });
      const renewed = await server.admin.client.call(v1.projects.createProject, { body: { key: old.key, name: 'New' } });
      assert.equal((await server.admin.client.call(v1.projects.getProject, { params: { projectId: old.key } })).id, renewed.id);
      assert.equal(await status(server.admin.client.call(v1.projects.getProject, { params: { projectId: old.id } })), 404);
    });

    test('deleting an artifact, a test, a run or a job forgets its kept owner before the answer', async () => {
      const owners = server.app.attest.owners;
      const { jobId, runId, testId, artifactId } = await recorded();
      await tester.client.call(v1.runs.getRun, { params: { testRunId: runId } });
      await tester.client.call(v1.jobs.getJob, { params: { jobId } });
      await content(tester.key, artifactId);
      assert.equal(owners.get('run', runId), projectId);
      assert.equal(owners.get('artifact', artifactId), projectId);

      await manager.client.call(v1.artifacts.deleteArtifact, { params: { artifactId } });
      assert.equal(owners.get('artifact', artifactId), undefined);
      assert.equal(owners.get('run', runId), projectId, 'an artifact deletion forgets that artifact only');
      assert.equal(await status(content(server.admin.key, artifactId)), 404);

      await manager.client.call(v1.runs.deleteRun, { params: { testRunId: runId } });
      assert.equal(owners.get('run', runId), undefined);
      assert.equal(await status(server.admin.client.call(v1.runs.getRun, { params: { testRunId: runId } })), 404);

      // The test has no runs left: deleting it forgets its own owner.
      await tester.client.call(v1.tests.getTest, { params: { testId } });
      assert.equal(owners.get('test', testId), projectId);
      await manager.client.call(v1.tests.deleteTest, { params: { testId } });
      assert.equal(owners.get('test', testId), undefined);
      assert.equal(await status(server.admin.client.call(v1.tests.getTest, { params: { testId } })), 404);

      await tester.client.call(v1.jobs.getJob, { params: { jobId } });
      await manager.client.call(v1.jobs.deleteJob, { params: { jobId } });
      assert.equal(owners.get('job', jobId), undefined);
      assert.equal(await status(server.admin.client.call(v1.jobs.getJob, { params: { jobId } })), 404);
    });
  });
}
