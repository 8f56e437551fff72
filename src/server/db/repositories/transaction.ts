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
