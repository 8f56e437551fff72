import { type Expression, type ExpressionBuilder, type SqlBool, sql } from 'kysely';
import { chunk, IN_LIST_SIZE } from '../chunks.ts';
import type { Database, Executor, JobsTable, TestHealthTable } from '../types.ts';
import { type QuarantineRow, quarantinesWithNames } from './health.ts';

// The aggregates behind a project's dashboard (TRIAGE-8): each is one grouped query on an index,
// so its cost follows the window asked for, not the project's whole history.

export interface DailyRow {
  day: string;
  runs: number | string;
  passed: number | string;
  failed: number | string;
  skipped: number | string;
  duration_ms: number | string | null;
}

/**
 * Completed runs per UTC day since `since` (a day's start), on `branch` if given, from the rollup
 * the triggers of migration 0023 keep (`run_days`, one row per day and branch: its key's range), so
 * the cost follows the days asked for, not the runs they hold. A failed attempt that a later
 * attempt of the same test in the same job superseded is not counted as a failure (TRIAGE-5): the
 * test's final attempt speaks for it.
 */
export async function dailyOutcomes(executor: Executor, projectId: string, since: string, branch: string | null): Promise<DailyRow[]> {
  let query = executor
    .selectFrom('run_days')
    .select([
      'day',
      sql<number | string>`sum(runs)`.as('runs'),
      sql<number | string>`sum(passed)`.as('passed'),
      sql<number | string>`sum(failed)`.as('failed'),
      sql<number | string>`sum(skipped)`.as('skipped'),
      sql<number | string | null>`sum(duration_sum) / nullif(sum(durations), 0)`.as('duration_ms'),
    ])
    .where('project_id', '=', projectId)
    .where('day', '>=', since.slice(0, 10));
  if (branch !== null) query = query.where('branch', '=', branch);
  return query.groupBy('day').having(sql<SqlBool>`sum(runs) > 0`).orderBy('day').execute();
}

/** Keeps the jobs with a run on `branch` (index test_runs_job): the one "jobs on a branch" filter. */
export const hasRunOnBranch = (branch: string) => (eb: ExpressionBuilder<Database, 'jobs'>) =>
  eb.exists(
    eb.selectFrom('test_runs').select(sql`1`.as('one')).whereRef('test_runs.job_id', '=', 'jobs.id').where('test_runs.branch', '=', branch),
  );

/** The project's latest jobs, newest first; on `branch`, those with a run on it. */
export async function latestJobs(executor: Executor, projectId: string, branch: string | null, limit: number): Promise<JobsTable[]> {
  let query = executor.selectFrom('jobs').selectAll().where('project_id', '=', projectId);
  if (branch !== null) query = query.where(hasRunOnBranch(branch));
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).execute();
}

export interface TopGroupRow {
  group_id: string;
  occurrences: number | string;
}

/**
 * The groups that failed most runs since `since` (a day's start): over every branch from the rollup
 * the triggers of migration 0025 keep (`group_days`, one row per group and day: its key's range), on
 * one branch from the occurrences (index failure_occurrences_project_at).
 */
export async function topGroupsSince(
  executor: Executor,
  projectId: string,
  since: string,
  branch: string | null,
  limit: number,
): Promise<TopGroupRow[]> {
  if (branch === null) {
    const total = sql<number | string>`sum(occurrences)`;
    return executor
      .selectFrom('group_days')
      .select(['group_id', total.as('occurrences')])
      .where('project_id', '=', projectId)
      .where('day', '>=', since.slice(0, 10))
      .groupBy('group_id')
      .having(total, '>', 0)
      .orderBy(total, 'desc')
      .orderBy('group_id')
      .limit(limit)
      .execute();
  }
  return executor
    .selectFrom('failure_occurrences')
    .select(['group_id', (eb) => eb.fn.countAll<number | string>().as('occurrences')])
    .where('project_id', '=', projectId)
    .where('at', '>=', since)
    .where('branch', '=', branch)
    .groupBy('group_id')
    .orderBy(sql`count(*)`, 'desc')
    .orderBy('group_id')
    .limit(limit)
    .execute();
}

export interface TrendRow {
  group_id: string;
  day: string;
  occurrences: number | string;
}

/**
 * Occurrences per group and UTC day since `since` (a day's start): over every branch from
 * `group_days`, on one branch from the occurrences (index failure_occurrences_group_at).
 */
export async function groupTrends(
  executor: Executor,
  projectId: string,
  groupIds: readonly string[],
  since: string,
  branch: string | null,
): Promise<TrendRow[]> {
  const day = sql<string>`substr(at, 1, 10)`;
  const ofChunk = (ids: string[]) =>
    branch === null
      ? executor
          .selectFrom('group_days')
          .select(['group_id', 'day', 'occurrences'])
          .where('project_id', '=', projectId)
          .where('day', '>=', since.slice(0, 10))
          .where('group_id', 'in', ids)
          .where('occurrences', '>', 0)
      : executor
          .selectFrom('failure_occurrences')
          .select(['group_id', day.as('day'), (eb) => eb.fn.countAll<number | string>().as('occurrences')])
          .where('group_id', 'in', ids)
          .where('at', '>=', since)
          .where('branch', '=', branch)
          .groupBy(['group_id', day]);
  const rows: TrendRow[] = [];
  for (const ids of chunk(groupIds, IN_LIST_SIZE)) rows.push(...(await ofChunk(ids).execute()));
  return rows;
}

export type HealthRow = TestHealthTable & { name: string; full_name: string | null };

/** The project's tests in a health state, worst first (index test_health_flaky). */
export async function testsInState(
  executor: Executor,
  projectId: string,
  state: TestHealthTable['state'],
  limit: number,
): Promise<HealthRow[]> {
  return executor
    .selectFrom('test_health')
    .innerJoin('tests', 'tests.id', 'test_health.test_id')
    .selectAll('test_health')
    .select(['tests.name', 'tests.full_name'])
    .where('test_health.project_id', '=', projectId)
    .where('test_health.state', '=', state)
    .orderBy(state === 'broken' ? 'test_health.failing_streak' : 'test_health.flaky_score', 'desc')
    .orderBy('test_health.test_id')
    .limit(limit)
    .execute();
}

export type { QuarantineRow };

/** The project's quarantined tests, those still in force first, then by expiry. */
export async function quarantinedTests(executor: Executor, projectId: string, now: string, limit: number): Promise<QuarantineRow[]> {
  const expired: Expression<SqlBool> = sql<SqlBool>`test_quarantines.expires_at <= ${now}`;
  return quarantinesWithNames(executor, projectId)
    .orderBy(sql`case when ${expired} then 1 else 0 end`)
    .orderBy('test_quarantines.expires_at')
    .limit(limit)
    .execute();
}
