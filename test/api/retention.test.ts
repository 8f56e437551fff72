import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type ApiError, v1 } from '../../src/client/index.ts';
import { deleteRuns, expiredRuns, type Policy } from '../../src/server/db/repositories/retention.ts';
import { sweepRetention } from '../../src/server/services/operations/retention.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createProject, createUser, type TestUser, unique } from '../helpers/factories.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

// RET-2: retention per project (or the instance default) expires finished runs by age (failed
// ones by their own age) and beyond the last N runs of a test; runs marked keep, and runs not
// finished, never go. A dry run counts and deletes nothing.

const DAY = 86_400_000;
const ago = (days: number) => new Date(Date.now() - days * DAY).toISOString();

for (const dialect of DIALECTS) {
  describe(`[${dialect}] retention (RET-2)`, () => {
    let server: TestServer;
    let manager: TestUser;

    before(async () => {
      // The instance default: a year, for projects without their own policy. No timed sweep: the test sweeps.
      server = await startTestServer(dialect, { ATTEST_RETENTION_DAYS: '365', ATTEST_RETENTION_INTERVAL_MINUTES: '0' });
      manager = await createUser(server, ['manager']);
    });
    after(() => server.close());

    const project = async () => {
      const created = await createProject(server, unique('Retention '));
      await server.admin.client.call(v1.projects.addMember, { params: { projectId: created.id, email: manager.email } });
      return created;
    };
    /** A run recorded finished `days` ago. */
    const finished = async (projectId: string, days: number, verdict: 'passed' | 'failed', testName?: string) =>
      manager.client.call(v1.runs.createRun, {
        body: {
          projectId,
          name: unique('run-'),
          verdict,
          startedAt: ago(days + 0.01),
          finishedAt: ago(days),
          ...(testName ? { testName } : {}),
        },
      });
    const alive = async (projectId: string) => {
      const runs = await manager.client.call(v1.runs.listRuns, { query: { projectId, limit: 200 } });
      return new Set(runs.items.map((run) => run.id));
    };

    test('by age: passed runs after `days`, failed ones after `failedDays`; kept and unfinished runs stay; a dry run deletes nothing', async () => {
      const { id: projectId } = await project();
      const updated = await manager.client.call(v1.projects.updateProject, {
        params: { projectId },
        body: { retention: { days: 30, failedDays: 90 } },
      });
      assert.deepEqual(updated.retention, { days: 30, failedDays: 90 });
      const oldPassed = await finished(projectId, 40, 'passed');
      const youngPassed = await finished(projectId, 10, 'passed');
      const oldFailed = await finished(projectId, 40, 'failed');
      const ancientFailed = await finished(projectId, 100, 'failed');
      const kept = await finished(projectId, 40, 'passed');
      const running = await manager.client.call(v1.runs.createRun, { body: { projectId, name: 'still running', startedAt: ago(200) } });
      const marked = await manager.client.call(v1.runs.keepRun, { params: { testRunId: kept.id }, body: { keep: true } });
      assert.equal(marked.keep, true);

      const dry = await sweepRetention(server.app.attest, { dryRun: true });
      assert.equal(dry.projects.find((p) => p.rules.days === 30)?.expired, 2);
      assert.equal((await alive(projectId)).size, 6, 'a dry run deletes nothing');

      await sweepRetention(server.app.attest);
      assert.deepEqual(await alive(projectId), new Set([youngPassed.id, oldFailed.id, kept.id, running.id]));
      for (const gone of [oldPassed, ancientFailed]) {
        await assert.rejects(manager.client.call(v1.runs.getRun, { params: { testRunId: gone.id } }), (e: ApiError) => e.status === 404);
      }
      const audit = await server.admin.client.call(v1.users.listAuditLog, { query: { action: 'retention.sweep', targetId: projectId } });
      assert.equal(audit.items.length, 1);
    });

    test('by count: the last N finished runs of each test stay, with age: either rule keeps a run', async () => {
      const { id: projectId } = await project();
      await manager.client.call(v1.projects.updateProject, { params: { projectId }, body: { retention: { lastRunsPerTest: 2 } } });
      const login = [await finished(projectId, 50, 'passed', 'login'), await finished(projectId, 40, 'failed', 'login')];
      const newest = [await finished(projectId, 30, 'passed', 'login'), await finished(projectId, 20, 'passed', 'login')];
      const loose = await finished(projectId, 500, 'passed');
      await sweepRetention(server.app.attest);
      assert.deepEqual(await alive(projectId), new Set([...newest.map((r) => r.id), loose.id]), 'a run of no test is kept by no count');
      void login;

      await manager.client.call(v1.projects.updateProject, {
        params: { projectId },
        body: { retention: { days: 25, lastRunsPerTest: 1 } },
      });
      await sweepRetention(server.app.attest);
      // The 30-day run is neither young enough nor the newest of its test; the 20-day one is both; the loose one is old.
      assert.deepEqual(await alive(projectId), new Set([newest[1]?.id]));
    });

    test('paged from where the last page ended, the sweep finds the runs one query over the project finds, and the rules say', async () => {
      // Three tests and loose runs, passed and failed, at ages around both cutoffs, some finished at
      // the same instant, some marked keep: a page of 3 ends inside groups of ties and inside tests.
      const policies: Policy[] = [
        { cutoff: ago(30), failedCutoff: ago(60), lastRunsPerTest: 2 },
        { cutoff: ago(30), failedCutoff: ago(60) },
        { failedCutoff: ago(45), lastRunsPerTest: 3 },
      ];
      for (const policy of policies) {
        const { id: projectId } = await project();
        const tie = ago(50);
        const runs: { id: string; test?: string; finishedAt: string; verdict: string; keep: boolean }[] = [];
        let n = 0;
        for (const testName of ['login', 'search', 'cart', undefined]) {
          for (const days of [120, 90, 70, 50, 50, 50, 40, 35, 31, 20, 5]) {
            const verdict = n % 3 === 0 ? 'failed' : 'passed';
            const finishedAt = days === 50 ? tie : ago(days);
            const run = await manager.client.call(v1.runs.createRun, {
              body: { projectId, name: unique('run-'), verdict, startedAt: ago(200), finishedAt, ...(testName ? { testName } : {}) },
            });
            const keep = n % 7 === 3;
            if (keep) await manager.client.call(v1.runs.keepRun, { params: { testRunId: run.id }, body: { keep: true } });
            runs.push({ id: run.id, ...(testName ? { test: testName } : {}), finishedAt: run.finishedAt ?? finishedAt, verdict, keep });
            n++;
          }
        }
        // RET-2 as written: kept by its age (failed runs by failedCutoff, else cutoff), by being
        // among its test's last lastRunsPerTest runs (newest first, ties by id), or by its mark.
        const expected = new Set(
          runs
            .filter((run) => {
              if (run.keep) return false;
              const cutoff = run.verdict === 'failed' ? (policy.failedCutoff ?? policy.cutoff) : policy.cutoff;
              const oldEnough =
                policy.cutoff === undefined && policy.failedCutoff === undefined ? true : cutoff !== undefined && run.finishedAt < cutoff;
              if (policy.lastRunsPerTest === undefined) return oldEnough;
              if (run.test === undefined) return oldEnough && (policy.cutoff !== undefined || policy.failedCutoff !== undefined);
              const newer = runs.filter(
                (o) => o.test === run.test && (o.finishedAt > run.finishedAt || (o.finishedAt === run.finishedAt && o.id > run.id)),
              );
              return oldEnough && newer.length >= policy.lastRunsPerTest;
            })
            .map((run) => run.id),
        );
        assert.ok(expected.size >= 6, 'enough expired runs for two pages at least');
        const db = server.app.attest.db;
        const whole = await expiredRuns(db, projectId, policy, Number.MAX_SAFE_INTEGER);
        assert.deepEqual(new Set(whole.map((run) => run.id)), expected);
        const paged: string[] = [];
        let from: string | undefined;
        for (;;) {
          const page = await expiredRuns(db, projectId, policy, 3, from);
          paged.push(...page.map((run) => run.id));
          await deleteRuns(
            db,
            page.map((run) => run.id),
          );
          if (page.length < 3) break;
          from = page[page.length - 1]?.finishedAt;
        }
        assert.equal(paged.length, expected.size, 'no run found twice');
        assert.deepEqual(new Set(paged), expected);
      }
    });

    test('without a policy a project follows the instance default; null returns to it; {} keeps everything', async () => {
      const { id: projectId } = await project();
      const old = await finished(projectId, 400, 'passed');
      const young = await finished(projectId, 300, 'passed');
      const custom = await manager.client.call(v1.projects.updateProject, { params: { projectId }, body: { retention: {} } });
      assert.deepEqual(custom.retention, {});
      await sweepRetention(server.app.attest);
      assert.equal((await alive(projectId)).size, 2, 'an empty policy keeps everything');
      const reset = await manager.client.call(v1.projects.updateProject, { params: { projectId }, body: { retention: null } });
      assert.equal(reset.retention, null);
      await sweepRetention(server.app.attest);
      assert.deepEqual(await alive(projectId), new Set([young.id]), 'ATTEST_RETENTION_DAYS=365');
      void old;
    });

    test('run as a periodic task, a sweep stops before its next batch once its lease is lost; the next sweep goes on', async () => {
      // Whatever earlier tests left expired goes first: the batches below are this project's.
      await sweepRetention(server.app.attest);
      const { id: projectId } = await project();
      await manager.client.call(v1.projects.updateProject, { params: { projectId }, body: { retention: { days: 30 } } });
      for (let i = 0; i < 120; i++) await finished(projectId, 40, 'passed');
      // The lease as the task runner hands it, held for one look: lost before the second batch of 100.
      let looks = 1;
      const lease = { stillHeld: () => looks-- > 0, signal: new AbortController().signal };
      const report = await sweepRetention(server.app.attest, { lease });
      assert.equal(report.deleted, 100);
      assert.equal((await alive(projectId)).size, 20, 'the rest left to the next sweep');
      await sweepRetention(server.app.attest);
      assert.equal((await alive(projectId)).size, 0);
    });

    test('only a manager sets a policy; a bad one is a 400', async () => {
      const { id: projectId } = await project();
      const tester = await createUser(server, ['tester'], { projects: [projectId] });
      await assert.rejects(
        tester.client.call(v1.projects.updateProject, { params: { projectId }, body: { retention: { days: 7 } } }),
        (e: ApiError) => e.status === 403,
      );
      await assert.rejects(
        manager.client.call(v1.projects.updateProject, { params: { projectId }, body: { retention: { days: 0 } as never } }),
        (e: ApiError) => e.status === 400,
      );
    });
  });
}
