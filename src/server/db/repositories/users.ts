import type { Role } from '../../../api/endpoint.ts';
import { dialectOf } from '../dialect.ts';
import { keysetPage, type Page, type PageRequest } from '../pagination.ts';
import type { Executor, UsersTable } from '../types.ts';

// Queries of users and of the memberships a user holds. Every function takes the database or an
// open transaction. E-mails arrive normalised (lower case); deleted users are kept as tombstones.

/** The active (not deleted) user with this normalised e-mail. */
export async function findActiveUserByEmail(executor: Executor, email: string): Promise<UsersTable | undefined> {
  return executor.selectFrom('users').selectAll().where('email', '=', email).where('deleted_at', 'is', null).executeTakeFirst();
}

/** A user by id, deleted or not. */
export async function findUserById(executor: Executor, userId: string): Promise<UsersTable | undefined> {
  return executor.selectFrom('users').selectAll().where('id', '=', userId).executeTakeFirst();
}

/** Whether any user, active or deleted, exists: an empty database is a first start. */
export async function anyUserExists(executor: Executor): Promise<boolean> {
  return (await executor.selectFrom('users').select('id').limit(1).executeTakeFirst()) !== undefined;
}

export async function insertUser(executor: Executor, user: UsersTable): Promise<void> {
  await executor.insertInto('users').values(user).execute();
}

export async function updateUser(executor: Executor, userId: string, changes: Partial<Omit<UsersTable, 'id'>>): Promise<void> {
  await executor.updateTable('users').set(changes).where('id', '=', userId).execute();
}

// Roles are stored as a JSON array of names, so a role is matched by its quoted name.
const holdsRole = (role: Role) => `%"${role}"%`;

/**
 * Locks the active admins for the rest of the transaction, so two concurrent demotions of the last
 * two admins serialise. PostgreSQL takes row locks; SQLite needs none, since its write
 * transactions already run one at a time.
 */
export async function lockAdmins(trx: Executor): Promise<void> {
  if (dialectOf(trx) !== 'postgres') return;
  await trx
    .selectFrom('users')
    .select('id')
    .where('deleted_at', 'is', null)
    .where('roles', 'like', holdsRole('admin'))
    .orderBy('id')
    .forUpdate()
    .execute();
}

export async function countActiveAdmins(executor: Executor): Promise<number> {
  const row = await executor
    .selectFrom('users')
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .where('deleted_at', 'is', null)
    .where('roles', 'like', holdsRole('admin'))
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

export interface UserFilter {
  role?: Role;
  /** Part of a normalised e-mail; LIKE wildcards in it are ignored. */
  emailContains?: string;
}

/** Active users by e-mail, narrowed by every filter given. */
export async function listUsers(executor: Executor, filter: UserFilter, page: PageRequest): Promise<Page<UsersTable>> {
  let query = executor.selectFrom('users').selectAll().where('deleted_at', 'is', null);
  if (filter.role) query = query.where('roles', 'like', holdsRole(filter.role));
  if (filter.emailContains) query = query.where('email', 'like', `%${filter.emailContains.replace(/[%_\\]/g, '')}%`);
  return keysetPage(query, { columns: ['email', 'id'], direction: 'asc' }, page);
}

/** The ids of the projects a user is a member of. */
export async function projectIdsOfUser(executor: Executor, userId: string): Promise<string[]> {
  const rows = await executor.selectFrom('project_members').select('project_id').where('user_id', '=', userId).execute();
  return rows.map((row) => row.project_id);
}

/** Drops every membership of a user (the user is being deleted). */
export async function deleteMembershipsOfUser(executor: Executor, userId: string): Promise<void> {
  await executor.deleteFrom('project_members').where('user_id', '=', userId).execute();
}
