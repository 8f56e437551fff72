import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { strToU8, zipSync } from 'fflate';
import { sql } from 'kysely';
import { type ApiError, v1 } from '../../src/client/index.ts';
import * as usageMigration from '../../src/server/db/migrations/2026-11-25-0006-usage.ts';
import * as runCountMigration from '../../src/server/db/migrations/2026-11-26-0007-run-artifact-count.ts';
import * as runDaysMigration from '../../src/server/db/migrations/2026-11-28-0023-run-days.ts';
import * as blobRefsMigration from '../../src/server/db/migrations/2026-11-28-0024-blob-refs-by-key.ts';
import { recountRunArtifacts, recountUsage } from '../../src/server/db/repositories/usage.ts';
import { verifyStorage } from '../../src/server/services/operations/maintenance.ts';
import { sweepRetention } from '../../src/server/services/operations/retention.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createProject, type ServerWithManagedProject, serverWithManagedProject, unique } from '../helpers/factories.ts';
import { jsonHeaders, rawRequest } from '../helpers/http.ts';
import { randomPng } from '../helpers/png.ts';
import { waitFor } from '../helpers/wait.ts';

// RET-4: per-project counters of runs, artifacts, logical and stored bytes, kept by the writes
// themselves (every path: uploads, imports, run/job/test deletion, retention) and equal to a full
// recount after each, as is each run's artifact count (migration 0007). RET-5: an admin's quota on
// stored bytes; uploads past it get 507 and store nothing.

for (const dialect of DIALECTS) {
  describe(`[${dialect}] storage accounting and quota (RET-4, RET-5)`, () => {
    let { server, projectId, manager, tester } = {} as ServerWithManagedProject;
    before(async () => {
      ({ server, projectId, manager, tester } = await serverWithManagedProject(dialect, 'Usage'));
    });
    after(() => server.close());

    const usage = () => tester.client.call(v1.projects.getProjectUsage, { params: { projectId } });
    const status = (promise: Promise<unknown>) =>
      promise.then(
        () => 200,
        (e: ApiError) => e.status,
      );
    /** The counters agree with a recount of every row, for every project and every run (its artifact count). */
    const assertCountersTrue = async () => {
      assert.deepEqual(await recountUsage(server.app.attest.db), []);
      assert.deepEqual(await recountRunArtifacts(server.app.attest.db), []);
    };

    async function startRun(options: { testName?: string; jobId?: string } = {}) {
      return tester.client.call(v1.runs.createRun, { body: { projectId, name: unique('run-'), ...options } });
    }
    const shot = (runId: string, bytes: Uint8Array) =>
      tester.client.upload(projectId, { testRunId: runId, kind: 'screenshot', name: 'shot.png' }, [
        { name: 'shot.png', bytes, type: 'image/png' },
      ]);
    /** Imports a ZIP of one failing JUnit case with `png` as its screenshot; answers the import's id. */
    async function importWithScreenshot(png: Uint8Array): Promise<string> {
      const suite = unique('s');
      const xml = `<testsuite name="${suite}"><testcase classname="${suite}" name="fails"><failure message="no"/>
        <system-out>[[ATTACHMENT|shots/x.png]]</system-out></testcase></testsuite>`;
      const zip = Buffer.from(zipSync({ 'TEST-s.xml': strToU8(xml), 'shots/x.png': png }));
      const posted = await rawRequest(`${server.url}/api/v1/projects/${projectId}/imports`, {
        method: 'POST',
        headers: { ...jsonHeaders(tester.key), 'content-type': 'application/zip', 'content-length': zip.length },
        body: zip,
      });
      assert.equal(posted.status, 202, posted.text);
      return String(posted.json.id);
    }
    const finish = (runId: string) =>
      tester.client.call(v1.runs.updateRun, { params: { testRunId: runId }, body: { status: 'completed', verdict: 'passed' } });

    test('uploads count once per upload in logical bytes and once per distinct blob in stored bytes; GET project shows the same', async () => {
      const before = await usage();
      assert.deepEqual(before, { runs: 0, artifacts: 0, logicalBytes: 0, storedBytes: 0, quotaBytes: null });

      const same = await randomPng(40, 30);
      const [baseline, actual, diff] = await Promise.all([randomPng(20, 20), randomPng(20, 20), randomPng(20, 20)]);
      const log = strToU8('line one\nline two\n');
      const first = await startRun();
      const second = await startRun();
      await shot(first.id, same);
      await shot(second.id, same); // The same bytes again: stored once.
      await tester.client.upload(projectId, { testRunId: first.id, kind: 'visual-diff', name: 'home' }, [
        { field: 'baseline', name: 'b.png', bytes: baseline, type: 'image/png' },
        { field: 'actual', name: 'a.png', bytes: actual, type: 'image/png' },
        { field: 'diff', name: 'd.png', bytes: diff, type: 'image/png' },
      ]);
      await tester.client.upload(projectId, { testRunId: second.id, kind: 'log', name: 'console.log' }, [
        { name: 'console.log', bytes: log, type: 'text/plain' },
      ]);

      const now = await usage();
      assert.equal(now.runs, 2);
      assert.equal(now.artifacts, 4);
      // A visual diff's size is its diff image's.
      assert.equal(now.logicalBytes, 2 * same.length + diff.length + log.length);
      assert.equal(now.storedBytes, same.length + baseline.length + actual.length + diff.length + log.length);
      const project = await tester.client.call(v1.projects.getProject, { params: { projectId } });
      assert.deepEqual(project.usage, now);
      const listed = await tester.client.call(v1.projects.listProjects, { query: {} });
      assert.deepEqual(listed.items.find((p) => p.id === projectId)?.usage, now);
      await assertCountersTrue();

      // Deleting the run with the diff and one copy of the shared screenshot: the other copy still holds its blob.
      await manager.client.call(v1.runs.deleteRun, { params: { testRunId: first.id } });
      const after = await usage();
      assert.equal(after.runs, 1);
      assert.equal(after.artifacts, 1 + 1);
      assert.equal(after.logicalBytes, same.length + log.length);
      assert.equal(after.storedBytes, same.length + log.length);
      await assertCountersTrue();
      await manager.client.call(v1.runs.deleteRun, { params: { testRunId: second.id } });
      assert.deepEqual(await usage(), before);
      await assertCountersTrue();
    });

    test('job deletion, test deletion with cascade, retention and an import keep the counters true', async () => {
      const job = await tester.client.call(v1.jobs.createJob, { body: { projectId, name: 'Nightly', testIds: [] } });
      for (let i = 0; i < 3; i++) {
        const run = await startRun({ jobId: job.id });
        await shot(run.id, await randomPng(16, 16));
        await finish(run.id);
      }
      const named = unique('Checkout › pays');
      for (let i = 0; i < 2; i++) {
        const run = await startRun({ testName: named });
        await shot(run.id, await randomPng(16, 16));
        await finish(run.id);
      }
      await assertCountersTrue();
      assert.equal((await usage()).runs, 5);

      await manager.client.call(v1.jobs.deleteJob, { params: { jobId: job.id } });
      await assertCountersTrue();
      const runs = await tester.client.call(v1.runs.listRuns, { query: { projectId } });
      const testId = runs.items[0]?.testId as string;
      await manager.client.call(v1.tests.deleteTest, { params: { testId }, query: { cascade: true } });
      await assertCountersTrue();
      assert.equal((await usage()).runs, 0);

      // An import with a screenshot in its ZIP.
      const png = await randomPng(24, 24);
      await importWithScreenshot(png);
      await waitFor(async () => (await usage()).artifacts === 1, { message: 'the import wrote its screenshot' });
      assert.equal((await usage()).storedBytes, png.length);
      await assertCountersTrue();

      // Expired by retention: runs finished long ago, in a project that keeps 1 day.
      await manager.client.call(v1.projects.updateProject, { params: { projectId }, body: { retention: { days: 1 } } });
      const ctx = server.app.attest;
      const report = await sweepRetention({ ...ctx, clock: () => new Date(Date.now() + 3 * 86_400_000) });
      assert.ok(report.deleted >= 1);
      assert.deepEqual(await usage(), { runs: 0, artifacts: 0, logicalBytes: 0, storedBytes: 0, quotaBytes: null });
      await assertCountersTrue();
      await manager.client.call(v1.projects.updateProject, { params: { projectId }, body: { retention: null } });
    });

    test('the quota: an admin sets it, a manager may not; past it an upload is a 507 that stores nothing; known bytes still fit', async () => {
      assert.equal(await status(manager.client.call(v1.projects.updateProject, { params: { projectId }, body: { quotaBytes: 1 } })), 403);
      const small = await randomPng(30, 30);
      const big = await randomPng(90, 90);
      assert.ok(big.length > small.length * 2);
      const run = await startRun();
      await shot(run.id, small);
      const stored = (await usage()).storedBytes;
      const quotaBytes = stored + small.length + 10; // Room for one more small screenshot, not a big one.
      const updated = await server.admin.client.call(v1.projects.updateProject, { params: { projectId }, body: { quotaBytes } });
      assert.equal(updated.usage.quotaBytes, quotaBytes);
      const audit = await server.admin.client.call(v1.users.listAuditLog, { query: { action: 'project.quota', targetId: projectId } });
      assert.equal(audit.items.length, 1);

      const refused = await status(shot(run.id, big));
      assert.equal(refused, 507);
      const problem = await shot(run.id, big).catch((e: ApiError) => e);
      assert.equal((problem as ApiError).problem?.code, 'QUOTA_EXCEEDED');
      assert.match(String((problem as ApiError).problem?.detail), /quota is \d+ bytes; it stores \d+ and this upload would add \d+/);
      let now = await usage();
      assert.equal(now.storedBytes, stored, 'nothing was stored');
      assert.equal(now.artifacts, 1);
      const listing = await tester.client.call(v1.artifacts.listArtifacts, { params: { projectId }, query: { testRunId: run.id } });
      assert.equal(listing.items.length, 1);

      // Bytes the project already stores add nothing, so they fit; a small new one still fits.
      await shot(run.id, small);
      await shot(run.id, await randomPng(30, 30));
      now = await usage();
      assert.ok(now.storedBytes <= quotaBytes);
      // At the quota (or past it), uploads are refused before their bytes are read.
      await server.admin.client.call(v1.projects.updateProject, { params: { projectId }, body: { quotaBytes: now.storedBytes } });
      assert.equal(await status(shot(run.id, await randomPng(8, 8))), 507);
      await assertCountersTrue();

      // Deleting runs makes room again; null lifts the quota.
      await manager.client.call(v1.runs.deleteRun, { params: { testRunId: run.id } });
      const again = await startRun();
      assert.equal(await status(shot(again.id, await randomPng(8, 8))), 200);
      await server.admin.client.call(v1.projects.updateProject, { params: { projectId }, body: { quotaBytes: null } });
      assert.equal((await usage()).quotaBytes, null);
      await manager.client.call(v1.runs.deleteRun, { params: { testRunId: again.id } });
    });

    test('concurrent uploads against a quota: exactly those that fit are stored, never more', async () => {
      const run = await startRun();
      const shots = await Promise.all(Array.from({ length: 8 }, () => randomPng(40, 40)));
      const each = Math.max(...shots.map((s) => s.length));
      const base = (await usage()).storedBytes;
      await server.admin.client.call(v1.projects.updateProject, { params: { projectId }, body: { quotaBytes: base + 3 * each } });
      const statuses = await Promise.all(shots.map((bytes) => status(shot(run.id, bytes))));
      const stored = statuses.filter((s) => s === 200).length;
      assert.ok(stored >= 3 && stored <= 3 + 1, `three (or four smaller) fit: ${statuses}`);
      assert.ok(
        statuses.every((s) => s === 200 || s === 507),
        String(statuses),
      );
      const now = await usage();
      assert.ok(now.storedBytes <= base + 3 * each, `never past the quota: ${now.storedBytes}`);
      assert.equal(now.artifacts, stored);
      await assertCountersTrue();
      await server.admin.client.call(v1.projects.updateProject, { params: { projectId }, body: { quotaBytes: null } });
      await manager.client.call(v1.runs.deleteRun, { params: { testRunId: run.id } });
    });

    test('an import past the quota keeps its runs and leaves the attachments out, saying so', async () => {
      await server.admin.client.call(v1.projects.updateProject, { params: { projectId }, body: { quotaBytes: 0 } });
      const importId = await importWithScreenshot(await randomPng(24, 24));
      const record = await waitFor(
        async () => {
          const current = await tester.client.call(v1.imports.getImport, { params: { projectId, importId } });
          return current.status === 'completed' ? current : undefined;
        },
        { message: 'the import completed' },
      );
      assert.equal(record.counts?.attachments, 0);
      assert.equal(record.counts?.attachmentsMissing, 1);
      assert.match(JSON.stringify(record.files), /quota is reached/);
      const now = await usage();
      assert.equal(now.runs, 1);
      assert.equal(now.storedBytes, 0);
      await server.admin.client.call(v1.projects.updateProject, { params: { projectId }, body: { quotaBytes: null } });
      await assertCountersTrue();
    });

    test('deleting a project with runs, shared screenshots and a visual diff leaves no counters behind', async () => {
      const doomed = (await createProject(server, 'Doomed')).id;
      const same = await randomPng(20, 20);
      for (let i = 0; i < 3; i++) {
        const run = await server.admin.client.call(v1.runs.createRun, { body: { projectId: doomed, name: unique('run-') } });
        await server.admin.client.call(v1.results.appendResults, {
          params: { testRunId: run.id },
          body: { steps: [{ key: 'a', title: 'Open', status: 'passed' }] },
        });
        await server.admin.client.upload(doomed, { testRunId: run.id, stepKey: 'a', kind: 'screenshot', name: 's.png' }, [
          { name: 's.png', bytes: same, type: 'image/png' },
        ]);
        await server.admin.client.upload(doomed, { testRunId: run.id, kind: 'visual-diff', name: 'home' }, [
          { field: 'baseline', name: 'b.png', bytes: same, type: 'image/png' },
          { field: 'actual', name: 'a.png', bytes: await randomPng(20, 20), type: 'image/png' },
          { field: 'diff', name: 'd.png', bytes: await randomPng(20, 20), type: 'image/png' },
        ]);
      }
      await server.admin.client.call(v1.projects.deleteProject, { params: { projectId: doomed } });
      const db = server.app.attest.db;
      assert.deepEqual(await db.selectFrom('project_usage').selectAll().where('project_id', '=', doomed).execute(), []);
      assert.deepEqual(await db.selectFrom('project_blobs').selectAll().where('project_id', '=', doomed).execute(), []);
      await assertCountersTrue();
    });

    test('attest verify reports counters that disagree with the rows', async () => {
      const ctx = server.app.attest;
      assert.deepEqual((await verifyStorage(ctx, { hashContents: false })).usageMismatches, []);
      const honest = await usage();
      await sql`UPDATE project_usage SET runs = runs + 7 WHERE project_id = ${projectId}`.execute(ctx.db);
      const report = await verifyStorage(ctx, { hashContents: false });
      assert.equal(report.usageMismatches.length, 1);
      assert.equal(report.usageMismatches[0]?.projectId, projectId);
      assert.equal(Number(report.usageMismatches[0]?.counted.runs), honest.runs + 7);
      assert.equal(report.usageMismatches[0]?.recounted.runs, honest.runs);
      await sql`UPDATE project_usage SET runs = runs - 7 WHERE project_id = ${projectId}`.execute(ctx.db);
    });

    test("deleting one artifact takes it off its run's count and the project's counters", async () => {
      const run = await startRun();
      const kept = await shot(run.id, await randomPng(14, 14));
      const doomed = await shot(run.id, await randomPng(14, 14));
      const before = await usage();
      const count = async () =>
        Number(
          (await server.app.attest.db.selectFrom('test_runs').select('artifact_count').where('id', '=', run.id).executeTakeFirstOrThrow())
            .artifact_count,
        );
      assert.equal(await count(), 2);
      await manager.client.call(v1.artifacts.deleteArtifact, { params: { artifactId: String(doomed.id) } });
      assert.equal(await count(), 1);
      assert.equal((await usage()).artifacts, before.artifacts - 1);
      await assertCountersTrue();
      await manager.client.call(v1.artifacts.deleteArtifact, { params: { artifactId: String(kept.id) } });
      assert.equal(await count(), 0);
      await assertCountersTrue();
      await manager.client.call(v1.runs.deleteRun, { params: { testRunId: run.id } });
    });

    test('attest verify reports a run whose artifact count disagrees with its artifacts', async () => {
      const ctx = server.app.attest;
      const run = await startRun();
      await shot(run.id, await randomPng(10, 10));
      assert.deepEqual((await verifyStorage(ctx, { hashContents: false })).runCountMismatches, []);
      await sql`UPDATE test_runs SET artifact_count = artifact_count + 5 WHERE id = ${run.id}`.execute(ctx.db);
      const report = await verifyStorage(ctx, { hashContents: false });
      assert.deepEqual(report.runCountMismatches, [{ runId: run.id, counted: 6, recounted: 1 }]);
      await sql`UPDATE test_runs SET artifact_count = artifact_count - 5 WHERE id = ${run.id}`.execute(ctx.db);
      await manager.client.call(v1.runs.deleteRun, { params: { testRunId: run.id } });
    });

    test("migration 0007 counts each run's artifacts already there; its triggers come back with it", async () => {
      const run = await startRun();
      await shot(run.id, await randomPng(12, 12));
      await shot(run.id, await randomPng(12, 12));
      const db = server.app.attest.db;
      await runCountMigration.down(db);
      await runCountMigration.up(db);
      await assertCountersTrue();
      const count = async () =>
        Number(
          (await db.selectFrom('test_runs').select('artifact_count').where('id', '=', run.id).executeTakeFirstOrThrow()).artifact_count,
        );
      assert.equal(await count(), 2);
      await shot(run.id, await randomPng(12, 12));
      assert.equal(await count(), 3);
      await assertCountersTrue();
      await manager.client.call(v1.runs.deleteRun, { params: { testRunId: run.id } });
    });

    test('the migration counts what was there before it: down and up again give the same counters', async () => {
      const run = await startRun();
      await shot(run.id, await randomPng(12, 12));
      const counted = await usage();
      const db = server.app.attest.db;
      // On PostgreSQL, migration 0023 keeps the run counters since and 0024 replaced a trigger
      // function: they go first and come back last.
      await blobRefsMigration.down(db);
      await runDaysMigration.down(db);
      await usageMigration.down(db);
      await usageMigration.up(db);
      await runDaysMigration.up(db);
      await blobRefsMigration.up(db);
      assert.deepEqual(await usage(), { ...counted, quotaBytes: null });
      await assertCountersTrue();
      // And the triggers are back.
      await shot(run.id, await randomPng(12, 12));
      assert.equal((await usage()).artifacts, counted.artifacts + 1);
      await assertCountersTrue();
    });
  });
}
