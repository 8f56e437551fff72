import { keysetPage, type Page, type PageRequest } from '../pagination.ts';
import type { Executor, ImportsTable } from '../types.ts';

// Queries of imports: one row per uploaded report, from its upload until its job is written.

export async function insertImport(executor: Executor, row: ImportsTable): Promise<void> {
  await executor.insertInto('imports').values(row).execute();
}

export async function findImport(executor: Executor, importId: string): Promise<ImportsTable | undefined> {
  return executor.selectFrom('imports').selectAll().where('id', '=', importId).executeTakeFirst();
}

export async function findImportByIdempotencyKey(executor: Executor, projectId: string, key: string): Promise<ImportsTable | undefined> {
  return executor
    .selectFrom('imports')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('idempotency_key', '=', key)
    .executeTakeFirst();
}

export async function updateImport(executor: Executor, importId: string, changes: Partial<ImportsTable>): Promise<void> {
  await executor.updateTable('imports').set(changes).where('id', '=', importId).execute();
}

/** Updates an import still being written (`queued` or `processing`); false when it ended (completed or failed) by now. */
export async function updateOpenImport(executor: Executor, importId: string, changes: Partial<ImportsTable>): Promise<boolean> {
  const result = await executor
    .updateTable('imports')
    .set(changes)
    .where('id', '=', importId)
    .where('status', 'in', ['queued', 'processing'])
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** Gives an import the job it is written into, unless it has one by now (another attempt made it); false then. */
export async function setImportJob(executor: Executor, importId: string, jobId: string): Promise<boolean> {
  const result = await executor
    .updateTable('imports')
    .set({ job_id: jobId })
    .where('id', '=', importId)
    .where('job_id', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** A project's imports, newest first. */
export async function listImports(executor: Executor, projectId: string, page: PageRequest): Promise<Page<ImportsTable>> {
  const query = executor.selectFrom('imports').selectAll().where('project_id', '=', projectId);
  return keysetPage(query, { columns: ['created_at', 'id'], direction: 'desc' }, page);
}

/** What a job's runs hold: their steps, text cells and artifacts. */
export async function contentCountsOfJob(
  executor: Executor,
  jobId: string,
): Promise<{ steps: number; cells: number; attachments: number }> {
  const count = async (table: 'steps' | 'text_cells' | 'artifacts') => {
    const row = await executor
      .selectFrom(table)
      .innerJoin('test_runs', 'test_runs.id', `${table}.run_id`)
      .select((eb) => eb.fn.countAll<string | number>().as('n'))
      .where('test_runs.job_id', '=', jobId)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  };
  return { steps: await count('steps'), cells: await count('text_cells'), attachments: await count('artifacts') };
}
