import { sql } from 'kysely';
import { dialectOf } from '../dialect.ts';
import type { DB, Executor } from '../types.ts';

/**
 * Runs `work` in one transaction: a new one on the database, or the caller's when `executor` is
 * already a transaction (a use case that is part of a larger one, like results posted with a run).
 * Services hand the transaction on to repositories and never look inside it.
 */
export function inTransaction<T>(executor: Executor, work: (trx: Executor) => Promise<T>): Promise<T> {
  if (executor.isTransaction) return work(executor);
  return (executor as DB).transaction().execute(work);
}

/**
 * Runs the reads of `work` on one snapshot of the database: a REPEATABLE READ transaction on
 * PostgreSQL (each statement of a READ COMMITTED one sees the latest commit, so two reads can
 * disagree), a transaction on SQLite (whose readers see one snapshot already).
 */
export function inSnapshot<T>(executor: Executor, work: (trx: Executor) => Promise<T>): Promise<T> {
  if (executor.isTransaction) return work(executor);
  const transaction = (executor as DB).transaction();
  return (dialectOf(executor) === 'postgres' ? transaction.setIsolationLevel('repeatable read') : transaction).execute(work);
}

/**
 * Runs `work` in one transaction whose commit does not wait for its log flush on PostgreSQL
 * (`synchronous_commit` off for it alone), for writes no one is told of until a later transaction
 * commits with the flush: an import's batches, before the import is marked completed (IMP-1).
 * PostgreSQL flushes its log in order, so that later commit makes them durable too, as DUR-14's
 * sync does for SQLite's commits, which never wait for a sync themselves; a database crash before
 * it loses at most the last of them, and the import resumes after what is there. Inside the
 * caller's transaction, `work` runs as part of it and its commit is the caller's.
 */
export function inDeferredTransaction<T>(executor: Executor, work: (trx: Executor) => Promise<T>): Promise<T> {
  if (executor.isTransaction || dialectOf(executor) !== 'postgres') return inTransaction(executor, work);
  return (executor as DB).transaction().execute(async (trx) => {
    await sql`select set_config('synchronous_commit', 'off', true)`.execute(trx);
    return work(trx);
  });
}
