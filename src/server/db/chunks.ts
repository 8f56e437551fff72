import type { CompiledQuery, Insertable } from 'kysely';
import { EACH_ROW, type EachRowQuery } from './sqlite-driver.ts';
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
  if (dialect === 'sqlite' && (await insertEachRow(executor, table, rows))) return;
  const perStatement = Math.max(1, Math.floor(MAX_PARAMETERS[dialect] / Object.keys(first).length));
  for (const part of chunk(rows, perStatement)) {
    await executor
      .insertInto(table)
      .values(part as never)
      .execute();
  }
}

/** A value Kysely binds as given: a string, number, bigint, boolean or null (no object, no raw SQL). */
const bindsAsGiven = (value: unknown) =>
  value === null || (typeof value !== 'object' && typeof value !== 'function' && value !== undefined);

/** The compiled single-row INSERT of each table and column list, built once (insertEachRow). */
const singleRowInserts = new Map<string, CompiledQuery>();

/**
 * SQLite: the rows through one prepared single-row INSERT, run once per row (EACH_ROW). Building a
 * statement of thousands of value groups cost more than inserting the rows: a 10,000-step post
 * spent most of its time in Kysely's builder and SQLite's prepare. The INSERT of a table and column
 * list is compiled once (building it was a twentieth of a one-step post's CPU). Rows must all set
 * the same columns to values Kysely binds as given (the plain values our rows hold); anything else
 * answers false and takes the multi-row path.
 */
async function insertEachRow<T extends keyof Database & string>(
  executor: Executor,
  table: T,
  rows: readonly Insertable<Database[T]>[],
): Promise<boolean> {
  const first = rows[0] as Record<string, unknown>;
  const columns = Object.keys(first);
  const values: unknown[][] = [];
  for (const row of rows as readonly Record<string, unknown>[]) {
    const keys = Object.keys(row);
    if (keys.length !== columns.length) return false;
    const rowValues = columns.map((column) => row[column]);
    if (!rowValues.every(bindsAsGiven)) return false;
    values.push(rowValues);
  }
  const key = `${table}\u0000${columns.join(',')}`;
  let compiled = singleRowInserts.get(key);
  if (!compiled) {
    compiled = executor
      .insertInto(table)
      .values(first as never)
      .compile();
    if (compiled.parameters.length !== columns.length || columns.some((column, i) => compiled?.parameters[i] !== first[column]))
      return false;
    singleRowInserts.set(key, compiled);
  }
  const query: EachRowQuery = { ...compiled, [EACH_ROW]: values };
  await executor.executeQuery(query);
  return true;
}
