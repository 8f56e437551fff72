import { PostgresAdapter } from 'kysely';
import type { Dialect, Executor } from './types.ts';

/** Which dialect a database handle or transaction speaks, for the few queries that differ (row locks, parameter limits). */
export function dialectOf(executor: Executor): Dialect {
  return executor.getExecutor().adapter instanceof PostgresAdapter ? 'postgres' : 'sqlite';
}
