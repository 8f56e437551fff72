import { chunk, IN_LIST_SIZE } from '../chunks.ts';
import { keysetPage, type Page, type PageRequest } from '../pagination.ts';
import type { Executor, TestsTable } from '../types.ts';

// Queries of test definitions.

export async function findTest(executor: Executor, testId: string): Promise<TestsTable | undefined> {
  return executor.selectFrom('tests').selectAll().where('id', '=', testId).executeTakeFirst();
}

/** The project a test belongs to, for the access check. */
export async function projectOfTest(executor: Executor, testId: string): Promise<string | undefined> {
  return (await executor.selectFrom('tests').select('project_id').where('id', '=', testId).executeTakeFirst())?.project_id;
}

/** The test's id when it belongs to that project; a test of another project is as unknown as a missing one. */
export async function findTestOfProject(executor: Executor, testId: string, projectId: string): Promise<string | undefined> {
  const row = await executor
    .selectFrom('tests')
    .select('id')
    .where('id', '=', testId)
    .where('project_id', '=', projectId)
    .executeTakeFirst();
  return row?.id;
}

/** Names of the project's tests among `testIds`, by id; ids of other projects are left out. */
export async function testNamesInProject(executor: Executor, projectId: string, testIds: readonly string[]): Promise<Map<string, string>> {
  const names = new Map<string, string>();
  for (const ids of chunk(testIds, IN_LIST_SIZE)) {
    const rows = await executor
      .selectFrom('tests')
      .select(['id', 'name'])
      .where('project_id', '=', projectId)
      .where('id', 'in', ids)
      .execute();
    for (const row of rows) names.set(row.id, row.name);
  }
  return names;
}

export async function insertTest(executor: Executor, test: TestsTable): Promise<void> {
  await executor.insertInto('tests').values(test).execute();
}

/** A project's tests, newest first. */
export async function listTests(executor: Executor, projectId: string, page: PageRequest): Promise<Page<TestsTable>> {
  const query = executor.selectFrom('tests').selectAll().where('project_id', '=', projectId);
  return keysetPage(query, { columns: ['created_at', 'id'], direction: 'desc' }, page);
}

/** The ids of the project's tests with these full names, by full name. */
export async function testsByFullName(executor: Executor, projectId: string, fullNames: readonly string[]): Promise<Map<string, string>> {
  const ids = new Map<string, string>();
  for (const names of chunk(fullNames, IN_LIST_SIZE)) {
    const rows = await executor
      .selectFrom('tests')
      .select(['id', 'full_name'])
      .where('project_id', '=', projectId)
      .where('full_name', 'in', names)
      .execute();
    for (const row of rows) ids.set(row.full_name as string, row.id);
  }
  return ids;
}

/** Inserts tests, skipping any whose full name the project already has (a concurrent import made it first). */
export async function insertTestsByFullName(executor: Executor, tests: readonly TestsTable[]): Promise<void> {
  for (const rows of chunk(tests, 50)) {
    await executor
      .insertInto('tests')
      .values(rows)
      .onConflict((oc) => oc.columns(['project_id', 'full_name']).where('full_name', 'is not', null).doNothing())
      .execute();
  }
}

/** Deletes a test definition. False when there was none. */
export async function deleteTestRow(executor: Executor, testId: string): Promise<boolean> {
  const result = await executor.deleteFrom('tests').where('id', '=', testId).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}
