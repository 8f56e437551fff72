import type { Kysely } from 'kysely';
import { sqliteTransactionRunner } from '../sqlite-driver.ts';
import type { DB, Executor } from '../types.ts';

/**
 * Runs `work` in one transaction: a new one on the database, or the caller's when `executor` is
 * already a transaction (a use case that is part of a larger one, like results posted with a run).
 * Services hand the transaction on to repositories and never look inside it.
 */
export function inTransaction<T>(executor: Executor, work: (trx: Executor) => Promise<T>): Promise<T> {
  if (executor.isTransaction) return work(executor);
  const db = executor as DB;
  // SQLite's transactions run their statements straight on its one connection (sqlite-transaction.ts).
  const runSqlite = sqliteTransactionRunner(db as Kysely<unknown>);
  return runSqlite ? runSqlite(db, work) : db.transaction().execute(work);
}
