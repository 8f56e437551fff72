import { chunk, IN_LIST_SIZE } from '../chunks.ts';
import { keysetPage, type Page, type PageRequest } from '../pagination.ts';
import type { Executor, JobRollupsTable, JobsTable } from '../types.ts';

// Queries of jobs. A job's state is derived from what its runs add up to, which the `job_rollups`
// triggers keep (jobRunSummaries).

/** What a job's runs add up to: counts by status and, the completed ones, by verdict; their first start, last finish and last creation. */
export interface JobRunSummary {
  queued: number;
  running: number;
  completed: number;
  aborted: number;
  passed: number;
  failed: number;
  broken: number;
  skipped: number;
  firstStarted: string | null;
  lastFinished: string | null;
  lastCreated: string | null;
}

const summaryOf = (row: JobRollupsTable): JobRunSummary => ({
  queued: Number(row.queued),
  running: Number(row.running),
  completed: Number(row.completed),
  aborted: Number(row.aborted),
  passed: Number(row.passed),
  failed: Number(row.failed),
  broken: Number(row.broken),
  skipped: Number(row.skipped),
  firstStarted: row.first_started,
  lastFinished: row.last_finished,
  lastCreated: row.last_created,
});

/**
 * The run summaries of the jobs given, from their rollup rows (SCALE-11): a job without runs has
 * none. A stale row's times, left by a run that held one and changed or went, are read from the
 * job's runs.
 */
export async function jobRunSummaries(executor: Executor, jobIds: readonly string[]): Promise<Map<string, JobRunSummary>> {
  const summaries = new Map<string, JobRunSummary>();
  for (const ids of chunk(jobIds, IN_LIST_SIZE)) {
    const rows = await executor.selectFrom('job_rollups').selectAll().where('job_id', 'in', ids).execute();
    const stale = rows.filter((row) => row.stale !== 0).map((row) => row.job_id);
    const times = new Map<string, Pick<JobRollupsTable, 'first_started' | 'last_finished' | 'last_created'>>();
    if (stale.length > 0) {
      const read = await executor
        .selectFrom('test_runs')
        .select((eb) => [
          'job_id',
          eb.fn.min<string | null>('started_at').as('first_started'),
          eb.fn.max<string | null>('finished_at').as('last_finished'),
          eb.fn.max<string | null>('created_at').as('last_created'),
        ])
        .where('job_id', 'in', stale)
        .groupBy('job_id')
        .execute();
      for (const row of read) times.set(row.job_id as string, row);
    }
    for (const row of rows) {
      const summary = summaryOf(
        row.stale === 0 ? row : { ...row, first_started: null, last_finished: null, last_created: null, ...times.get(row.job_id) },
      );
      if (summary.queued + summary.running + summary.completed + summary.aborted > 0) summaries.set(row.job_id, summary);
    }
  }
  return summaries;
}

export async function findJob(executor: Executor, jobId: string): Promise<JobsTable | undefined> {
  return executor.selectFrom('jobs').selectAll().where('id', '=', jobId).executeTakeFirst();
}

/** The project a job belongs to, for the access check. */
export async function projectOfJob(executor: Executor, jobId: string): Promise<string | undefined> {
  return (await executor.selectFrom('jobs').select('project_id').where('id', '=', jobId).executeTakeFirst())?.project_id;
}

export async function insertJob(executor: Executor, job: JobsTable): Promise<void> {
  await executor.insertInto('jobs').values(job).execute();
}

/** Marks the job cancelled unless it already is; false when another cancel came first. */
export async function markJobCancelled(executor: Executor, jobId: string, at: string): Promise<boolean> {
  const result = await executor
    .updateTable('jobs')
    .set({ cancelled_at: at })
    .where('id', '=', jobId)
    .where('cancelled_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** Closes a launch unless it is already closed or cancelled; false when nothing changed. */
export async function markJobClosed(executor: Executor, jobId: string, at: string): Promise<boolean> {
  const result = await executor
    .updateTable('jobs')
    .set({ closed_at: at })
    .where('id', '=', jobId)
    .where('closed_at', 'is', null)
    .where('cancelled_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** What a job list may be narrowed to (TRIAGE-17): each an exact match, read through its index. */
export interface JobFilter {
  build?: string;
  ciUrl?: string;
  branch?: string;
}

/** A project's jobs, newest first: jobs_project, or jobs_build / jobs_ci_url / jobs_branch with a filter. */
export async function listJobs(executor: Executor, projectId: string, page: PageRequest, filter: JobFilter = {}): Promise<Page<JobsTable>> {
  let query = executor.selectFrom('jobs').selectAll().where('project_id', '=', projectId);
  if (filter.build !== undefined) query = query.where('build', '=', filter.build);
  if (filter.ciUrl !== undefined) query = query.where('ci_url', '=', filter.ciUrl);
  if (filter.branch !== undefined) query = query.where('branch', '=', filter.branch);
  return keysetPage(query, { columns: ['created_at', 'id'], direction: 'desc' }, page);
}

export async function findJobByIdempotencyKey(executor: Executor, projectId: string, key: string): Promise<JobsTable | undefined> {
  return executor.selectFrom('jobs').selectAll().where('project_id', '=', projectId).where('idempotency_key', '=', key).executeTakeFirst();
}

/** Deletes a job row (its runs are deleted first by the caller). False when there was none. */
export async function deleteJobRow(executor: Executor, jobId: string): Promise<boolean> {
  const result = await executor.deleteFrom('jobs').where('id', '=', jobId).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}
