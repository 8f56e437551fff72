import { keysetPage, type Page, type PageRequest } from '../pagination.ts';
import type { ApiKeysTable, Executor, UsersTable } from '../types.ts';

// Queries of API keys. Every function takes the database or an open transaction.

/** A key with the user who holds it, as authentication reads them in one lookup. */
export type KeyWithUser = Pick<ApiKeysTable, 'format' | 'scope' | 'key_digest' | 'email_digest' | 'expires_at' | 'revoked_at'> &
  Pick<UsersTable, 'email' | 'name' | 'roles' | 'deleted_at'> & { keyId: string; userId: string };

/** The key with this digest and its user, whatever their state: the caller decides what is usable. */
export async function findKeyWithUserByDigest(executor: Executor, digest: string): Promise<KeyWithUser | undefined> {
  return executor
    .selectFrom('api_keys as k')
    .innerJoin('users as u', 'u.id', 'k.user_id')
    .where('k.key_digest', '=', digest)
    .select([
      'k.id as keyId',
      'k.format',
      'k.scope',
      'k.key_digest',
      'k.email_digest',
      'k.expires_at',
      'k.revoked_at',
      'u.id as userId',
      'u.email',
      'u.name',
      'u.roles',
      'u.deleted_at',
    ])
    .executeTakeFirst();
}

/** A user's keys that count against the limit at `now`: not sessions, not revoked, not expired. */
export async function countActiveKeys(executor: Executor, userId: string, now: string): Promise<number> {
  const row = await executor
    .selectFrom('api_keys')
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .where('format', '!=', 'session')
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

export async function insertApiKey(executor: Executor, key: ApiKeysTable): Promise<void> {
  await executor.insertInto('api_keys').values(key).execute();
}

/** The key when it belongs to that user; a key of someone else is as unknown as a missing one. */
export async function findKeyOfUser(executor: Executor, keyId: string, userId: string): Promise<ApiKeysTable | undefined> {
  return executor.selectFrom('api_keys').selectAll().where('id', '=', keyId).where('user_id', '=', userId).executeTakeFirst();
}

export async function revokeKey(executor: Executor, keyId: string, at: string): Promise<void> {
  await executor.updateTable('api_keys').set({ revoked_at: at }).where('id', '=', keyId).execute();
}

/** Revokes every key of a user that is not revoked yet. */
export async function revokeKeysOfUser(executor: Executor, userId: string, at: string): Promise<void> {
  await executor.updateTable('api_keys').set({ revoked_at: at }).where('user_id', '=', userId).where('revoked_at', 'is', null).execute();
}

/** Revokes a user's web sessions that are not revoked yet, all but `keepKeyId`; answers how many. */
export async function revokeSessionsOfUser(executor: Executor, userId: string, at: string, keepKeyId?: string): Promise<number> {
  let query = executor
    .updateTable('api_keys')
    .set({ revoked_at: at })
    .where('user_id', '=', userId)
    .where('format', '=', 'session')
    .where('revoked_at', 'is', null);
  if (keepKeyId !== undefined) query = query.where('id', '!=', keepKeyId);
  const result = await query.executeTakeFirst();
  return Number(result.numUpdatedRows);
}

export async function touchKeyLastUsed(executor: Executor, keyId: string, at: string): Promise<void> {
  await executor.updateTable('api_keys').set({ last_used_at: at }).where('id', '=', keyId).execute();
}

export interface KeyFilter {
  includeRevoked?: boolean;
  /** Only keys never used, or last used before this ISO-8601 time. */
  unusedSince?: string;
}

/** A user's keys (sessions left out), newest first. */
export async function listKeysOfUser(
  executor: Executor,
  userId: string,
  filter: KeyFilter,
  page: PageRequest,
): Promise<Page<ApiKeysTable>> {
  let query = executor.selectFrom('api_keys').selectAll().where('user_id', '=', userId).where('format', '!=', 'session');
  if (!filter.includeRevoked) query = query.where('revoked_at', 'is', null);
  const since = filter.unusedSince;
  if (since !== undefined) query = query.where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', since)]));
  return keysetPage(query, { columns: ['created_at', 'id'], direction: 'desc' }, page);
}

/** The digests of every stored old-format key, revoked and expired ones included. */
export async function legacyKeyDigests(executor: Executor): Promise<string[]> {
  const rows = await executor.selectFrom('api_keys').select('key_digest').where('format', '=', 'legacy').execute();
  return rows.map((row) => row.key_digest);
}
