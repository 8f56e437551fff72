import { sql } from 'kysely';
import { chunk, IN_LIST_SIZE, insertRows } from '../chunks.ts';
import { dialectOf } from '../dialect.ts';
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
// they are made from, and the incidents of jobs (TRIAGE-4). Reads and triage: failure-groups.ts.

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
 * The project's groups of these fingerprints, those missing created from `candidates` first.
 *
 * On PostgreSQL, safe against a concurrent transaction creating the same group: the insert does
 * nothing on a fingerprint that exists (waiting for the other to commit), and the read that follows
 * sees the winner; the groups are locked for the rest of the transaction, in fingerprint order, so
 * two transactions counting into one group do so one after the other. On SQLite the transaction
 * already holds the database's write lock (it completed the runs), so nobody else can create a group
 * meanwhile: the groups are read first, and only those missing are inserted, whose rows are then
 * the candidates themselves. A failure seen before, the common case, costs one statement.
 */
export async function ensureFailureGroups(
  executor: Executor,
  projectId: string,
  candidates: readonly FailureGroupsTable[],
): Promise<FailureGroupsTable[]> {
  const sorted = [...candidates].sort((a, b) => (a.fingerprint < b.fingerprint ? -1 : a.fingerprint > b.fingerprint ? 1 : 0));
  const postgres = dialectOf(executor) === 'postgres';
  const perStatement = Math.floor((postgres ? 60_000 : 30_000) / 32);
  const insert = async (rows: readonly FailureGroupsTable[]) => {
    for (const part of chunk(rows, Math.min(perStatement, IN_LIST_SIZE))) {
      await executor
        .insertInto('failure_groups')
        .values(part)
        .onConflict((oc) => oc.columns(['project_id', 'fingerprint']).doNothing())
        .execute();
    }
  };
  const read = async (fingerprints: readonly string[]) => {
    const groups: FailureGroupsTable[] = [];
    for (const part of chunk(fingerprints, IN_LIST_SIZE)) {
      const query = executor
        .selectFrom('failure_groups')
        .selectAll()
        .where('project_id', '=', projectId)
        .where('fingerprint', 'in', part)
        .orderBy('fingerprint');
      groups.push(...(await (postgres ? query.forUpdate() : query).execute()));
    }
    return groups;
  };
  if (postgres) {
    await insert(sorted);
    return read(sorted.map((group) => group.fingerprint));
  }
  const existing = await read(sorted.map((group) => group.fingerprint));
  const known = new Set(existing.map((group) => group.fingerprint));
  const missing = sorted.filter((group) => !known.has(group.fingerprint));
  await insert(missing);
  return [...existing, ...missing];
}

export async function insertOccurrences(executor: Executor, rows: readonly FailureOccurrencesTable[]): Promise<void> {
  await insertRows(executor, dialectOf(executor), 'failure_occurrences', rows);
}

/**
 * Adds the tests and branches the groups touched; those already known change nothing. Answers how
 * many each group gained (the rows actually inserted), which its counters add: no recount of a
 * group's tests, whose cost would grow with the group.
 */
export async function addGroupReach(
  executor: Executor,
  tests: readonly FailureGroupTestsTable[],
  branches: readonly FailureGroupBranchesTable[],
): Promise<{ tests: Map<string, number>; branches: Map<string, number> }> {
  const gained = { tests: new Map<string, number>(), branches: new Map<string, number>() };
  const count = (into: Map<string, number>, rows: readonly { group_id: string }[]) => {
    for (const row of rows) into.set(row.group_id, (into.get(row.group_id) ?? 0) + 1);
  };
  for (const part of chunk(tests, IN_LIST_SIZE)) {
    const inserted = await executor
      .insertInto('failure_group_tests')
      .values(part)
      .onConflict((oc) => oc.columns(['group_id', 'test_key']).doNothing())
      .returning('group_id')
      .execute();
    count(gained.tests, inserted);
  }
  for (const part of chunk(branches, IN_LIST_SIZE)) {
    const inserted = await executor
      .insertInto('failure_group_branches')
      .values(part)
      .onConflict((oc) => oc.columns(['group_id', 'branch']).doNothing())
      .returning('group_id')
      .execute();
    count(gained.branches, inserted);
  }
  return gained;
}

/** What recording occurrences changes on a group: counters added, and the fields that follow them. */
export interface GroupCounting {
  id: string;
  occurrencesAdded: number;
  /** Tests and branches the group had not reached before (`addGroupReach`). */
  testsAdded: number;
  branchesAdded: number;
  changes: Partial<Pick<FailureGroupsTable, 'status' | 'last_seen_at' | 'last_seen_run_id' | 'last_seen_job_id' | 'updated_at'>>;
}

export async function countIntoGroup(executor: Executor, counting: GroupCounting): Promise<void> {
  await executor
    .updateTable('failure_groups')
    .set((eb) => ({
      ...counting.changes,
      occurrences: eb('occurrences', '+', counting.occurrencesAdded),
      ...(counting.testsAdded > 0 ? { affected_tests: eb('affected_tests', '+', counting.testsAdded) } : {}),
      ...(counting.branchesAdded > 0 ? { affected_branches: eb('affected_branches', '+', counting.branchesAdded) } : {}),
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

/** The rules, triage settings and default branch of the projects. */
export async function triageOfProjects(
  executor: Executor,
  projectIds: readonly string[],
): Promise<{ id: string; failure_rules: string | null; triage_settings: string | null; default_branch: string | null }[]> {
  return executor
    .selectFrom('projects')
    .select(['id', 'failure_rules', 'triage_settings', 'default_branch'])
    .where('id', 'in', projectIds)
    .execute();
}

/**
 * A job's failed tests by group: per test key (the test id, else `name:` and the run's name) its
 * final completed attempt (highest attempt, then latest creation, then id) counts, when it failed
 * or broke. The cost follows the job's failures, not its size: an import asks this after its 1st, 2nd,
 * 4th… batch and when it ends (TRIAGE-4).
 */
export async function failedTestsOfJobByGroup(executor: Executor, jobId: string): Promise<{ groupId: string | null; tests: number }[]> {
  const later = sql`l.status = 'completed' and l.id <> r.id
    and (l.attempt > r.attempt or (l.attempt = r.attempt and (l.created_at > r.created_at or (l.created_at = r.created_at and l.id > r.id))))`;
  const rows = await sql<{ failure_group_id: string | null; n: number | string }>`
    select failure_group_id, count(*) as n from (
      ${
        dialectOf(executor) === 'postgres'
          ? finalFailuresByTestOnPostgres(jobId)
          : sql`select r.failure_group_id from test_runs r
      where r.job_id = ${jobId} and r.status = 'completed' and r.verdict in ('failed', 'broken') and r.test_id is not null
        and not exists (select 1 from test_runs l where l.job_id = ${jobId} and l.test_id = r.test_id and ${later})`
      }
      union all
      select r.failure_group_id from test_runs r
      where r.job_id = ${jobId} and r.status = 'completed' and r.verdict in ('failed', 'broken') and r.test_id is null
        and not exists (select 1 from test_runs l where l.job_id = ${jobId} and l.test_id is null and l.name = r.name and ${later})
    ) finals
    group by failure_group_id`.execute(executor);
  return rows.rows.map((row) => ({ groupId: row.failure_group_id, tests: Number(row.n) }));
}

/**
 * PostgreSQL: the final completed attempt of each test that failed in the job, probed by its key
 * (`test_runs_job_test`, LATERAL, per failed test) with the job taken from the failed run, a value
 * the planner does not see. A job being written is too new for the table's statistics: given its
 * id, the planner took it for a job of one run, any index by job looked as good, and it took a
 * narrower one with the test as a filter, reading the whole job once per failed test (715 failures
 * × 5,000 runs: 0.9 s at an import's last batch). Unseen, the job counts as an average one, and the
 * index by job and test wins.
 */
function finalFailuresByTestOnPostgres(jobId: string) {
  return sql`select f.failure_group_id from (
        select distinct r.job_id, r.test_id from test_runs r
        where r.job_id = ${jobId} and r.status = 'completed' and r.verdict in ('failed', 'broken') and r.test_id is not null
      ) failed
      cross join lateral (
        select l.verdict, l.failure_group_id from test_runs l
        where l.job_id = failed.job_id and l.test_id = failed.test_id and l.status = 'completed'
        order by l.attempt desc, l.created_at desc, l.id desc limit 1
      ) f
      where f.verdict in ('failed', 'broken')`;
}

export async function setJobIncident(executor: Executor, jobId: string, groupId: string | null, failedRuns: number | null): Promise<void> {
  await executor
    .updateTable('jobs')
    .set({ incident_group_id: groupId, incident_failed_runs: failedRuns })
    .where('id', '=', jobId)
    .execute();
}

/** The tests (with their project) of the jobs' completed runs: whose health moves with the jobs' incidents. */
export async function testsOfJobs(executor: Executor, jobIds: readonly string[]): Promise<{ test_id: string; project_id: string }[]> {
  const rows: { test_id: string; project_id: string }[] = [];
  for (const part of chunk(jobIds, IN_LIST_SIZE)) {
    const found = await executor
      .selectFrom('test_runs')
      .select(['test_id', 'project_id'])
      .distinct()
      .where('job_id', 'in', part)
      .where('status', '=', 'completed')
      .where('test_id', 'is not', null)
      .execute();
    rows.push(...(found as { test_id: string; project_id: string }[]));
  }
  return rows;
}

/**
 * The jobs' incidents as stored, in id order, each job's row locked until the transaction ends:
 * on PostgreSQL `FOR NO KEY UPDATE`, in id order, so that two transactions completing runs of one
 * job take turns, the second counting the job's failed tests with the first's runs committed
 * (else each counts without the other's and the last to write may miss the incident), and never
 * deadlock (callers lock groups first, then jobs). `NO KEY`: the runs just inserted hold a key-share
 * lock on their job, which a plain `FOR UPDATE` would wait for. SQLite serialises writers already.
 */
export async function lockIncidentsOfJobs(
  executor: Executor,
  jobIds: readonly string[],
): Promise<{ id: string; project_id: string; incident_group_id: string | null; incident_failed_runs: number | null }[]> {
  if (jobIds.length === 0) return [];
  const rows = [];
  for (const part of chunk([...jobIds].sort(), IN_LIST_SIZE)) {
    const query = executor
      .selectFrom('jobs')
      .select(['id', 'project_id', 'incident_group_id', 'incident_failed_runs'])
      .where('id', 'in', part)
      .orderBy('id');
    rows.push(...(await (dialectOf(executor) === 'postgres' ? query.forNoKeyUpdate() : query).execute()));
  }
  return rows;
}
