import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { type ClaimedTask, type TaskHold, TaskInterrupted, type TaskStore } from '../../background.ts';
import { dialectOf } from '../dialect.ts';
import type { DB, Executor, TasksTable } from '../types.ts';

// The background task queue (SCALE-5): one row a task, claimed for a lease. Every change to a
// claimed task is fenced by its owner, so an instance whose lease ran out changes nothing of the
// task another instance holds by now.

export interface TaskToAdd {
  kind: string;
  key: string;
  /** JSON. */
  payload: string;
  runAt: Date;
  now: Date;
}

/**
 * Adds a task unless one with its key is there (true when added), in the caller's transaction
 * when given one: a task enqueued with the row it works on commits or rolls back with it.
 */
export async function enqueueTask(executor: Executor, task: TaskToAdd): Promise<boolean> {
  const result = await executor
    .insertInto('tasks')
    .values({
      id: randomUUID(),
      kind: task.kind,
      payload: task.payload,
      key: task.key,
      run_at: task.runAt.toISOString(),
      attempts: 0,
      lease_owner: null,
      lease_until: null,
      last_error: null,
      created_at: task.now.toISOString(),
    })
    .onConflict((conflict) => conflict.column('key').doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0) > 0;
}

/**
 * Leases the oldest due task of these kinds that no live lease holds to `owner`, counting the
 * attempt. On PostgreSQL the candidate row is locked with SKIP LOCKED, so concurrent claimers
 * each take another task and none waits; SQLite has one writer, and one statement suffices.
 */
export async function claimTask(
  executor: Executor,
  claim: { owner: string; kinds: readonly string[]; now: Date; leaseUntil: Date },
): Promise<TasksTable | undefined> {
  const now = claim.now.toISOString();
  let due = executor
    .selectFrom('tasks')
    .select('id')
    .where('kind', 'in', claim.kinds)
    .where('run_at', '<=', now)
    .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', now)]))
    .orderBy('run_at')
    .limit(1);
  if (dialectOf(executor) === 'postgres') due = due.forUpdate().skipLocked();
  return executor
    .updateTable('tasks')
    .set((eb) => ({ lease_owner: claim.owner, lease_until: claim.leaseUntil.toISOString(), attempts: eb('attempts', '+', 1) }))
    .where('id', '=', due)
    .returningAll()
    .executeTakeFirst();
}

/** Extends a lease `owner` still holds; false when it holds the task no longer. */
export async function renewTaskLease(executor: Executor, id: string, owner: string, leaseUntil: Date): Promise<boolean> {
  const result = await executor
    .updateTable('tasks')
    .set({ lease_until: leaseUntil.toISOString() })
    .where('id', '=', id)
    .where('lease_owner', '=', owner)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/**
 * Whether `owner` still holds the task, asked inside a transaction that writes the task's work
 * (SCALE-5). On PostgreSQL the row is then share-locked until that transaction ends: a claim skips
 * it meanwhile, so no other instance takes the task over between this check and the commit, and
 * one that took it over before the check makes it false.
 */
export async function holdsTaskLease(executor: Executor, id: string, owner: string): Promise<boolean> {
  let query = executor.selectFrom('tasks').select('id').where('id', '=', id).where('lease_owner', '=', owner);
  if (dialectOf(executor) === 'postgres') query = query.forShare();
  return (await query.executeTakeFirst()) !== undefined;
}

/**
 * Throws TaskInterrupted unless the runner still holds the task; the first statement of every
 * transaction a task's handler writes in (an import's job, each batch, its end). `stillHeld()` is
 * this instance's own view: an instance that stalled after asking it may have lost the task to
 * another, which is writing the same rows by now. On PostgreSQL the check also keeps the task from
 * being claimed until the transaction ends (`holdsTaskLease`). `what` names the work in the error.
 */
export async function assertTaskHeld(executor: Executor, hold: TaskHold, what: string): Promise<void> {
  if (!(await holdsTaskLease(executor, hold.taskId, hold.owner))) throw new TaskInterrupted(`${what}: its task is another's now`);
}

/** Deletes a task `owner` holds (done, or given up). */
export async function finishTask(executor: Executor, id: string, owner: string): Promise<void> {
  await executor.deleteFrom('tasks').where('id', '=', id).where('lease_owner', '=', owner).execute();
}

/** Ends `owner`'s lease on a task, due again at `runAt` (a retry, a periodic task's next run, a stop). */
export async function releaseTask(
  executor: Executor,
  id: string,
  owner: string,
  next: { runAt: Date; attempts: number; lastError: string | null },
): Promise<void> {
  await executor
    .updateTable('tasks')
    .set({ run_at: next.runAt.toISOString(), attempts: next.attempts, last_error: next.lastError, lease_owner: null, lease_until: null })
    .where('id', '=', id)
    .where('lease_owner', '=', owner)
    .execute();
}

/**
 * A periodic task's one row: added due at `dueBy` when missing, or brought forward to `dueBy` when
 * it is due later and not running (the period was shortened since it was scheduled).
 */
export async function scheduleTask(executor: Executor, task: { kind: string; key: string; dueBy: Date; now: Date }): Promise<void> {
  await enqueueTask(executor, { kind: task.kind, key: task.key, payload: '{}', runAt: task.dueBy, now: task.now });
  await executor
    .updateTable('tasks')
    .set({ run_at: task.dueBy.toISOString() })
    .where('key', '=', task.key)
    .where('run_at', '>', task.dueBy.toISOString())
    .where('lease_owner', 'is', null)
    .execute();
}

export async function removeTask(executor: Executor, key: string): Promise<void> {
  await executor.deleteFrom('tasks').where('key', '=', key).execute();
}

/** When the next task of these kinds becomes claimable: its due time, or its lease's end if later. */
export async function nextClaimableTask(executor: Executor, kinds: readonly string[]): Promise<Date | undefined> {
  if (kinds.length === 0) return undefined;
  const row = await executor
    .selectFrom('tasks')
    .select(sql<string | null>`MIN(CASE WHEN lease_until IS NOT NULL AND lease_until > run_at THEN lease_until ELSE run_at END)`.as('at'))
    .where('kind', 'in', kinds)
    .executeTakeFirst();
  return row?.at ? new Date(row.at) : undefined;
}

/** Ends every lease: on SQLite at start, where the data folder's lock proves their holder dead. */
export async function releaseAllTaskLeases(executor: Executor): Promise<void> {
  await executor.updateTable('tasks').set({ lease_owner: null, lease_until: null }).where('lease_owner', 'is not', null).execute();
}

/** A task by key (tests and the migration's check read it). */
export async function findTaskByKey(executor: Executor, key: string): Promise<TasksTable | undefined> {
  return executor.selectFrom('tasks').selectAll().where('key', '=', key).executeTakeFirst();
}

/**
 * The runner's store (the `TaskStore` port of background.ts) over `db`: tasks are added on `db`,
 * and claimed, renewed and finished on `leases`, the runner's own connections on PostgreSQL
 * (lease-connections.ts), which `close()` ends. On SQLite `leases` is `db` itself and the queue is
 * this process's alone.
 */
export function taskStore(db: DB, leases: DB = db): TaskStore {
  const shared = dialectOf(db) === 'postgres';
  let closing: Promise<void> | undefined;
  const claimed = (row: TasksTable | undefined): ClaimedTask | undefined =>
    row && { id: row.id, kind: row.kind, key: row.key, payload: row.payload, attempts: row.attempts, lastError: row.last_error };
  return {
    shared,
    add: (task) => enqueueTask(db, task),
    schedule: (kind, key, dueBy, now) => scheduleTask(leases, { kind, key, dueBy, now }),
    remove: (key) => removeTask(leases, key),
    claim: async (owner, kinds, now, leaseUntil) => claimed(await claimTask(leases, { owner, kinds, now, leaseUntil })),
    renew: (id, owner, leaseUntil) => renewTaskLease(leases, id, owner, leaseUntil),
    finish: (id, owner) => finishTask(leases, id, owner),
    release: (id, owner, next) => releaseTask(leases, id, owner, next),
    nextClaimable: (kinds) => nextClaimableTask(leases, kinds),
    recover: async () => {
      if (!shared) await releaseAllTaskLeases(db);
    },
    close: () => {
      closing ??= leases === db ? Promise.resolve() : leases.destroy();
      return closing;
    },
  };
}
