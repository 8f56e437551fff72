import { chunk, IN_LIST_SIZE } from '../chunks.ts';
import { keysetPage, type Page, type PageRequest } from '../pagination.ts';
import type { Executor, TestLinksTable, TestsTable, TestVersionsTable } from '../types.ts';

// Queries of test definitions.

export async function findTest(executor: Executor, testId: string): Promise<TestsTable | undefined> {
  return executor.selectFrom('tests').selectAll().where('id', '=', testId).executeTakeFirst();
}

/** The project a test belongs to, for the access check. */
export async function projectOfTest(executor: Executor, testId: string): Promise<string | undefined> {
  return (await executor.selectFrom('tests').select('project_id').where('id', '=', testId).executeTakeFirst())?.project_id;
}

/** The test's id and current version when it belongs to that project; a test of another project is as unknown as a missing one. */
export async function findTestOfProject(
  executor: Executor,
  testId: string,
  projectId: string,
): Promise<{ id: string; version: number } | undefined> {
  const row = await executor
    .selectFrom('tests')
    .select(['id', 'version'])
    .where('id', '=', testId)
    .where('project_id', '=', projectId)
    .executeTakeFirst();
  return row && { id: row.id, version: Number(row.version) };
}

/** Names and current versions of the project's tests among `testIds`, by id; ids of other projects are left out. */
export async function testNamesInProject(
  executor: Executor,
  projectId: string,
  testIds: readonly string[],
): Promise<Map<string, { name: string; version: number }>> {
  const names = new Map<string, { name: string; version: number }>();
  for (const ids of chunk(testIds, IN_LIST_SIZE)) {
    const rows = await executor
      .selectFrom('tests')
      .select(['id', 'name', 'version'])
      .where('project_id', '=', projectId)
      .where('id', 'in', ids)
      .execute();
    for (const row of rows) names.set(row.id, { name: row.name, version: Number(row.version) });
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
export async function testsByFullName(
  executor: Executor,
  projectId: string,
  fullNames: readonly string[],
): Promise<Map<string, { id: string; version: number }>> {
  const tests = new Map<string, { id: string; version: number }>();
  for (const names of chunk(fullNames, IN_LIST_SIZE)) {
    const rows = await executor
      .selectFrom('tests')
      .select(['id', 'full_name', 'version'])
      .where('project_id', '=', projectId)
      .where('full_name', 'in', names)
      .execute();
    for (const row of rows) tests.set(row.full_name as string, { id: row.id, version: Number(row.version) });
  }
  return tests;
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

/** The fields an edit changes on a test. */
export type TestContentUpdate = Pick<
  TestsTable,
  'name' | 'description' | 'steps' | 'tags' | 'suite' | 'links' | 'source_format' | 'source' | 'version' | 'updated_at' | 'updated_by'
>;

/**
 * Writes a test's new version, only while it is still at `fromVersion`: false when a concurrent
 * edit moved it on first (the caller answers a conflict).
 */
export async function updateTestContent(
  executor: Executor,
  testId: string,
  fromVersion: number,
  update: TestContentUpdate,
): Promise<boolean> {
  const result = await executor
    .updateTable('tests')
    .set(update)
    .where('id', '=', testId)
    .where('version', '=', fromVersion)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

export async function insertTestVersion(executor: Executor, row: TestVersionsTable): Promise<void> {
  await executor.insertInto('test_versions').values(row).execute();
}

export async function findTestVersion(executor: Executor, testId: string, version: number): Promise<TestVersionsTable | undefined> {
  return executor.selectFrom('test_versions').selectAll().where('test_id', '=', testId).where('version', '=', version).executeTakeFirst();
}

/** A test's superseded versions below `below`, newest first, at most `limit`. */
export async function testVersionsBelow(executor: Executor, testId: string, below: number, limit: number): Promise<TestVersionsTable[]> {
  return executor
    .selectFrom('test_versions')
    .selectAll()
    .where('test_id', '=', testId)
    .where('version', '<', below)
    .orderBy('version', 'desc')
    .limit(limit)
    .execute();
}

/** Replaces a test's link rows. */
export async function replaceTestLinks(executor: Executor, testId: string, rows: readonly TestLinksTable[]): Promise<void> {
  await executor.deleteFrom('test_links').where('test_id', '=', testId).execute();
  if (rows.length > 0)
    await executor
      .insertInto('test_links')
      .values([...rows])
      .execute();
}

/** How many of a project's tests sit in each suite (null: in none). */
export async function suiteCounts(executor: Executor, projectId: string): Promise<{ suite: string | null; tests: number }[]> {
  const rows = await executor
    .selectFrom('tests')
    .select(['suite', (eb) => eb.fn.countAll<number | string>().as('tests')])
    .where('project_id', '=', projectId)
    .groupBy('suite')
    .execute();
  return rows.map((row) => ({ suite: row.suite, tests: Number(row.tests) }));
}
