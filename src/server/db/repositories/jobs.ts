import { keysetPage, type Page, type PageRequest } from '../pagination.ts';
import type { Executor, JobsTable } from '../types.ts';

// Queries of jobs. A job's state is derived from its runs (see runGroupsOfJobs in runs.ts).

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
