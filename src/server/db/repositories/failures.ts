import { sql } from 'kysely';
import { chunk, IN_LIST_SIZE, insertRows } from '../chunks.ts';
import { dialectOf } from '../dialect.ts';
import { keysetPage, type Page, type PageRequest } from '../pagination.ts';
import type {
  Executor,
  FailureGroupBranchesTable,
  FailureGroupsTable,
  FailureGroupTestsTable,
  FailureOccurrencesTable,
  StepsTable,
  TextCellsTable,
} from '../types.ts';

// Queries of error groups (TRIAGE-2): the groups, where they occurred, the failed steps and cells
// they are made from, and the incidents of jobs (TRIAGE-4).

/** Names of the cells that hold a failure's trace (on a step) or a run's own error (run-level). */
export const FAILURE_CELL_NAMES = ['trace', 'stack', 'failure', 'error'] as const;

export type FailedStep = Pick<StepsTable, 'id' | 'run_id' | 'parent_id' | 'depth' | 'position' | 'status' | 'error_message'>;
export type FailureCell = Pick<TextCellsTable, 'run_id' | 'step_id' | 'name' | 'text' | 'position'>;

/** The failed and broken steps of the runs, in position order per run. */
export async function failedStepsOfRuns(executor: Executor, runIds: readonly string[]): Promise<FailedStep[]> {
  const rows: FailedStep[] = [];
  for (const ids of chunk(runIds, IN_LIST_SIZE)) {
    rows.push(
      ...(await executor
        .selectFrom('steps')
        .select(['id', 'run_id', 'parent_id', 'depth', 'position', 'status', 'error_message'])
        .where('run_id', 'in', ids)
        .where('status', 'in', ['failed', 'broken'])
        .orderBy('run_id')
        .orderBy('position')
        .execute()),
    );
  }
  return rows;
}

/** The runs' cells named as failures and traces are (`FAILURE_CELL_NAMES`), in position order per run. */
export async function failureCellsOfRuns(executor: Executor, runIds: readonly string[]): Promise<FailureCell[]> {
  const rows: FailureCell[] = [];
  for (const ids of chunk(runIds, IN_LIST_SIZE)) {
    rows.push(
      ...(await executor
        .selectFrom('text_cells')
        .select(['run_id', 'step_id', 'name', 'text', 'position'])
        .where('run_id', 'in', ids)
        .where('name', 'in', [...FAILURE_CELL_NAMES])
        .orderBy('run_id')
        .orderBy('position')
        .execute()),
    );
  }
  return rows;
}

/**
 * The project's groups of these fingerprints, those missing created from `candidates` first. Safe
 * against a concurrent transaction creating the same group: the insert does nothing on a
 * fingerprint that exists (on PostgreSQL it waits for the other to commit), and the read that
 * follows sees the winner. On PostgreSQL the groups are locked for the rest of the transaction, in
 * fingerprint order, so two transactions counting into one group do so one after the other.
 */
export async function ensureFailureGroups(
  executor: Executor,
  projectId: string,
  candidates: readonly FailureGroupsTable[],
): Promise<FailureGroupsTable[]> {
  const sorted = [...candidates].sort((a, b) => (a.fingerprint < b.fingerprint ? -1 : a.fingerprint > b.fingerprint ? 1 : 0));
  const perStatement = Math.floor((dialectOf(executor) === 'postgres' ? 60_000 : 30_000) / 32);
  for (const part of chunk(sorted, Math.min(perStatement, IN_LIST_SIZE))) {
    await executor
      .insertInto('failure_groups')
      .values(part)
      .onConflict((oc) => oc.columns(['project_id', 'fingerprint']).doNothing())
      .execute();
  }
  const groups: FailureGroupsTable[] = [];
  for (const part of chunk(
    sorted.map((group) => group.fingerprint),
    IN_LIST_SIZE,
  )) {
    const query = executor
      .selectFrom('failure_groups')
      .selectAll()
      .where('project_id', '=', projectId)
      .where('fingerprint', 'in', part)
      .orderBy('fingerprint');
    groups.push(...(await (dialectOf(executor) === 'postgres' ? query.forUpdate() : query).execute()));
  }
  return groups;
}

export async function insertOccurrences(executor: Executor, rows: readonly FailureOccurrencesTable[]): Promise<void> {
  await insertRows(executor, dialectOf(executor), 'failure_occurrences', rows);
}

/** Adds the tests and branches the groups touched; those already known change nothing. */
export async function addGroupReach(
  executor: Executor,
  tests: readonly FailureGroupTestsTable[],
  branches: readonly FailureGroupBranchesTable[],
): Promise<void> {
  for (const part of chunk(tests, IN_LIST_SIZE)) {
    await executor
      .insertInto('failure_group_tests')
      .values(part)
      .onConflict((oc) => oc.columns(['group_id', 'test_key']).doNothing())
      .execute();
  }
  for (const part of chunk(branches, IN_LIST_SIZE)) {
    await executor
      .insertInto('failure_group_branches')
      .values(part)
      .onConflict((oc) => oc.columns(['group_id', 'branch']).doNothing())
      .execute();
  }
}

/** What recording occurrences changes on a group: counters added, and the fields that follow them. */
export interface GroupCounting {
  id: string;
  occurrencesAdded: number;
  /** Recounts the distinct tests and branches (their tables hold each once). */
  recountReach: boolean;
  changes: Partial<Pick<FailureGroupsTable, 'status' | 'last_seen_at' | 'last_seen_run_id' | 'last_seen_job_id' | 'updated_at'>>;
}

export async function countIntoGroup(executor: Executor, counting: GroupCounting): Promise<void> {
  await executor
    .updateTable('failure_groups')
    .set((eb) => ({
      ...counting.changes,
      occurrences: eb('occurrences', '+', counting.occurrencesAdded),
      ...(counting.recountReach
        ? {
            affected_tests: eb
              .selectFrom('failure_group_tests')
              .select(eb.fn.countAll<number>().as('n'))
              .where('group_id', '=', counting.id),
            affected_branches: eb
              .selectFrom('failure_group_branches')
              .select(eb.fn.countAll<number>().as('n'))
              .where('group_id', '=', counting.id),
          }
        : {}),
    }))
    .where('id', '=', counting.id)
    .execute();
}

/** Sets the group of the steps or runs given, per group: one statement per group and chunk of ids. */
export async function setFailureGroupIds(
  executor: Executor,
  table: 'steps' | 'test_runs',
  idsByGroup: ReadonlyMap<string, readonly string[]>,
): Promise<void> {
  for (const [groupId, ids] of idsByGroup) {
    for (const part of chunk(ids, IN_LIST_SIZE)) {
      await executor.updateTable(table).set({ failure_group_id: groupId }).where('id', 'in', part).execute();
    }
  }
}

/** The rules and triage settings of the projects. */
export async function triageOfProjects(
  executor: Executor,
  projectIds: readonly string[],
): Promise<{ id: string; failure_rules: string | null; triage_settings: string | null }[]> {
  return executor.selectFrom('projects').select(['id', 'failure_rules', 'triage_settings']).where('id', 'in', projectIds).execute();
}

/**
 * A job's failed tests by group: per test key (the test id, else `name:` and the run's name) its
 * final completed attempt (highest attempt, then latest creation) counts, when it failed or broke.
 */
export async function failedTestsOfJobByGroup(executor: Executor, jobId: string): Promise<{ groupId: string | null; tests: number }[]> {
  const rows = await sql<{ failure_group_id: string | null; n: number | string }>`
    select failure_group_id, count(*) as n from (
      select failure_group_id, verdict,
        row_number() over (partition by coalesce(test_id, 'name:' || name) order by attempt desc, created_at desc, id desc) as rn
      from test_runs where job_id = ${jobId} and status = 'completed'
    ) finals
    where rn = 1 and verdict in ('failed', 'broken')
    group by failure_group_id`.execute(executor);
  return rows.rows.map((row) => ({ groupId: row.failure_group_id, tests: Number(row.n) }));
}

export async function setJobIncident(executor: Executor, jobId: string, groupId: string | null, failedRuns: number | null): Promise<void> {
  await executor
    .updateTable('jobs')
    .set({ incident_group_id: groupId, incident_failed_runs: failedRuns })
    .where('id', '=', jobId)
    .execute();
}

/** The jobs' incidents as stored. */
export async function incidentsOfJobs(
  executor: Executor,
  jobIds: readonly string[],
): Promise<{ id: string; project_id: string; incident_group_id: string | null; incident_failed_runs: number | null }[]> {
  if (jobIds.length === 0) return [];
  return executor
    .selectFrom('jobs')
    .select(['id', 'project_id', 'incident_group_id', 'incident_failed_runs'])
    .where('id', 'in', jobIds)
    .execute();
}

// --- Reads and triage ---

export type GroupSort = 'lastSeen' | 'occurrences' | 'affectedTests';

export interface GroupFilter {
  status?: FailureGroupsTable['status'];
  category?: FailureGroupsTable['category'];
  defectType?: FailureGroupsTable['defect_type'];
  branch?: string;
  /** ISO time: last seen at or after. */
  since?: string;
  testId?: string;
  /** Case-insensitive substring of the title or the rule name. */
  q?: string;
}

const SORT_COLUMNS: Record<GroupSort, [string, string]> = {
  lastSeen: ['last_seen_at', 'id'],
  occurrences: ['occurrences', 'id'],
  affectedTests: ['affected_tests', 'id'],
};

/** `text` as a LIKE pattern that matches it literally anywhere, with `\` as the escape. */
const containing = (text: string) => `%${text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

export async function listFailureGroups(
  executor: Executor,
  projectId: string,
  filter: GroupFilter,
  sort: GroupSort,
  page: PageRequest,
): Promise<Page<FailureGroupsTable>> {
  let query = executor.selectFrom('failure_groups').selectAll().where('project_id', '=', projectId);
  if (filter.status) query = query.where('status', '=', filter.status);
  if (filter.category) query = query.where('category', '=', filter.category);
  if (filter.defectType) query = query.where('defect_type', '=', filter.defectType);
  if (filter.since) query = query.where('last_seen_at', '>=', filter.since);
  const { branch, testId, q } = filter;
  if (branch !== undefined) {
    query = query.where((eb) =>
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
    query = query.where((eb) =>
      eb.exists(
        eb
          .selectFrom('failure_group_tests as t')
          .select('t.group_id')
          .whereRef('t.group_id', '=', 'failure_groups.id')
          .where('t.test_key', '=', testId),
      ),
    );
  }
  if (q !== undefined) {
    const pattern = containing(q);
    query = query.where((eb) =>
      eb.or([
        sql<boolean>`lower(${eb.ref('title')}) like ${pattern} escape '\\'`,
        sql<boolean>`lower(coalesce(${eb.ref('rule')}, '')) like ${pattern} escape '\\'`,
      ]),
    );
  }
  return keysetPage(query, { columns: SORT_COLUMNS[sort], direction: 'desc' }, page);
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
