import { keysetPage, type Page, type PageRequest } from '../pagination.ts';
import type { Executor, ProjectMembersTable, ProjectsTable, UsersTable, VisibleProjects } from '../types.ts';

// Queries of projects and their members. Every function takes the database or an open transaction.

/** The project's id when it exists, for access checks and owner lookups. */
export async function findProjectId(executor: Executor, projectId: string): Promise<string | undefined> {
  return (await executor.selectFrom('projects').select('id').where('id', '=', projectId).executeTakeFirst())?.id;
}

export async function findProject(executor: Executor, projectId: string): Promise<ProjectsTable | undefined> {
  return executor.selectFrom('projects').selectAll().where('id', '=', projectId).executeTakeFirst();
}

/** The id of the project with this key, if any. */
export async function findProjectIdByKey(executor: Executor, key: string): Promise<string | undefined> {
  return (await executor.selectFrom('projects').select('id').where('key', '=', key).executeTakeFirst())?.id;
}

export async function insertProject(executor: Executor, project: ProjectsTable): Promise<void> {
  await executor.insertInto('projects').values(project).execute();
}

export async function updateProject(
  executor: Executor,
  projectId: string,
  changes: Partial<
    Pick<ProjectsTable, 'name' | 'description' | 'retention' | 'triage_settings' | 'failure_rules' | 'default_branch' | 'updated_at'>
  >,
): Promise<void> {
  await executor.updateTable('projects').set(changes).where('id', '=', projectId).execute();
}

/** Deletes a project; its child rows go with it (ON DELETE CASCADE). */
export async function deleteProject(executor: Executor, projectId: string): Promise<void> {
  await executor.deleteFrom('projects').where('id', '=', projectId).execute();
}

/** The projects among `visible`, by key; with `key` (stored upper-case), only the one with that key. */
export async function listProjects(
  executor: Executor,
  visible: VisibleProjects,
  page: PageRequest,
  key?: string,
): Promise<Page<ProjectsTable>> {
  let query = executor.selectFrom('projects').selectAll();
  if (key !== undefined) query = query.where('key', '=', key);
  if (visible !== 'all') {
    // `IN ()` is not SQL: no visible project is an empty page.
    if (visible.size === 0) return { items: [], nextCursor: null };
    query = query.where('id', 'in', [...visible]);
  }
  return keysetPage(query, { columns: ['key', 'id'], direction: 'asc' }, page);
}

export async function findMember(executor: Executor, projectId: string, userId: string): Promise<ProjectMembersTable | undefined> {
  return executor
    .selectFrom('project_members')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('user_id', '=', userId)
    .executeTakeFirst();
}

export async function insertMember(executor: Executor, member: ProjectMembersTable): Promise<void> {
  await executor.insertInto('project_members').values(member).execute();
}

/** Removes a membership; false when there was none. */
export async function deleteMember(executor: Executor, projectId: string, userId: string): Promise<boolean> {
  const result = await executor
    .deleteFrom('project_members')
    .where('project_id', '=', projectId)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/** A member as lists show it: the membership with its user's e-mail and name. */
export type MemberRow = Pick<ProjectMembersTable, 'user_id' | 'added_at'> & Pick<UsersTable, 'email' | 'name'>;

/** A project's active members, by name. */
export async function listMembers(executor: Executor, projectId: string, page: PageRequest): Promise<Page<MemberRow>> {
  const query = executor
    .selectFrom('project_members as m')
    .innerJoin('users as u', 'u.id', 'm.user_id')
    .select(['m.user_id', 'u.email', 'u.name', 'm.added_at'])
    .where('m.project_id', '=', projectId)
    .where('u.deleted_at', 'is', null);
  // Ordered by name, not e-mail: the cursor carries the sort key, and a viewer must not be able to
  // read e-mails out of it.
  return keysetPage(query, { columns: ['u.name', 'm.user_id'], direction: 'asc' }, page);
}
