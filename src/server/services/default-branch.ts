import type { ServiceContext } from '../context.ts';
import { branchesOfLatestJobs } from '../db/repositories/health.ts';
import type { Executor } from '../db/types.ts';

// A project's default branch (TRIAGE-11, docs/triage.md): the branch a test's health is scored on
// unless another is asked. Until a project can set one, it is inferred: the branch most of its
// latest jobs ran on (a job's branch is the one its runs carry), the earliest to appear among them
// on a tie; null when none of them ran on a branch, and health then reads every branch.

/** How many of the project's latest jobs the inference reads (index jobs_project, one probe of test_runs_job_branch each). */
export const DEFAULT_BRANCH_JOBS = 100;

export async function defaultBranchOf(ctx: ServiceContext, projectId: string, executor: Executor = ctx.db): Promise<string | null> {
  const branches = await branchesOfLatestJobs(executor, projectId, DEFAULT_BRANCH_JOBS);
  const counts = new Map<string, { jobs: number; first: number }>();
  // Newest first: the last index seen of a branch is its earliest job in the window.
  branches.forEach((branch, at) => {
    if (branch === null) return;
    const count = counts.get(branch) ?? { jobs: 0, first: at };
    count.jobs++;
    count.first = at;
    counts.set(branch, count);
  });
  let best: { branch: string; jobs: number; first: number } | null = null;
  for (const [branch, { jobs, first }] of counts) {
    if (best === null || jobs > best.jobs || (jobs === best.jobs && first > best.first)) best = { branch, jobs, first };
  }
  return best?.branch ?? null;
}
