import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { type HeldLease, TaskInterrupted, TaskRunner } from '../../src/server/background.ts';
import type { AppContext } from '../../src/server/context.ts';
import { findImport } from '../../src/server/db/repositories/imports.ts';
import { runKeysWithPrefix } from '../../src/server/db/repositories/runs.ts';
import { findTaskByKey, taskStore } from '../../src/server/db/repositories/tasks.ts';
import type { DB, TestRunsTable } from '../../src/server/db/types.ts';
import { handleImportTasks, readAgain, runImport } from '../../src/server/services/imports/tasks.ts';
import { writeImport } from '../../src/server/services/imports/write.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createProject } from '../helpers/factories.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

// SCALE-5, IMP-4: an import is written exactly once by whichever runner holds its task. `stillHeld()`
// is a runner's own view of its lease, asked between batches; an instance that stalls after asking
// may have lost the task to another by the time it writes. So every transaction that writes an
// import first checks in the database that the task is still the runner's: a runner that lost it
// writes nothing more, and the import is not failed or finished behind its new owner's back.
//
// The server's own runner is stopped: these tests play the runners. A lease is the runner's view
// (what `stillHeld()` answers) with the task and owner it names; who holds the task in the database
// is set the way a claim sets it.

const CASES = 600; // three batches of at most 250

function report(): Buffer {
  const cases = Array.from({ length: CASES }, (_, i) => `<testcase classname="com.example.Leases" name="case ${i}"/>`);
  return Buffer.from(`<?xml version="1.0"?><testsuite name="leases">${cases.join('')}</testsuite>`);
}

for (const dialect of DIALECTS) {
  describe(`[${dialect}] an import is written only under its task's lease (SCALE-5)`, () => {
    let server: TestServer;
    let ctx: AppContext;
    let db: DB;

    before(async () => {
      server = await startTestServer(dialect);
      ctx = server.app.attest;
      db = ctx.db;
      await ctx.background.stop();
    });
    after(() => server.close());

    /** An accepted import of CASES cases, its task held by `owner` in the database. */
    async function accepted(owner: string): Promise<{ importId: string; projectId: string; taskId: string }> {
      const projectId = (await createProject(server, 'Leases')).id;
      const answer = await server.admin.client.importReport(projectId, { name: 'leases.xml', bytes: report() });
      const importId = String(answer.id);
      await holdTask(importId, owner);
      const task = await findTaskByKey(db, `import:${importId}`);
      return { importId, projectId, taskId: task?.id as string };
    }
    /** Gives the import's task to `owner`, as its claim would (another instance's, once the lease ran out). */
    const holdTask = (importId: string, owner: string) =>
      db
        .updateTable('tasks')
        .set({ lease_owner: owner, lease_until: new Date(Date.now() + 3_600_000).toISOString() })
        .where('key', '=', `import:${importId}`)
        .execute();
    /** A runner's lease as it sees it: held for `checks` looks (every look by default). */
    const leaseOf = (taskId: string, owner: string, checks = Number.POSITIVE_INFINITY): HeldLease => {
      let left = checks;
      return { taskId, owner, signal: new AbortController().signal, stillHeld: () => left-- > 0 };
    };
    const runsOf = (projectId: string, importId: string) => runKeysWithPrefix(db, projectId, `import:${importId}:`);
    const jobsOf = async (projectId: string) => db.selectFrom('jobs').select('id').where('project_id', '=', projectId).execute();

    test('a runner whose task another took over before it made the job writes nothing: no job, no run', async () => {
      const { importId, projectId, taskId } = await accepted('instance-b');
      await assert.rejects(runImport(ctx, importId, leaseOf(taskId, 'instance-a')), TaskInterrupted);
      assert.deepEqual(await jobsOf(projectId), []);
      assert.equal((await runsOf(projectId, importId)).size, 0);
      assert.notEqual((await findImport(db, importId))?.status, 'failed');
    });

    test('a runner that lost its task after a batch writes no further batch; the new owner finishes every case once', async () => {
      const { importId, projectId, taskId } = await accepted('instance-a');
      // Its first look passes, the second (before the second batch) finds the lease ending: one batch written.
      await assert.rejects(runImport(ctx, importId, leaseOf(taskId, 'instance-a', 1)), TaskInterrupted);
      assert.equal((await runsOf(projectId, importId)).size, 250);

      // Instance B claims the task while A stalls; A, still believing its lease held, goes on.
      await holdTask(importId, 'instance-b');
      await assert.rejects(runImport(ctx, importId, leaseOf(taskId, 'instance-a')), TaskInterrupted);
      assert.equal((await runsOf(projectId, importId)).size, 250, 'the stale runner wrote no batch');
      assert.equal((await findImport(db, importId))?.status, 'processing');

      await runImport(ctx, importId, leaseOf(taskId, 'instance-b'));
      const done = await findImport(db, importId);
      assert.equal(done?.status, 'completed');
      assert.equal((await runsOf(projectId, importId)).size, CASES);
      const runs = await db
        .selectFrom('test_runs')
        .select('id')
        .where('job_id', '=', done?.job_id as string)
        .execute();
      assert.equal(runs.length, CASES, 'every case exactly once, in the one job');
      assert.equal((await jobsOf(projectId)).length, 1);
    });

    test('an attempt that read the import before another gave it its job writes into that job, not a second one', async () => {
      const { importId, projectId, taskId } = await accepted('instance-a');
      const stale = await findImport(db, importId);
      assert.ok(stale && stale.job_id === null);
      await assert.rejects(runImport(ctx, importId, leaseOf(taskId, 'instance-a', 1)), TaskInterrupted);
      const jobId = (await findImport(db, importId))?.job_id;
      assert.ok(jobId, 'the first attempt made the job');

      // Read before that job was made: the stored job wins over the one this attempt would make.
      await writeImport(ctx, stale, await readAgain(ctx, stale), leaseOf(taskId, 'instance-a'));
      const done = await findImport(db, importId);
      assert.equal(done?.status, 'completed');
      assert.equal(done?.job_id, jobId);
      assert.deepEqual(
        (await jobsOf(projectId)).map((job) => job.id),
        [jobId],
      );
      const runs = await db.selectFrom('test_runs').select('id').where('job_id', '=', jobId).execute();
      assert.equal(runs.length, CASES);
    });

    test('a completed import whose task outlived it (its instance died before deleting it) is not failed when the task is given up', async () => {
      const { importId, taskId } = await accepted('instance-a');
      await runImport(ctx, importId, leaseOf(taskId, 'instance-a'));
      const completed = await findImport(db, importId);
      assert.equal(completed?.status, 'completed');
      // The task is still there, claimed five times, its last lease run out.
      await db
        .updateTable('tasks')
        .set({ attempts: 5, lease_owner: 'instance-a', lease_until: new Date(Date.now() - 1000).toISOString() })
        .where('id', '=', taskId)
        .execute();
      const runner = new TaskRunner({ store: taskStore(db), log: { error() {}, warn() {} }, leaseMs: 30_000, pollMs: 20 });
      handleImportTasks({ ...ctx, background: runner });
      runner.start();
      try {
        await waitFor(async () => (await findTaskByKey(db, `import:${importId}`)) === undefined, { message: 'the task given up' });
      } finally {
        await runner.stop();
      }
      const after = await findImport(db, importId);
      assert.equal(after?.status, 'completed');
      assert.equal(after?.error, null);
      assert.equal(after?.finished_at, completed?.finished_at);
    });

    if (dialect === 'postgres') {
      test('a batch whose runs another writer committed meanwhile interrupts the import (resumed later), it does not fail it', async () => {
        const { importId, projectId, taskId } = await accepted('instance-a');
        await assert.rejects(runImport(ctx, importId, leaseOf(taskId, 'instance-a', 1)), TaskInterrupted);
        assert.equal((await runsOf(projectId, importId)).size, 250);

        // The task's row locked: the runner's next batch waits at its lease check, after it read
        // which runs were written. Meanwhile a writer that does not check the lease commits the run
        // of case 250, which that batch writes too.
        const locker = new pg.Client({ connectionString: server.config.databaseUrl });
        await locker.connect();
        try {
          await locker.query('BEGIN');
          await locker.query('SELECT 1 FROM tasks WHERE id = $1 FOR UPDATE', [taskId]);
          const resumed = runImport(ctx, importId, leaseOf(taskId, 'instance-a'));
          const outcome = resumed.then(
            () => 'finished',
            (error: unknown) => error,
          );
          await waitFor(
            async () => {
              const { rows } = await locker.query(
                "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
              );
              return rows[0].n > 0;
            },
            { message: 'the batch waits at its lease check' },
          );
          // On PostgreSQL the row also holds its generated length (migration 0022), which an insert may not set.
          const { duration_ms: _, ...first } = (await db
            .selectFrom('test_runs')
            .selectAll()
            .where('idempotency_key', '=', `import:${importId}:0`)
            .executeTakeFirstOrThrow()) as TestRunsTable & { duration_ms?: number };
          await db
            .insertInto('test_runs')
            .values({ ...first, id: randomUUID(), idempotency_key: `import:${importId}:250` })
            .execute();
          await locker.query('COMMIT');
          assert.ok((await outcome) instanceof TaskInterrupted, `interrupted, not ${String(await outcome)}`);
        } finally {
          await locker.end();
        }
        assert.equal((await findImport(db, importId))?.status, 'processing', 'not failed');

        await runImport(ctx, importId, leaseOf(taskId, 'instance-a'));
        assert.equal((await findImport(db, importId))?.status, 'completed');
        assert.equal((await runsOf(projectId, importId)).size, CASES, 'every case once');
      });
    }
  });
}
