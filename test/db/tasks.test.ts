import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { type Lease, type Task, TaskInterrupted, TaskRunner, type TaskStore, TaskTimedOut } from '../../src/server/background.ts';
import { openLeaseConnections } from '../../src/server/db/lease-connections.ts';
import * as tasksMigration from '../../src/server/db/migrations/2026-11-27-0013-tasks.ts';
import { claimTask, enqueueTask, findTaskByKey, finishTask, releaseTask, taskStore } from '../../src/server/db/repositories/tasks.ts';
import { inTransaction } from '../../src/server/db/repositories/transaction.ts';
import type { DB, ImportsTable } from '../../src/server/db/types.ts';
import { cuttableProxy } from '../helpers/cuttable-proxy.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createProject } from '../helpers/factories.ts';
import { acceptedImportRow } from '../helpers/import-rows.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { delay, waitFor } from '../helpers/wait.ts';

// SCALE-5: the background task queue. Tasks are rows claimed for a lease; on PostgreSQL
// concurrent claimers (each on connections of its own, like instances) take each task exactly
// once; a lease that runs out hands the task to another runner, a renewed one keeps it; a periodic
// task runs on one runner at a time; a failure is retried later and later, then given up. The
// test's own task kinds are ones the server's runner does not handle, so it never takes them.

const silentLog = { error() {}, warn() {} };

for (const dialect of DIALECTS) {
  describe(`[${dialect}] the background task queue (SCALE-5)`, () => {
    let server: TestServer;
    let db: DB;
    const stores: TaskStore[] = [];
    const runners: TaskRunner[] = [];

    before(async () => {
      server = await startTestServer(dialect);
      db = server.app.attest.db;
    });
    after(async () => {
      await Promise.all(runners.map((runner) => runner.stop()));
      await Promise.all(stores.map((store) => store.close()));
      await server.close();
    });

    /** A store as an instance has one: on PostgreSQL with lease connections of its own. */
    const storeOf = () => {
      const url = server.config.databaseUrl;
      const store = taskStore(db, url ? openLeaseConnections(url, () => {}) : undefined);
      stores.push(store);
      return store;
    };
    const runnerOf = (options: Partial<ConstructorParameters<typeof TaskRunner>[0]> = {}) => {
      const runner = new TaskRunner({ store: storeOf(), log: silentLog, leaseMs: 30_000, pollMs: 20, ...options });
      runners.push(runner);
      return runner;
    };
    const kindOf = (name: string) => `${name}-${randomUUID().slice(0, 8)}`;
    const add = (kind: string, key: string, runAt = new Date()) =>
      enqueueTask(db, { kind, key, payload: JSON.stringify({ key }), runAt, now: new Date() });

    test('enqueueing is idempotent by key, and joins the caller’s transaction', async () => {
      const kind = kindOf('once');
      assert.equal(await add(kind, `${kind}:a`), true);
      assert.equal(await add(kind, `${kind}:a`), false, 'the same key adds nothing');
      await assert.rejects(
        inTransaction(db, async (trx) => {
          await enqueueTask(trx, { kind, key: `${kind}:b`, payload: '{}', runAt: new Date(), now: new Date() });
          throw new Error('rolled back');
        }),
      );
      assert.equal(await findTaskByKey(db, `${kind}:b`), undefined, 'a rolled-back transaction took its task with it');
      await inTransaction(db, (trx) => enqueueTask(trx, { kind, key: `${kind}:c`, payload: '{}', runAt: new Date(), now: new Date() }));
      assert.ok(await findTaskByKey(db, `${kind}:c`));
    });

    test('a claim takes due tasks only, oldest first, and none that a live lease holds', async () => {
      const kind = kindOf('claim');
      const t0 = Date.now();
      await add(kind, `${kind}:later`, new Date(t0 + 60_000));
      await add(kind, `${kind}:second`, new Date(t0 - 1000));
      await add(kind, `${kind}:first`, new Date(t0 - 2000));
      const claim = (owner: string, at: number) =>
        claimTask(db, { owner, kinds: [kind], now: new Date(at), leaseUntil: new Date(at + 10_000) });
      assert.equal((await claim('a', t0))?.key, `${kind}:first`);
      assert.equal((await claim('b', t0))?.key, `${kind}:second`);
      assert.equal(await claim('c', t0), undefined, 'the rest is leased or not due');
      const expired = await claim('c', t0 + 10_001);
      assert.ok(expired?.key === `${kind}:first` || expired?.key === `${kind}:second`, 'a lease that ran out is claimed by another');
      assert.equal(expired?.attempts, 2, 'each claim counts an attempt');
      assert.equal(expired?.lease_owner, 'c');
      await releaseTask(db, expired.id, 'a', { runAt: new Date(t0), attempts: 0, lastError: null });
      assert.equal((await findTaskByKey(db, expired.key))?.lease_owner, 'c', 'the late owner changed nothing');
      await finishTask(db, expired.id, 'c');
      const other = expired.key === `${kind}:first` ? `${kind}:second` : `${kind}:first`;
      await finishTask(db, (await findTaskByKey(db, other))?.id as string, other.endsWith('first') ? 'a' : 'b');
      assert.equal((await claim('d', t0 + 60_000))?.key, `${kind}:later`, 'due in a minute, claimed then');
    });

    test('concurrent runners take 200 tasks, each exactly once', { timeout: 120_000 }, async () => {
      const kind = kindOf('burst');
      const keys = Array.from({ length: 200 }, (_, i) => `${kind}:${i}`);
      for (const key of keys) await add(kind, key);
      const seen = new Map<string, number>();
      const byRunner = new Map<string, number>();
      const fleet = Array.from({ length: 10 }, () => runnerOf());
      for (const runner of fleet) {
        runner.handle(kind, async (task) => {
          seen.set(task.key, (seen.get(task.key) ?? 0) + 1);
          byRunner.set(runner.instanceId, (byRunner.get(runner.instanceId) ?? 0) + 1);
          await nextTurn();
        });
      }
      for (const runner of fleet) runner.start();
      await waitFor(() => seen.size === keys.length, { timeoutMs: 60_000, message: () => `${seen.size} of ${keys.length} ran` });
      await Promise.all(fleet.map((runner) => runner.idle()));
      assert.deepEqual(
        [...seen.values()].filter((n) => n !== 1),
        [],
        'no task ran twice',
      );
      for (const key of keys) assert.equal(await findTaskByKey(db, key), undefined, 'finished tasks are deleted');
      if (dialect === 'postgres') assert.ok(byRunner.size > 1, 'the runners shared the work');
    });

    test('a renewed lease keeps the task; a lost one stops the handler', { timeout: 60_000 }, async () => {
      const kind = kindOf('lease');
      const runner = runnerOf({ leaseMs: 300 });
      let lease: Lease | undefined;
      let release: () => void = () => {};
      const released = new Promise<void>((resolve) => {
        release = resolve;
      });
      runner.handle(kind, async (_task, held) => {
        lease = held;
        await released;
        if (!held.stillHeld()) throw new TaskInterrupted();
      });
      runner.start();
      await runner.enqueue({ kind, key: `${kind}:long` });
      await waitFor(() => lease);
      // Deliberate: five lease lengths, in which no other claimer may take the task.
      const until = Date.now() + 1500;
      while (Date.now() < until) {
        assert.equal(
          await claimTask(db, { owner: 'other', kinds: [kind], now: new Date(), leaseUntil: new Date(Date.now() + 300) }),
          undefined,
        );
        await delay(50);
      }
      assert.equal(lease?.stillHeld(), true);

      // Another instance takes it over (as it would once the lease had run out): the renewal finds it gone.
      await db
        .updateTable('tasks')
        .set({ lease_owner: 'other', lease_until: new Date(Date.now() + 3_600_000).toISOString() })
        .where('key', '=', `${kind}:long`)
        .execute();
      await waitFor(() => lease?.signal.aborted);
      assert.equal(lease?.stillHeld(), false);
      release();
      await runner.idle();
      const row = await findTaskByKey(db, `${kind}:long`);
      assert.equal(row?.lease_owner, 'other', 'the interrupted runner left the task to its new owner');
    });

    test('a stopped runner gives its task back, the claim uncounted', async () => {
      const kind = kindOf('stop');
      const runner = runnerOf();
      let started = false;
      runner.handle(kind, async (_task, lease) => {
        started = true;
        await waitFor(() => lease.signal.aborted, { timeoutMs: 30_000 });
        throw new TaskInterrupted();
      });
      runner.start();
      await runner.enqueue({ kind, key: `${kind}:x` });
      await waitFor(() => started);
      await runner.stop();
      const row = await findTaskByKey(db, `${kind}:x`);
      assert.equal(row?.lease_owner, null);
      assert.equal(row?.attempts, 0);
    });

    test('a periodic task runs on one runner at a time, and 0 switches it off', { timeout: 60_000 }, async () => {
      const kind = kindOf('tick');
      let running = 0;
      let most = 0;
      let runs = 0;
      const fleet = [runnerOf(), runnerOf(), runnerOf()];
      for (const runner of fleet) {
        runner.every(kind, 30, async () => {
          running++;
          most = Math.max(most, running);
          // Deliberate: long enough that another runner's poll falls inside the run.
          await delay(40);
          running--;
          runs++;
        });
        runner.start();
      }
      await waitFor(() => runs >= 10, { timeoutMs: 30_000 });
      assert.equal(most, 1, 'never two runs at once');
      const row = await findTaskByKey(db, `periodic:${kind}`);
      assert.ok(row, 'one row holds the schedule');
      await Promise.all(fleet.map((runner) => runner.stop()));

      const off = runnerOf();
      off.every(kind, 0, async () => {});
      off.start();
      await waitFor(async () => (await findTaskByKey(db, `periodic:${kind}`)) === undefined);
    });

    test('a failing task is retried later each time, then given up', { timeout: 60_000 }, async () => {
      const kind = kindOf('fail');
      const runner = runnerOf({ retryMs: 200, maxAttempts: 3 });
      const calls: number[] = [];
      const gaveUp: Task[] = [];
      runner.handle(
        kind,
        async () => {
          calls.push(Date.now());
          throw new Error(`failure ${calls.length}`);
        },
        { gaveUp: async (task) => void gaveUp.push(task) },
      );
      runner.start();
      await runner.enqueue({ kind, key: `${kind}:x` });
      await waitFor(async () => calls.length === 1 && (await findTaskByKey(db, `${kind}:x`))?.lease_owner === null);
      const first = await findTaskByKey(db, `${kind}:x`);
      assert.equal(first?.last_error, 'failure 1');
      assert.equal(first?.attempts, 1);
      await waitFor(() => gaveUp.length === 1, { timeoutMs: 20_000 });
      assert.equal(calls.length, 3, 'three attempts, then given up');
      assert.ok((calls[1] as number) - (calls[0] as number) >= 200, 'the first retry waited the retry delay');
      assert.ok((calls[2] as number) - (calls[1] as number) >= 400, 'the second waited twice as long');
      assert.equal(gaveUp[0]?.lastError, 'failure 3');
      await waitFor(async () => (await findTaskByKey(db, `${kind}:x`)) === undefined, { message: 'a given-up task is deleted' });
    });

    test('a task claimed more often than allowed without finishing is given up unrun', async () => {
      const kind = kindOf('crashing');
      await add(kind, `${kind}:x`);
      // Two instances died with it: their claims count, their leases ran out.
      for (const owner of ['dead-1', 'dead-2']) {
        await claimTask(db, { owner, kinds: [kind], now: new Date(), leaseUntil: new Date(Date.now() - 1) });
      }
      const runner = runnerOf({ maxAttempts: 2 });
      let ran = false;
      const gaveUp: Task[] = [];
      runner.handle(
        kind,
        async () => {
          ran = true;
        },
        { gaveUp: async (task) => void gaveUp.push(task) },
      );
      runner.start();
      await waitFor(() => gaveUp.length === 1);
      assert.equal(ran, false);
      assert.equal(gaveUp[0]?.attempts, 3);
      await waitFor(async () => (await findTaskByKey(db, `${kind}:x`)) === undefined, { message: 'a given-up task is deleted' });
    });

    test('a task whose payload is not JSON is given up at its first claim, with the reason logged', async () => {
      const kind = kindOf('garbled');
      await enqueueTask(db, { kind, key: `${kind}:x`, payload: '{not json', runAt: new Date(), now: new Date() });
      const errors: { object: { lastError?: string }; message: string }[] = [];
      const runner = runnerOf({ log: { error: (object, message) => errors.push({ object, message }), warn() {} } });
      let ran = false;
      runner.handle(kind, async () => {
        ran = true;
      });
      runner.start();
      await waitFor(async () => (await findTaskByKey(db, `${kind}:x`)) === undefined, { message: 'the task is given up and deleted' });
      assert.equal(ran, false);
      const gaveUp = errors.find((e) => e.message === `background task ${kind} given up`);
      assert.match(String(gaveUp?.object.lastError), /payload is not JSON/);
    });

    test('a task never waits behind a stuck task of another kind; one of the same kind waits its turn (SCALE-9)', {
      timeout: 60_000,
    }, async () => {
      const [stuck, quick] = [kindOf('stuck'), kindOf('quick')];
      const runner = runnerOf({ timeoutMs: 60_000 });
      const ran: string[] = [];
      let unstick: () => void = () => {};
      const unstuck = new Promise<void>((resolve) => {
        unstick = resolve;
      });
      runner.handle(stuck, async (task) => {
        ran.push(task.key);
        if (task.key.endsWith(':first')) await unstuck;
      });
      runner.handle(quick, async (task) => void ran.push(task.key));
      runner.start();
      await runner.enqueue({ kind: stuck, key: `${stuck}:first` });
      await waitFor(() => ran.includes(`${stuck}:first`));
      await runner.enqueue({ kind: stuck, key: `${stuck}:second` });
      for (let i = 0; i < 3; i++) await runner.enqueue({ kind: quick, key: `${quick}:${i}` });
      await waitFor(() => ran.filter((key) => key.startsWith(quick)).length === 3, { message: 'the other kind ran meanwhile' });
      assert.equal(ran.includes(`${stuck}:second`), false, 'the same kind waits for its lane');
      unstick();
      await waitFor(() => ran.includes(`${stuck}:second`));
      await runner.idle();
    });

    test('a task past its time limit is told to stop and given up with the reason, a handler that ignores it left behind (SCALE-9)', {
      timeout: 60_000,
    }, async () => {
      const [polite, deaf] = [kindOf('polite'), kindOf('deaf')];
      const runner = runnerOf({ timeoutMs: 300, abandonMs: 200 });
      const gaveUp: { key: string; cause: unknown; at: number }[] = [];
      const record = async (task: Task, cause?: unknown) => void gaveUp.push({ key: task.key, cause, at: Date.now() });
      const runs: string[] = [];
      let told: unknown;
      runner.handle(
        polite,
        async (task, lease) => {
          runs.push(task.key);
          await waitFor(() => lease.signal.aborted, { timeoutMs: 30_000 });
          told = lease.signal.reason;
          throw new TaskInterrupted();
        },
        { gaveUp: record },
      );
      // Stuck on something that takes no signal: never settles.
      runner.handle(
        deaf,
        async (task) => {
          runs.push(task.key);
          if (task.key.endsWith(':stuck')) await new Promise(() => {});
        },
        { gaveUp: record },
      );
      runner.start();
      const started = Date.now();
      await runner.enqueue({ kind: polite, key: `${polite}:x` });
      await runner.enqueue({ kind: deaf, key: `${deaf}:stuck` });
      await waitFor(() => gaveUp.length === 2, { timeoutMs: 10_000, message: 'both given up' });
      assert.ok(told instanceof TaskTimedOut, 'the signal says why');
      for (const { key, cause, at } of gaveUp) {
        assert.ok(cause instanceof TaskTimedOut, key);
        assert.match(cause.message, /ran past its time limit of 0\.3 s/);
        assert.ok(at - started >= 300, `${key} given up after its limit`);
        // Deleted once its gaveUp is done: never claimed again.
        await waitFor(async () => (await findTaskByKey(db, key)) === undefined, { message: `${key} is deleted` });
      }
      // The abandoned handler's lane is free again.
      await runner.enqueue({ kind: deaf, key: `${deaf}:next` });
      await waitFor(() => runs.includes(`${deaf}:next`));
      await runner.idle();
    });

    test('a handler that does not stop when its runner stops is left after abandonMs, its claim counted', { timeout: 60_000 }, async () => {
      const kind = kindOf('deaf-stop');
      const runner = runnerOf({ abandonMs: 200 });
      let started = false;
      runner.handle(kind, async () => {
        started = true;
        await new Promise(() => {});
      });
      runner.start();
      await runner.enqueue({ kind, key: `${kind}:x` });
      await waitFor(() => started);
      const stopping = Date.now();
      await runner.stop();
      assert.ok(Date.now() - stopping < 5000, 'the stop did not wait for the handler');
      const row = await findTaskByKey(db, `${kind}:x`);
      assert.equal(row?.lease_owner, null, 'its lease ended');
      assert.equal(row?.attempts, 1, 'the claim counts: a task that never stops is given up after its attempts');
      assert.match(String(row?.last_error), /did not stop within 200 ms/);
    });

    test('a periodic task past its time limit runs again a period later', { timeout: 60_000 }, async () => {
      const kind = kindOf('slow-tick');
      const runner = runnerOf({ timeoutMs: 200, abandonMs: 100 });
      const starts: number[] = [];
      runner.every(kind, 300, async (lease) => {
        starts.push(Date.now());
        if (starts.length === 1) await waitFor(() => lease.signal.aborted, { timeoutMs: 30_000 });
      });
      runner.start();
      await waitFor(() => starts.length >= 2, { timeoutMs: 20_000 });
      const row = await findTaskByKey(db, `periodic:${kind}`);
      assert.ok(row, 'its schedule stays');
      assert.ok((starts[1] as number) - (starts[0] as number) >= 200 + 300, 'a period after the limit stopped it');
    });

    test('renewals answered out of order never move the end of the lease backwards', { timeout: 60_000 }, async () => {
      const kind = kindOf('renewals');
      // The runner's clock is the test's (it starts at the real time: leases are compared with the
      // database's rows). Renewals run every 200 ms of real time. The first, to start + 600, is
      // answered only after the second, to start + 900 (the clock moved on meanwhile); the ones
      // after it are not answered before the end.
      const start = Date.now();
      let clock = start;
      const store = storeOf();
      const answers: (() => void)[] = [];
      let answering = false;
      const delayed: TaskStore = {
        ...store,
        renew: async (id, owner, until) => {
          const held = await store.renew(id, owner, until);
          const index = answers.length;
          if (index === 0) clock = start + 300;
          if (index === 1 || answering) answers.push(() => {});
          else await new Promise<void>((answer) => answers.push(answer));
          return held;
        },
      };
      const runner = new TaskRunner({ store: delayed, log: silentLog, leaseMs: 600, pollMs: 20, now: () => clock });
      runners.push(runner);
      let lease: Lease | undefined;
      let finish: () => void = () => {};
      const finished = new Promise<void>((resolve) => {
        finish = resolve;
      });
      runner.handle(kind, async (_task, held) => {
        lease = held;
        await finished;
      });
      runner.start();
      await runner.enqueue({ kind, key: `${kind}:x` });
      await waitFor(() => answers.length === 2, { message: 'the second renewal answered, the first not yet' });
      await nextTurn();
      (answers[0] as () => void)();
      await nextTurn();
      clock = start + 500;
      assert.equal(lease?.stillHeld(), true, 'held to start + 900 (the later renewal), not start + 600');
      answering = true;
      for (const answer of answers) answer();
      finish();
      await runner.idle();
    });

    if (dialect === 'postgres') {
      test('a runner whose database stops answering logs it, looks again later, and stops without hanging', {
        timeout: 60_000,
      }, async () => {
        const proxy = await cuttableProxy(server.config.databaseUrl as string);
        const errors: string[] = [];
        const store = taskStore(
          db,
          openLeaseConnections(proxy.url, () => {}),
        );
        const runner = new TaskRunner({
          store,
          log: { error: (_, message) => errors.push(message), warn() {} },
          leaseMs: 30_000,
          pollMs: 20,
        });
        try {
          runner.handle(kindOf('cut'), async () => {});
          runner.start();
          await runner.idle();
          // Its packets dropped from now on: the runner's open connection gets no answer, a new one none either.
          proxy.cut();
          await waitFor(() => errors.filter((message) => message === 'looking for background tasks failed').length >= 2, {
            timeoutMs: 30_000,
            message: 'failed looks logged, and looked again',
          });
          await runner.stop();
        } finally {
          await proxy.close();
        }
      });
    }

    if (dialect === 'sqlite') {
      test('on SQLite a starting runner ends the leases a dead process left', async () => {
        const kind = kindOf('orphan');
        await add(kind, `${kind}:x`);
        await claimTask(db, { owner: 'dead', kinds: [kind], now: new Date(), leaseUntil: new Date(Date.now() + 3_600_000) });
        const runner = runnerOf();
        let ran = false;
        runner.handle(kind, async () => {
          ran = true;
        });
        runner.start();
        await waitFor(() => ran);
      });
    }

    test('migration 0013 gives every unfinished import a task', async () => {
      // The server's own runner would write the imports below: it is stopped first.
      await server.app.attest.background.stop();
      const project = await createProject(server, 'Migration 0013');
      const row = (id: string, status: ImportsTable['status']) =>
        acceptedImportRow({
          id,
          project_id: project.id,
          status,
          file_name: 'r.xml',
          source_type: 'xml',
          source_sha256: '0'.repeat(64),
          source_size: 1,
        });
      const [queued, processing, completed] = [randomUUID(), randomUUID(), randomUUID()];
      await db
        .insertInto('imports')
        .values([row(queued, 'queued'), row(processing, 'processing'), row(completed, 'completed')])
        .execute();
      await tasksMigration.down(db);
      await tasksMigration.up(db);
      for (const id of [queued, processing]) {
        const task = await findTaskByKey(db, `import:${id}`);
        assert.equal(task?.kind, 'import');
        assert.deepEqual(JSON.parse(task?.payload ?? ''), { importId: id });
        assert.equal(task?.lease_owner, null);
      }
      assert.equal(await findTaskByKey(db, `import:${completed}`), undefined);
    });
  });
}
