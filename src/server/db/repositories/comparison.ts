import { chunk, IN_LIST_SIZE } from '../chunks.ts';
import type { Executor, JobsTable } from '../types.ts';
import { hasRunOnBranch } from './dashboard.ts';

// What comparing two jobs reads besides their runs (TRIAGE-7).

/** The project's jobs created before `head`, newest first; on `branch`, those with a run on it. */
export async function latestJobsBefore(executor: Executor, head: JobsTable, branch: string | null, limit: number): Promise<JobsTable[]> {
  let query = executor
    .selectFrom('jobs')
    .selectAll()
    .where('project_id', '=', head.project_id)
    .where('id', '!=', head.id)
    // Redundant with the OR below, but a range PostgreSQL seeks in jobs_project (it filters the OR).
    .where('created_at', '<=', head.created_at)
    .where((eb) =>
      eb.or([eb('created_at', '<', head.created_at), eb.and([eb('created_at', '=', head.created_at), eb('id', '<', head.id)])]),
    );
  if (branch !== null) query = query.where(hasRunOnBranch(branch));
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).execute();
}

/** Each error group that failed a run of the job, with the test it failed (index failure_occurrences_job). */
export async function groupsOfJob(executor: Executor, jobId: string): Promise<{ group_id: string; test_key: string }[]> {
  return executor.selectFrom('failure_occurrences').select(['group_id', 'test_key']).distinct().where('job_id', '=', jobId).execute();
}

/** Which of these tests have a quarantine in force at `now`. */
export async function quarantinedAmong(
  executor: Executor,
  projectId: string,
  testIds: readonly string[],
  now: string,
): Promise<Set<string>> {
  const quarantined = new Set<string>();
  for (const ids of chunk([...new Set(testIds)], IN_LIST_SIZE)) {
    const rows = await executor
      .selectFrom('test_quarantines')
      .select('test_id')
      .where('project_id', '=', projectId)
      .where('test_id', 'in', ids)
      .where('expires_at', '>', now)
      .execute();
    for (const row of rows) quarantined.add(row.test_id);
  }
  return quarantined;
}
