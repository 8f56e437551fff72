import { sql } from 'kysely';
import { chunk, IN_LIST_SIZE } from '../chunks.ts';
import { keysetPage, type Page, type PageRequest } from '../pagination.ts';
import type { Executor, TestLinksTable, TestRunsTable } from '../types.ts';

// The links of tests to requirements and issues, read across a project (TCM-4, traceability).

/** One distinct link of a project: its identity and what one of its tests says of it. */
export interface DistinctLink {
  kind: TestLinksTable['kind'];
  sort_key: string;
  link_id: string;
  key: string | null;
  url: string | null;
  title: string | null;
}

const likeLiteral = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`);

/** A project's distinct links, by kind then key (or URL), keyset-paged on (kind, sort_key, link_id). */
export async function listDistinctLinks(
  executor: Executor,
  projectId: string,
  filter: { kind?: TestLinksTable['kind']; q?: string },
  page: PageRequest,
): Promise<Page<DistinctLink>> {
  let inner = executor
    .selectFrom('test_links')
    .select(['kind', 'sort_key', 'link_id'])
    .select((eb) => [eb.fn.max('key').as('key'), eb.fn.max('url').as('url'), eb.fn.max('title').as('title')])
    .where('project_id', '=', projectId)
    .groupBy(['kind', 'sort_key', 'link_id']);
  if (filter.kind !== undefined) inner = inner.where('kind', '=', filter.kind);
  if (filter.q !== undefined) {
    const pattern = `%${likeLiteral(filter.q.toLowerCase())}%`;
    inner = inner.where(
      sql<boolean>`(lower(coalesce(key, '')) like ${pattern} escape '\\' or lower(coalesce(url, '')) like ${pattern} escape '\\' or lower(coalesce(title, '')) like ${pattern} escape '\\')`,
    );
  }
  // Paged on the grouped rows themselves (the cursor's columns are the group's): wrapped in a
  // subquery, SQLite would sort the groups again instead of reading them in the index's order.
  return keysetPage(inner, { columns: ['kind', 'sort_key', 'link_id'], direction: 'asc' }, page) as Promise<Page<DistinctLink>>;
}

/** The tests carrying these links, by link id, each test by name. */
export async function testsOfLinks(
  executor: Executor,
  projectId: string,
  linkIds: readonly string[],
): Promise<{ link_id: string; test_id: string; name: string; suite: string | null }[]> {
  const out: { link_id: string; test_id: string; name: string; suite: string | null }[] = [];
  for (const ids of chunk(linkIds, IN_LIST_SIZE)) {
    const rows = await executor
      .selectFrom('test_links')
      .innerJoin('tests', 'tests.id', 'test_links.test_id')
      .select(['test_links.link_id', 'test_links.test_id', 'tests.name', 'tests.suite'])
      .where('test_links.project_id', '=', projectId)
      .where('test_links.link_id', 'in', ids)
      .orderBy('tests.name')
      .orderBy('tests.id')
      .execute();
    out.push(...rows);
  }
  return out;
}

/** Each test's latest completed run (by finish time, then id), by test id. */
export async function latestCompletedRuns(
  executor: Executor,
  testIds: readonly string[],
): Promise<Map<string, Pick<TestRunsTable, 'id' | 'verdict' | 'finished_at'>>> {
  const latest = new Map<string, Pick<TestRunsTable, 'id' | 'verdict' | 'finished_at'>>();
  for (const ids of chunk(testIds, IN_LIST_SIZE)) {
    const ranked = executor
      .selectFrom('test_runs')
      .select(['test_id', 'id', 'verdict', 'finished_at'])
      .select(sql<number>`row_number() over (partition by test_id order by finished_at desc, id desc)`.as('position'))
      .where('test_id', 'in', ids)
      .where('status', '=', 'completed');
    const rows = await executor.selectFrom(ranked.as('r')).selectAll().where('position', '=', 1).execute();
    for (const row of rows) latest.set(row.test_id as string, { id: row.id, verdict: row.verdict, finished_at: row.finished_at });
  }
  return latest;
}
