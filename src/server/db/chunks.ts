import type { Insertable } from 'kysely';
import type { Database, Dialect, Executor } from './types.ts';

/**
 * Bound parameters one statement may carry: PostgreSQL's wire protocol counts them in 16 bits,
 * SQLite's SQLITE_MAX_VARIABLE_NUMBER is 32766 since 3.32. Kept a little under both.
 */
const MAX_PARAMETERS: Record<Dialect, number> = { postgres: 65_000, sqlite: 32_000 };

/** Splits `items` into runs of at most `size`. */
export function chunk<T>(items: readonly T[], size: number): T[][] {
  const chunks: T[][] = [];
  for (let i = 0; i < items.length; i += size) chunks.push(items.slice(i, i + size));
  return chunks;
}

/** Values per `IN (…)` list: far below both limits, and small enough for the planner to use an index. */
export const IN_LIST_SIZE = 1000;

/** Inserts many rows of one table in as few statements as the dialect's parameter limit allows. */
export async function insertRows<T extends keyof Database & string>(
  executor: Executor,
  dialect: Dialect,
  table: T,
  rows: readonly Insertable<Database[T]>[],
): Promise<void> {
  const first = rows[0];
  if (!first) return;
  const perStatement = Math.max(1, Math.floor(MAX_PARAMETERS[dialect] / Object.keys(first).length));
  for (const part of chunk(rows, perStatement)) {
    await executor
      .insertInto(table)
      .values(part as never)
      .execute();
  }
}
