import { randomUUID } from 'node:crypto';
import type { BodyOf } from '../../../api/endpoint.ts';
import type { createProject as createProjectEndpoint, updateProject as updateProjectEndpoint } from '../../../api/v1/projects.ts';
import type { ServiceContext } from '../../context.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import type { Page, PageRequest } from '../../db/pagination.ts';
import {
  deleteMember,
  deleteProject as deleteProjectRow,
  findMember,
  findProject,
  findProjectIdByKey,
  insertMember,
  insertProject,
  listMembers as listMemberRows,
  listProjects as listProjectRows,
  type MemberRow,
  updateProject as updateProjectRow,
} from '../../db/repositories/projects.ts';
import { inTransaction } from '../../db/repositories/transaction.ts';
import { setQuota, usageOfProjects } from '../../db/repositories/usage.ts';
import { findActiveUserByEmail } from '../../db/repositories/users.ts';
import type { Executor, ProjectsTable, ProjectWithUsage, UsageCounters, VisibleProjects } from '../../db/types.ts';
import { AppError, found, notFound } from '../../errors.ts';
import { normaliseEmail } from '../../security/api-key.ts';
import { inAccessTransaction } from '../access/access-transaction.ts';
import { auditProjectChange } from '../access/audit.ts';
import { type Actor, requireActiveUser } from '../access/users.ts';
import { type DefaultBranch, defaultBranchOfRow } from '../triage/default-branch.ts';
import { auditDeletion, forgetKeptContent } from './deletions.ts';

export type CreateProjectInput = BodyOf<typeof createProjectEndpoint>;
export type UpdateProjectInput = BodyOf<typeof updateProjectEndpoint>;

const keyTaken = (key: string) => new AppError('ALREADY_EXISTS', `A project with key ${key} already exists.`);

/** A project as its answers show it: with its storage counters (RET-4) and its default branch (TRIAGE-16). */
export type ProjectAnswer = ProjectWithUsage & { defaultBranch: DefaultBranch };

/** Projects with their storage counters, read in one query for the lot, and their default branches. */
async function withUsage(executor: Executor, projects: ProjectsTable[]): Promise<ProjectAnswer[]> {
  const usage = await usageOfProjects(
    executor,
    projects.map((project) => project.id),
  );
  return Promise.all(
    projects.map(async (project) => ({
      ...project,
      usage: usage.get(project.id) as UsageCounters,
      defaultBranch: await defaultBranchOfRow(executor, project),
    })),
  );
}

export async function getProject(ctx: ServiceContext, projectId: string): Promise<ProjectAnswer> {
  const [project] = await withUsage(ctx.db, [found(await findProject(ctx.db, projectId), 'The project')]);
  return project as ProjectAnswer;
}

/** The projects the caller may see, by key; with `key` (any case), only the one with that key. */
export async function listProjects(
  ctx: ServiceContext,
  visible: VisibleProjects,
  page: PageRequest,
  key?: string,
): Promise<Page<ProjectAnswer>> {
  const rows = await listProjectRows(ctx.db, visible, page, key?.toUpperCase());
  return { items: await withUsage(ctx.db, rows.items), nextCursor: rows.nextCursor };
}

/** Creates a project with its creator as the first member. */
export async function createProject(ctx: ServiceContext, input: CreateProjectInput, creatorId: string): Promise<ProjectAnswer> {
  const now = ctx.clock().toISOString();
  const row: ProjectsTable = {
    id: randomUUID(),
    key: input.key,
    name: input.name,
    description: input.description ?? '',
    created_at: now,
    updated_at: now,
    created_by: creatorId,
    retention: null,
    quota_bytes: null,
    failure_rules: null,
    triage_settings: null,
    default_branch: null,
  };
  if (await findProjectIdByKey(ctx.db, row.key)) throw keyTaken(row.key);
  try {
    // The creator's principal gains the project.
    await inAccessTransaction(ctx, async (trx, concerns) => {
      concerns({ userIds: [creatorId] });
      await insertProject(trx, row);
      await insertMember(trx, { project_id: row.id, user_id: creatorId, added_at: now });
    });
  } catch (error) {
    // Two concurrent creations with one key: the unique index decides, the loser gets 409.
    if (isUniqueViolation(error)) throw keyTaken(row.key);
    throw error;
  }
  // A new project holds nothing yet (its counters row comes with it, by trigger).
  return {
    ...row,
    usage: { runs: 0, artifacts: 0, logical_bytes: 0, stored_bytes: 0 },
    defaultBranch: { name: null, inferred: true },
  };
}

/**
 * Changes a project's name, description, retention policy, triage thresholds, default branch or
 * quota and returns it as stored. The quota is an admin's: a manager may not raise the cap on their
 * own project (403). A quota, triage or default branch change (TRIAGE-16) is audited.
 */
export async function updateProject(
  ctx: ServiceContext,
  projectId: string,
  input: UpdateProjectInput,
  actor: Actor & { admin: boolean },
): Promise<ProjectAnswer> {
  const { retention, quotaBytes, triage, defaultBranch, ...rest } = input;
  if (quotaBytes !== undefined && !actor.admin) throw new AppError('FORBIDDEN', "Only an admin sets a project's quota.");
  await inTransaction(ctx.db, async (trx) => {
    const triageChange = triage === undefined ? {} : { triage_settings: await changedTriageSettings(trx, projectId, triage) };
    await updateProjectRow(trx, projectId, {
      ...rest,
      ...(retention === undefined ? {} : { retention: retention === null ? null : JSON.stringify(retention) }),
      ...triageChange,
      ...(defaultBranch === undefined ? {} : { default_branch: defaultBranch }),
      updated_at: ctx.clock().toISOString(),
    });
    if (defaultBranch !== undefined) await auditProjectChange(ctx, trx, actor, projectId, 'project.default-branch', { defaultBranch });
    if (triage !== undefined) await auditProjectChange(ctx, trx, actor, projectId, 'project.triage', { triage });
    if (quotaBytes === undefined) return;
    await setQuota(trx, projectId, quotaBytes);
    await auditProjectChange(ctx, trx, actor, projectId, 'project.quota', { quotaBytes });
  });
  return getProject(ctx, projectId);
}

/** The project's own triage settings after `change`: the fields given replace its own, `null` drops them all (the defaults). */
async function changedTriageSettings(trx: Executor, projectId: string, change: UpdateProjectInput['triage']): Promise<string | null> {
  if (change === null || change === undefined) return null;
  const project = found(await findProject(trx, projectId), 'The project');
  const own = project.triage_settings === null ? {} : (JSON.parse(project.triage_settings) as Record<string, unknown>);
  return JSON.stringify({ ...own, ...change });
}

/**
 * Deletes a project. Child rows go with it (ON DELETE CASCADE); blobs they referenced become
 * unreferenced and are reclaimed by the blob garbage collector.
 */
export async function deleteProject(ctx: ServiceContext, projectId: string, actor: Actor): Promise<void> {
  // Every principal that sees the project goes: no user is named.
  await inAccessTransaction(ctx, async (trx) => {
    const project = found(await findProject(trx, projectId), 'The project');
    await deleteProjectRow(trx, project.id);
    await auditDeletion(ctx, trx, actor, 'project', project.id, { key: project.key, name: project.name });
  });
  // Its runs' kept results and its images' uses go too (an admin sees every project, so the owner
  // check alone would not hide an image only this project used).
  forgetKeptContent(ctx);
}

/** A project's active members, by name. */
export const listMembers = (ctx: ServiceContext, projectId: string, page: PageRequest): Promise<Page<MemberRow>> =>
  listMemberRows(ctx.db, projectId, page);

/** Adds a user to a project; adding a member twice changes nothing. Returns the membership. */
export async function addMember(ctx: ServiceContext, projectId: string, email: string, actor: Actor): Promise<MemberRow> {
  const user = await requireActiveUser(ctx.db, email);
  const member = await inAccessTransaction(ctx, async (trx, concerns) => {
    concerns({ userIds: [user.id] });
    const existing = await findMember(trx, projectId, user.id);
    if (existing) return existing;
    const added = { project_id: projectId, user_id: user.id, added_at: ctx.clock().toISOString() };
    await insertMember(trx, added);
    await auditProjectChange(ctx, trx, actor, projectId, 'project.member.add', { userId: user.id });
    return added;
  });
  return { user_id: member.user_id, added_at: member.added_at, email: user.email, name: user.name };
}

/** Removes a user from a project; a user who is not a member (or no user at all) is a 404. */
export async function removeMember(ctx: ServiceContext, projectId: string, email: string, actor: Actor): Promise<void> {
  await inAccessTransaction(ctx, async (trx, concerns) => {
    const user = await findActiveUserByEmail(trx, normaliseEmail(email));
    if (!user || !(await deleteMember(trx, projectId, user.id))) throw notFound('The member');
    concerns({ userIds: [user.id] });
    await auditProjectChange(ctx, trx, actor, projectId, 'project.member.remove', { userId: user.id });
  });
}
