import { sql } from 'kysely';
import type { Executor } from '../types.ts';

// What a project's default branch is inferred from (TRIAGE-16): the branches its jobs ran on.

/**
 * The branch most of the project's latest `window` jobs have a run on (a job on two branches counts
 * for both), ties going to the branch whose first job among them came first; null when none of
 * them has a run with a branch. Reads the latest jobs on `jobs_project`, then their runs' branches
 * on `test_runs_job_branch`: bounded by the window, whatever the project holds.
 */
export async function mostUsedBranch(executor: Executor, projectId: string, window: number): Promise<string | null> {
  const row = await executor
    .with('latest', (db) =>
      db
        .selectFrom('jobs')
        .select(['id', 'created_at'])
        .where('project_id', '=', projectId)
        .orderBy('created_at', 'desc')
        .orderBy('id', 'desc')
        .limit(window),
    )
    .with('job_branches', (db) =>
      db
        .selectFrom('latest')
        .innerJoin('test_runs', 'test_runs.job_id', 'latest.id')
        .select(['latest.id as job_id', 'latest.created_at as created_at', 'test_runs.branch as branch'])
        .where('test_runs.branch', 'is not', null)
        .distinct(),
    )
    .selectFrom('job_branches')
    .select(['branch', sql<number>`COUNT(*)`.as('jobs'), sql<string>`MIN(created_at)`.as('first_at')])
    .groupBy('branch')
    .orderBy(sql`COUNT(*)`, 'desc')
    .orderBy(sql`MIN(created_at)`, 'asc')
    .orderBy('branch', 'asc')
    .limit(1)
    .executeTakeFirst();
  return row?.branch ?? null;
}
