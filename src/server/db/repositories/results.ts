import { chunk, IN_LIST_SIZE, insertRows } from '../chunks.ts';
import { compiledOnce } from '../compiled-once.ts';
import { dialectOf } from '../dialect.ts';
import type { Executor, ResultPostsTable, StepsTable, TextCellsTable } from '../types.ts';

// Queries of a run's result content: steps, text cells, and the receipts of keyed posts.

/** A stored step, as far as an append needs to know it. */
export type StoredStep = Pick<StepsTable, 'id' | 'client_key' | 'status' | 'depth'>;

/** Stored steps of the run whose client key (or id) is among `values`. */
export async function findSteps(
  executor: Executor,
  runId: string,
  column: 'client_key' | 'id',
  values: readonly string[],
): Promise<StoredStep[]> {
  if (values.length === 1) {
    // A post of one step (the common streaming case) names one key: at most one row, by a unique index.
    const row = await (column === 'id' ? stepById : stepByKey)(executor, runId, values[0] as string);
    return row ? [row] : [];
  }
  const found: StoredStep[] = [];
  for (const part of chunk(values, IN_LIST_SIZE)) {
    found.push(
      ...(await executor
        .selectFrom('steps')
        .select(['id', 'client_key', 'status', 'depth'])
        .where('run_id', '=', runId)
        .where(column, 'in', part)
        .execute()),
    );
  }
  return found;
}

// Compiled once per dialect: a one-step post runs one of them.
const stepByKey = compiledOnce((executor, runId: string, key: string) =>
  executor.selectFrom('steps').select(['id', 'client_key', 'status', 'depth']).where('run_id', '=', runId).where('client_key', '=', key),
);
const stepById = compiledOnce((executor, runId: string, id: string) =>
  executor.selectFrom('steps').select(['id', 'client_key', 'status', 'depth']).where('run_id', '=', runId).where('id', '=', id),
);

/** A step of the run, named by id or by its client key. */
export async function findStepOfRun(
  executor: Executor,
  runId: string,
  step: { id: string } | { key: string },
): Promise<string | undefined> {
  let query = executor.selectFrom('steps').select('id').where('run_id', '=', runId);
  query = 'id' in step ? query.where('id', '=', step.id) : query.where('client_key', '=', step.key);
  return (await query.executeTakeFirst())?.id;
}

/**
 * The position the run's next step or text cell takes: one after the highest its results hold, 0
 * when it holds none. Both tables keep positions in a (run_id, position) index, so this reads two
 * index entries. Positions are handed out under the run's lock; this must run after taking it, in
 * a statement of its own: a PostgreSQL statement sees only what committed before it began.
 */
export async function nextResultPosition(executor: Executor, runId: string): Promise<number> {
  const row = await lastPositions(executor, runId);
  return Math.max(Number(row?.last_step ?? -1), Number(row?.last_cell ?? -1)) + 1;
}

// Compiled once per dialect: every results post runs it.
const lastPositions = compiledOnce((executor, runId: string) =>
  executor.selectNoFrom((eb) => [
    eb
      .selectFrom('steps')
      .select((s) => s.fn.max('position').as('position'))
      .where('run_id', '=', runId)
      .as('last_step'),
    eb
      .selectFrom('text_cells')
      .select((s) => s.fn.max('position').as('position'))
      .where('run_id', '=', runId)
      .as('last_cell'),
  ]),
);

/** Stored text cells of the run with these client keys. */
export async function findCellsByKey(
  executor: Executor,
  runId: string,
  keys: readonly string[],
): Promise<Pick<TextCellsTable, 'id' | 'client_key'>[]> {
  const found: Pick<TextCellsTable, 'id' | 'client_key'>[] = [];
  for (const part of chunk(keys, IN_LIST_SIZE)) {
    found.push(
      ...(await executor
        .selectFrom('text_cells')
        .select(['id', 'client_key'])
        .where('run_id', '=', runId)
        .where('client_key', 'in', part)
        .execute()),
    );
  }
  return found;
}

/** Inserts steps and cells in as few statements as the dialect's parameter limit allows. */
export async function insertSteps(executor: Executor, steps: readonly StepsTable[]): Promise<void> {
  await insertRows(executor, dialectOf(executor), 'steps', steps);
}

export async function insertCells(executor: Executor, cells: readonly TextCellsTable[]): Promise<void> {
  await insertRows(executor, dialectOf(executor), 'text_cells', cells);
}

/** Finishes a stored step: its final status, duration and error, and its start time when given. */
export async function finishStep(
  executor: Executor,
  stepId: string,
  changes: Pick<StepsTable, 'status' | 'duration_ms' | 'error_message'> & Partial<Pick<StepsTable, 'started_at'>>,
): Promise<void> {
  await executor.updateTable('steps').set(changes).where('id', '=', stepId).execute();
}

export async function findResultPost(executor: Executor, runId: string, key: string): Promise<ResultPostsTable | undefined> {
  return executor.selectFrom('result_posts').selectAll().where('run_id', '=', runId).where('idempotency_key', '=', key).executeTakeFirst();
}

export async function insertResultPost(executor: Executor, post: ResultPostsTable): Promise<void> {
  await executor.insertInto('result_posts').values(post).execute();
}

/** A run's steps and cells in position order: the order they were posted in. */
export async function resultsOfRun(executor: Executor, runId: string): Promise<{ steps: StepsTable[]; cells: TextCellsTable[] }> {
  const steps = await executor.selectFrom('steps').selectAll().where('run_id', '=', runId).orderBy('position').execute();
  const cells = await executor.selectFrom('text_cells').selectAll().where('run_id', '=', runId).orderBy('position').execute();
  return { steps, cells };
}
