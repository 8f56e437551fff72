import { type SelectQueryBuilder, sql } from 'kysely';
import { chunk, IN_LIST_SIZE } from '../chunks.ts';
import { dialectOf } from '../dialect.ts';
import type { Database, Dialect, Executor, TestRunsTable } from '../types.ts';

// The runs that per-test outcomes fold (TRIAGE-5, docs/triage.md): a job's attempts of its tests,
// and a test's latest runs for its health.

/** The columns of a run that folding attempts into their test's outcome needs. */
export type AttemptRow = Pick<
  TestRunsTable,
  | 'id'
  | 'job_id'
  | 'device_id'
  | 'test_id'
  | 'name'
  | 'status'
  | 'verdict'
  | 'attempt'
  | 'created_at'
  | 'started_at'
  | 'finished_at'
  | 'failure_group_id'
  | 'branch'
  | 'commit_sha'
>;

export const ATTEMPT_COLUMNS = [
  'id',
  'job_id',
  'device_id',
  'test_id',
  'name',
  'status',
  'verdict',
  'attempt',
  'created_at',
  'started_at',
  'finished_at',
  'failure_group_id',
  'branch',
  'commit_sha',
] as const;

export const attemptOf = (row: AttemptRow): AttemptRow => ({ ...row, attempt: Number(row.attempt) });

/** Every run of the jobs given (one query per chunk of jobs, index test_runs_job_test). */
export async function attemptsOfJobs(executor: Executor, jobIds: readonly string[]): Promise<AttemptRow[]> {
  const rows: AttemptRow[] = [];
  for (const ids of chunk([...new Set(jobIds)], IN_LIST_SIZE)) {
    const part = await executor.selectFrom('test_runs').select(ATTEMPT_COLUMNS).where('job_id', 'in', ids).execute();
    for (const row of part) rows.push(attemptOf(row));
  }
  return rows;
}

/** What a test's health reads of a run (`HealthRun` in services/triage/outcomes.ts): each column read costs, so no more. */
const HEALTH_COLUMNS = ['id', 'job_id', 'device_id', 'status', 'verdict', 'attempt', 'created_at', 'branch', 'commit_sha'] as const;

export type HealthRunRow = Pick<TestRunsTable, (typeof HEALTH_COLUMNS)[number]>;

type RunQuery = SelectQueryBuilder<Database & { r: TestRunsTable }, 'r', object>;

/**
 * The newest `perTest` completed runs the query reads, on `branch` when given. Runs of incident
 * jobs are left out before the limit (TRIAGE-11), so an outage takes no place in the window.
 */
function latestCompleted<Q extends RunQuery>(query: Q, perTest: number, branch: string | undefined, dialect: Dialect): Q {
  // PostgreSQL: the status as a condition no index serves, so the test's runs are read through
  // test_runs_test. On a table never analysed the planner took `completed` for a rare status and
  // intersected the test's runs with the status index, every completed run of the table, for each
  // test (41,000 entries × 250 tests: 200 ms a batch of an import).
  let scoped = (
    dialect === 'postgres' ? query.where(sql<boolean>`(r.status = 'completed') is true`) : query.where('r.status', '=', 'completed')
  ).where((eb) =>
    eb.not(
      eb.exists(
        eb
          .selectFrom('jobs as incident')
          .select('incident.id')
          .whereRef('incident.id', '=', 'r.job_id')
          .where('incident.incident_group_id', 'is not', null),
      ),
    ),
  );
  if (branch !== undefined) scoped = scoped.where('r.branch', '=', branch);
  return scoped.orderBy('r.created_at', 'desc').orderBy('r.id', 'desc').limit(perTest) as Q;
}

/**
 * The latest completed runs of each test given, at most `perTest` each (newest created first, index
 * test_runs_test), by test, on `branch` when given, leaving out runs of the jobs that are incidents
 * (TRIAGE-4). A window
 * function would read every run of every test given; this reads only the newest ones: on
 * PostgreSQL one LATERAL query per chunk of tests, on SQLite (no LATERAL) one compiled statement
 * run per test, which in-process costs microseconds. Each run's job is probed by its key for an incident.
 */
export async function healthRunsOfTests(
  executor: Executor,
  testIds: readonly string[],
  perTest: number,
  branch?: string,
): Promise<Map<string, HealthRunRow[]>> {
  const dialect = dialectOf(executor);
  const latest = <Q extends RunQuery>(query: Q): Q => latestCompleted(query, perTest, branch, dialect);
  const columns = HEALTH_COLUMNS.map((column) => `r.${column}` as const);
  const byTest = new Map<string, HealthRunRow[]>();
  const add = (testId: string, row: HealthRunRow) => {
    const list = byTest.get(testId);
    if (list) list.push(row);
    else byTest.set(testId, [row]);
  };
  const ids = [...new Set(testIds)];
  if (dialect === 'postgres') {
    for (const part of chunk(ids, IN_LIST_SIZE)) {
      // Driven by the ids given (unnest), not by a scan of tests: on a table never analysed the
      // planner read all of tests for 250 ids.
      const found = await executor
        .selectFrom(sql<{ id: string }>`(select unnest(${part}::text[]) as id)`.as('given'))
        .innerJoinLateral(
          (eb) =>
            latest(
              eb
                .selectFrom('test_runs as r')
                .select([...columns, 'r.test_id'])
                .where('r.test_id', '=', sql.ref<string>('given.id')),
            ).as('latest'),
          (join) => join.onTrue(),
        )
        .selectAll('latest')
        .execute();
      for (const { test_id, ...row } of found) add(test_id as string, { ...row, attempt: Number(row.attempt) });
    }
  } else {
    // The test is the statement's parameter: its rows need not carry it.
    const placeholder = '\u0000test-id\u0000';
    const compiled = latest(executor.selectFrom('test_runs as r').select(columns).where('r.test_id', '=', placeholder)).compile();
    for (const testId of ids) {
      const parameters = compiled.parameters.map((value) => (value === placeholder ? testId : value));
      for (const row of (await executor.executeQuery<HealthRunRow>({ ...compiled, parameters })).rows) add(testId, row);
    }
  }
  return byTest;
}
