import type { ServiceContext } from '../../context.ts';
import { mostUsedBranch } from '../../db/repositories/branches.ts';
import { findProject } from '../../db/repositories/projects.ts';
import type { Executor, ProjectsTable } from '../../db/types.ts';

// A project's default branch (TRIAGE-16, docs/triage.md): the base a job on another branch is
// compared with, in the comparison answer, `attest gate` and the `job.completed` notifications, and
// the branch a test's health is scored on unless another is asked (TRIAGE-11).

/** How many of the project's latest jobs the inference looks at. */
export const DEFAULT_BRANCH_JOBS = 100;

export interface DefaultBranch {
  /** The branch, or null while it is not set and no job has run on a branch. */
  name: string | null;
  /** True when it is not set but read from the branches the project's jobs ran on. */
  inferred: boolean;
}

/** The default branch of a project row: the one set, else the branch most of its latest jobs ran on. */
export async function defaultBranchOfRow(
  executor: Executor,
  project: Pick<ProjectsTable, 'id' | 'default_branch'>,
): Promise<DefaultBranch> {
  if (project.default_branch !== null) return { name: project.default_branch, inferred: false };
  return { name: await mostUsedBranch(executor, project.id, DEFAULT_BRANCH_JOBS), inferred: true };
}

/** The project's default branch: the one set (`PATCH /projects/{id}` with `defaultBranch`), else inferred from its jobs. */
export async function defaultBranchOf(
  ctx: Pick<ServiceContext, 'db'>,
  projectId: string,
  executor: Executor = ctx.db,
): Promise<DefaultBranch> {
  const project = await findProject(executor, projectId);
  if (!project) return { name: null, inferred: true };
  return defaultBranchOfRow(executor, project);
}

/** The name of the project's default branch; null when none is set and no job ran on a branch (every branch then counts). */
export async function defaultBranchNameOf(
  ctx: Pick<ServiceContext, 'db'>,
  projectId: string,
  executor: Executor = ctx.db,
): Promise<string | null> {
  return (await defaultBranchOf(ctx, projectId, executor)).name;
}
