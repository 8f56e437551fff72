import type { Executor, SsoIdentitiesTable, SsoLoginsTable } from '../types.ts';

// Single sign-on's rows (migration 0019): sign-ins under way, and the identities users signed in with.

/** Keeps a sign-in under way, and drops those that expired before `now` (nobody can finish them). */
export async function insertSsoLogin(executor: Executor, login: SsoLoginsTable, now: string): Promise<void> {
  await executor.deleteFrom('sso_logins').where('expires_at', '<=', now).execute();
  await executor.insertInto('sso_logins').values(login).execute();
}

/**
 * Takes the sign-in a state belongs to: deleted and answered in one statement, so of two requests
 * with the same state only one gets it (a state works once). Undefined when there is none.
 */
export async function takeSsoLogin(executor: Executor, stateDigest: string): Promise<SsoLoginsTable | undefined> {
  return executor.deleteFrom('sso_logins').where('state_digest', '=', stateDigest).returningAll().executeTakeFirst();
}

export async function findSsoIdentity(executor: Executor, issuer: string, subject: string): Promise<SsoIdentitiesTable | undefined> {
  return executor.selectFrom('sso_identities').selectAll().where('issuer', '=', issuer).where('subject', '=', subject).executeTakeFirst();
}

export async function insertSsoIdentity(executor: Executor, identity: SsoIdentitiesTable): Promise<void> {
  await executor.insertInto('sso_identities').values(identity).execute();
}

export async function touchSsoIdentity(executor: Executor, issuer: string, subject: string, at: string): Promise<void> {
  await executor
    .updateTable('sso_identities')
    .set({ last_login_at: at })
    .where('issuer', '=', issuer)
    .where('subject', '=', subject)
    .execute();
}

/** The ids of the projects with these keys, by key (unknown keys are left out). */
export async function projectIdsByKey(executor: Executor, keys: string[]): Promise<Map<string, string>> {
  if (keys.length === 0) return new Map();
  const rows = await executor.selectFrom('projects').select(['id', 'key']).where('key', 'in', keys).execute();
  return new Map(rows.map((row) => [row.key, row.id]));
}
