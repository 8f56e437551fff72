import { chunk, IN_LIST_SIZE } from '../chunks.ts';
import type { Executor } from '../types.ts';
import { ATTEMPT_COLUMNS, type AttemptRow, attemptOf } from './outcomes.ts';

// What flakiness cost (TRIAGE-15, docs/triage.md): the runs the cost is read from, by index.

/** Most (job, test) pairs with a retried failure one answer reads: beyond them the answer says it is cut. */
export const FLAKY_COST_PAIRS_MAX = 20_000;
/** Pairs per statement: each is an `(job_id, test_id)` test on index test_runs_job_test. */
const PAIRS_PER_QUERY = 200;

/**
 * The (job, test) pairs of the project with a failed or broken attempt, finished since `since`,
 * that a later attempt superseded (`superseded`, migration 0023): the only places a retry to a
 * pass can be. Index test_runs_retention (project, finished_at) bounds it to the window.
 */
export async function retriedFailurePairs(
  executor: Executor,
  projectId: string,
  since: string,
): Promise<{ jobId: string; testId: string }[]> {
  const rows = await executor
    .selectFrom('test_runs')
    .select(['job_id', 'test_id'])
    .distinct()
    .where('project_id', '=', projectId)
    .where('finished_at', '>=', since)
    .where('superseded', '=', 1)
    .where('verdict', 'in', ['failed', 'broken'])
    .where('job_id', 'is not', null)
    .where('test_id', 'is not', null)
    .orderBy('job_id')
    .orderBy('test_id')
    .limit(FLAKY_COST_PAIRS_MAX + 1)
    .execute();
  return rows.map((row) => ({ jobId: row.job_id as string, testId: row.test_id as string }));
}

/** Every attempt of each (job, test) pair given (index test_runs_job_test). */
export async function attemptsOfPairs(executor: Executor, pairs: readonly { jobId: string; testId: string }[]): Promise<AttemptRow[]> {
  const rows: AttemptRow[] = [];
  for (const part of chunk(pairs, PAIRS_PER_QUERY)) {
    const found = await executor
      .selectFrom('test_runs')
      .select(ATTEMPT_COLUMNS)
      .where((eb) => eb.or(part.map((pair) => eb.and([eb('job_id', '=', pair.jobId), eb('test_id', '=', pair.testId)]))))
      .execute();
    for (const row of found) rows.push(attemptOf(row));
  }
  return rows;
}

/** Each job given: its name, whether a test failed in the end (a failed or broken run no later attempt superseded), and its span. */
export async function jobsOfCost(
  executor: Executor,
  jobIds: readonly string[],
): Promise<Map<string, { name: string; failedInTheEnd: boolean; startedAt: string | null; finishedAt: string | null }>> {
  const jobs = new Map<string, { name: string; failedInTheEnd: boolean; startedAt: string | null; finishedAt: string | null }>();
  for (const ids of chunk([...new Set(jobIds)], IN_LIST_SIZE)) {
    const [named, failing, spans] = await Promise.all([
      executor.selectFrom('jobs').select(['id', 'name']).where('id', 'in', ids).execute(),
      // Index test_runs_job_verdict: the job's failures, then the flag of each.
      executor
        .selectFrom('test_runs')
        .select('job_id')
        .distinct()
        .where('job_id', 'in', ids)
        .where('verdict', 'in', ['failed', 'broken'])
        .where('superseded', '=', 0)
        .execute(),
      executor
        .selectFrom('test_runs')
        .select((eb) => ['job_id', eb.fn.min('started_at').as('started_at'), eb.fn.max('finished_at').as('finished_at')])
        .where('job_id', 'in', ids)
        .groupBy('job_id')
        .execute(),
    ]);
    const failed = new Set(failing.map((row) => row.job_id));
    const span = new Map(spans.map((row) => [row.job_id, row]));
    for (const job of named) {
      const s = span.get(job.id);
      jobs.set(job.id, {
        name: job.name,
        failedInTheEnd: failed.has(job.id),
        startedAt: (s?.started_at as string | null | undefined) ?? null,
        finishedAt: (s?.finished_at as string | null | undefined) ?? null,
      });
    }
  }
  return jobs;
}
