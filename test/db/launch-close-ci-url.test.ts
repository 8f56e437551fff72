import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { v1 } from '../../src/client/index.ts';
import * as launchCloseCiUrl from '../../src/server/db/migrations/2026-11-27-0011-launch-close-ci-url.ts';
import * as jobLookup from '../../src/server/db/migrations/2026-12-02-0032-job-lookup.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createProject, createUser, type TestUser, unique } from '../helpers/factories.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

// Migration 0011 adds jobs.closed_at, jobs.ci_url and test_runs.ci_url (JOB-1, JOB-3). Applied to a
// database that already holds finished imports, it closes their jobs at the imports' finish time;
// a reporter's launch stays open (the idle timeout ends it). Its down migration drops the columns.

for (const dialect of DIALECTS) {
  describe(`[${dialect}] launch close and CI links (migration 0011)`, () => {
    let server: TestServer;
    let projectId: string;
    let tester: TestUser;

    before(async () => {
      server = await startTestServer(dialect);
      projectId = (await createProject(server, 'Migration 0011')).id;
      tester = await createUser(server, ['tester'], { projects: [projectId] });
    });
    after(() => server.close());

    const columns = async (table: string) =>
      (await server.app.attest.db.introspection.getTables()).find((t) => t.name === table)?.columns.map((c) => c.name) ?? [];

    test("down and up again: an import's job is closed at the import's finish, a reporter's launch stays open", async () => {
      const xml = `<testsuite name="${unique('s')}"><testcase classname="a" name="one"/></testsuite>`;
      const accepted = await tester.client.importReport(projectId, { name: 'r.xml', bytes: Buffer.from(xml) });
      const record = await waitFor(async () => {
        const r = await tester.client.call(v1.imports.getImport, { params: { projectId, importId: String(accepted.id) } });
        return r.status === 'completed' ? r : undefined;
      });
      const launch = await tester.client.call(v1.jobs.createJob, {
        body: { projectId, testIds: [], ciUrl: 'https://ci.example.com/build/1' },
      });
      const run = await tester.client.call(v1.runs.createRun, {
        body: { projectId, name: 'r', jobId: launch.id, ciUrl: 'https://ci.example.com/build/1' },
      });
      await tester.client.call(v1.runs.updateRun, { params: { testRunId: run.id }, body: { status: 'completed', verdict: 'passed' } });

      const db = server.app.attest.db;
      // Migration 0032 indexes jobs.ci_url (TRIAGE-17): it goes down first and up again last, as a rollback would take them.
      await jobLookup.down(db);
      await launchCloseCiUrl.down(db);
      assert.ok(!(await columns('jobs')).includes('closed_at'));
      assert.ok(!(await columns('jobs')).includes('ci_url'));
      assert.ok(!(await columns('test_runs')).includes('ci_url'));
      await launchCloseCiUrl.up(db);
      await jobLookup.up(db);

      const importJob = await tester.client.call(v1.jobs.getJob, { params: { jobId: record.jobId as string } });
      assert.equal(importJob.closedAt, record.finishedAt, "closed at the import's finish");
      assert.equal(importJob.status, 'completed');
      const open = await tester.client.call(v1.jobs.getJob, { params: { jobId: launch.id } });
      assert.equal(open.closedAt, null);
      assert.equal(open.status, 'running', 'a launch its reporter never closed stays open until the idle timeout');
      assert.equal(open.ciUrl, null, 'the down migration dropped the link');
    });
  });
}
