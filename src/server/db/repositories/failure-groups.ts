import { sql } from 'kysely';
import { chunk, IN_LIST_SIZE } from '../chunks.ts';
import { keysetPage, type Page, type PageRequest } from '../pagination.ts';
import type { Executor, FailureGroupsTable } from '../types.ts';

// Reads of error groups (TRIAGE-2) and their triage (TRIAGE-3): lists, one group's occurrences and
// trend, the groups of a run, and the groups the category rules name again. Recording them is in
// failures.ts.

export type GroupSort = 'lastSeen' | 'occurrences' | 'affectedTests';

export interface GroupFilter {
  status?: FailureGroupsTable['status'];
  category?: FailureGroupsTable['category'];
  defectType?: FailureGroupsTable['defect_type'];
  branch?: string;
  /** ISO time: last seen at or after. */
  since?: string;
  testId?: string;
  /** Case-insensitive substring of the title, the rule name, or the name of a test the group failed (TRIAGE-18). */
  q?: string;
}

const SORT_COLUMNS: Record<GroupSort, [string, string]> = {
  lastSeen: ['last_seen_at', 'id'],
  occurrences: ['occurrences', 'id'],
  affectedTests: ['affected_tests', 'id'],
};

/** `text` as a LIKE pattern that matches it literally anywhere, with `\` as the escape. */
const containing = (text: string) => `%${text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

const groupsOfProject = (executor: Executor, projectId: string) =>
  executor.selectFrom('failure_groups').selectAll().where('project_id', '=', projectId);
type GroupQuery = ReturnType<typeof groupsOfProject>;

/** Groups that reached the branch, and that failed the test (by its key). */
function whereReached(query: GroupQuery, branch: string | undefined, testId: string | undefined): GroupQuery {
  let narrowed = query;
  if (branch !== undefined) {
    narrowed = narrowed.where((eb) =>
      eb.exists(
        eb
          .selectFrom('failure_group_branches as b')
          .select('b.group_id')
          .whereRef('b.group_id', '=', 'failure_groups.id')
          .where('b.branch', '=', branch),
      ),
    );
  }
  if (testId !== undefined) {
    narrowed = narrowed.where((eb) =>
      eb.exists(
        eb
          .selectFrom('failure_group_tests as t')
          .select('t.group_id')
          .whereRef('t.group_id', '=', 'failure_groups.id')
          .where('t.test_key', '=', testId),
      ),
    );
  }
  return narrowed;
}

/** Groups whose title, rule or a test they failed holds `q`, case-insensitively. */
function whereMentions(query: GroupQuery, q: string): GroupQuery {
  const pattern = containing(q);
  return query.where((eb) =>
    eb.or([
      sql<boolean>`lower(${eb.ref('title')}) like ${pattern} escape '\\'`,
      sql<boolean>`lower(coalesce(${eb.ref('rule')}, '')) like ${pattern} escape '\\'`,
      // The tests it failed (TRIAGE-18): its distinct tests (failure_group_tests, by its key) and each one's
      // row by id, never its occurrences. A run without a test is keyed `name:<its name>`.
      eb.exists(
        eb
          .selectFrom('failure_group_tests as t')
          .leftJoin('tests as named', 'named.id', 't.test_key')
          .select('t.group_id')
          .whereRef('t.group_id', '=', 'failure_groups.id')
          .where(
            sql<boolean>`lower(case when ${sql.ref('t.test_key')} like 'name:%' then substr(${sql.ref('t.test_key')}, 6) else ${sql.ref('named.name')} end) like ${pattern} escape '\\'`,
          ),
      ),
    ]),
  );
}

export async function listFailureGroups(
  executor: Executor,
  projectId: string,
  filter: GroupFilter,
  sort: GroupSort,
  page: PageRequest,
): Promise<Page<FailureGroupsTable>> {
  let query = groupsOfProject(executor, projectId);
  if (filter.status) query = query.where('status', '=', filter.status);
  if (filter.category) query = query.where('category', '=', filter.category);
  if (filter.defectType) query = query.where('defect_type', '=', filter.defectType);
  if (filter.since) {
    // Sorted by last seen, the range is the order's index; sorted otherwise, the list walks its own
    // order's index and filters as it goes: a range on last_seen_at would read every recent group
    // and sort them. `coalesce` of a column that is never null keeps both planners off that index.
    const since = filter.since;
    query =
      sort === 'lastSeen'
        ? query.where('last_seen_at', '>=', since)
        : query.where(sql<string>`coalesce(${sql.ref('last_seen_at')}, '')`, '>=', since);
  }
  query = whereReached(query, filter.branch, filter.testId);
  if (filter.q !== undefined) query = whereMentions(query, filter.q);
  // Each order is an index's, read backwards: (project_id, last_seen_at | occurrences | affected_tests, id).
  return keysetPage(
    query,
    { columns: SORT_COLUMNS[sort], direction: 'desc', name: sort, integers: sort === 'lastSeen' ? [] : [SORT_COLUMNS[sort][0]] },
    page,
  );
}

export async function findFailureGroup(executor: Executor, projectId: string, groupId: string): Promise<FailureGroupsTable | undefined> {
  return executor.selectFrom('failure_groups').selectAll().where('id', '=', groupId).where('project_id', '=', projectId).executeTakeFirst();
}

export async function findFailureGroups(executor: Executor, projectId: string, groupIds: readonly string[]): Promise<FailureGroupsTable[]> {
  if (groupIds.length === 0) return [];
  return executor.selectFrom('failure_groups').selectAll().where('id', 'in', groupIds).where('project_id', '=', projectId).execute();
}

/** The groups of a run's failure and failed steps (each has an occurrence of the run). */
export async function groupsOfRun(executor: Executor, runId: string): Promise<FailureGroupsTable[]> {
  return executor
    .selectFrom('failure_groups')
    .selectAll()
    .where('id', 'in', (eb) => eb.selectFrom('failure_occurrences').select('group_id').where('run_id', '=', runId))
    .orderBy('id')
    .execute();
}

export type GroupTriageChanges = Partial<
  Pick<
    FailureGroupsTable,
    'defect_type' | 'comment' | 'issue_url' | 'assignee' | 'status' | 'rule' | 'triaged_at' | 'triaged_by' | 'updated_at'
  >
>;

export async function updateFailureGroups(executor: Executor, groupIds: readonly string[], changes: GroupTriageChanges): Promise<void> {
  for (const part of chunk(groupIds, IN_LIST_SIZE)) {
    await executor.updateTable('failure_groups').set(changes).where('id', 'in', part).execute();
  }
}

export interface OccurrenceRow {
  run_id: string;
  run_name: string;
  step_id: string | null;
  step_title: string | null;
  test_id: string | null;
  job_id: string | null;
  branch: string | null;
  at: string;
}

/** The group's latest occurrences still stored, newest first. */
export async function latestOccurrences(executor: Executor, groupId: string, limit: number): Promise<OccurrenceRow[]> {
  return executor
    .selectFrom('failure_occurrences as o')
    .innerJoin('test_runs as r', 'r.id', 'o.run_id')
    .leftJoin('steps as s', 's.id', 'o.step_id')
    .select(['o.run_id', 'r.name as run_name', 'o.step_id', 's.title as step_title', 'r.test_id', 'o.job_id', 'o.branch', 'o.at'])
    .where('o.group_id', '=', groupId)
    .orderBy('o.at', 'desc')
    .orderBy('o.run_id', 'desc')
    .limit(limit)
    .execute();
}

/** The screenshot artifacts of the runs: run, step and id, latest first. */
export async function screenshotsOfRuns(
  executor: Executor,
  runIds: readonly string[],
): Promise<{ id: string; run_id: string; step_id: string | null }[]> {
  if (runIds.length === 0) return [];
  return executor
    .selectFrom('artifacts')
    .select(['id', 'run_id', 'step_id'])
    .where('run_id', 'in', runIds)
    .where('kind', '=', 'screenshot')
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
}

/** The group's occurrences per UTC day since `since` (an ISO time at midnight). */
export async function occurrencesPerDay(executor: Executor, groupId: string, since: string): Promise<Map<string, number>> {
  const rows = await executor
    .selectFrom('failure_occurrences')
    .select((eb) => [sql<string>`substr(${eb.ref('at')}, 1, 10)`.as('day'), eb.fn.countAll<number | string>().as('n')])
    .where('group_id', '=', groupId)
    .where('at', '>=', since)
    .groupBy(sql`substr(at, 1, 10)`)
    .execute();
  return new Map(rows.map((row) => [row.day, Number(row.n)]));
}

/** A group not triaged by hand, as the category rules see it again: its message, its last run's verdict, and that occurrence's step. */
export interface UntriagedGroup {
  id: string;
  message: string;
  rule: string | null;
  defect_type: FailureGroupsTable['defect_type'];
  run_id: string;
  verdict: string | null;
  step_id: string | null;
}

export async function untriagedGroups(executor: Executor, projectId: string): Promise<UntriagedGroup[]> {
  return executor
    .selectFrom('failure_groups as g')
    .leftJoin('test_runs as r', 'r.id', 'g.last_seen_run_id')
    .leftJoin('failure_occurrences as o', (join) => join.onRef('o.group_id', '=', 'g.id').onRef('o.run_id', '=', 'g.last_seen_run_id'))
    .select(['g.id', 'g.message', 'g.rule', 'g.defect_type', 'g.last_seen_run_id as run_id', 'r.verdict', 'o.step_id'])
    .where('g.project_id', '=', projectId)
    .where('g.triaged_at', 'is', null)
    .execute();
}

/** Sets the rules of a project. */
export async function setFailureRules(executor: Executor, projectId: string, rules: string | null): Promise<void> {
  await executor.updateTable('projects').set({ failure_rules: rules }).where('id', '=', projectId).execute();
}
