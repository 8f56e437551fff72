import { randomUUID } from 'node:crypto';
import type { BodyOf, Role } from '../../../api/endpoint.ts';
import type { createApiKey as createApiKeyEndpoint } from '../../../api/v1/users.ts';
import type { AccessChanged } from '../../changes.ts';
import type { ServiceContext } from '../../context.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import type { Page, PageRequest } from '../../db/pagination.ts';
import {
  countActiveKeys,
  findKeyOfUser,
  insertApiKey,
  type KeyFilter,
  listKeysOfUser,
  revokeKey,
  revokeKeysOfUser,
} from '../../db/repositories/api-keys.ts';
import { inTransaction } from '../../db/repositories/transaction.ts';
import {
  countActiveAdmins,
  deleteMembershipsOfUser,
  findActiveUserByEmail,
  insertUser,
  listUsers as listUserRows,
  lockAdmins,
  projectIdsOfUser,
  updateUser,
} from '../../db/repositories/users.ts';
import type { ApiKeysTable, Executor, UsersTable } from '../../db/types.ts';
import { AppError, found, notFound } from '../../errors.ts';
import { classifyToken, displayHint, emailDigest, generateKey, keyDigest, normaliseEmail } from '../../security/api-key.ts';
import { hashPassword } from '../../security/password.ts';
import type { Principal } from '../../security/principal.ts';
import type { Actor, Caller } from '../actor.ts';
import { inAccessTransaction } from './access-transaction.ts';
import { auditBy } from './audit.ts';
import { confirmPassword, confirmSession, setPassword } from './passwords.ts';

export type { Actor, Caller } from '../actor.ts';

const actorOf = (caller: Caller): Actor => ({ userId: caller.principal.user.id, requestId: caller.requestId });

const DAY_MS = 24 * 60 * 60 * 1000;

/** Finds an active (not deleted) user by e-mail, case-insensitively. */
export async function findActiveUser(executor: Executor, email: string): Promise<UsersTable | undefined> {
  return findActiveUserByEmail(executor, normaliseEmail(email));
}

export async function requireActiveUser(executor: Executor, email: string): Promise<UsersTable> {
  return found(await findActiveUser(executor, email), 'The user');
}

/**
 * The user an admin-or-self operation addresses. Non-admins may only address themselves; any other
 * e-mail answers 404 whether or not it belongs to someone, so e-mails cannot be probed.
 */
async function addressableUser(ctx: ServiceContext, principal: Principal, email: string): Promise<UsersTable> {
  if (principal.role !== 'admin' && normaliseEmail(email) !== principal.user.email) throw notFound('The user');
  return requireActiveUser(ctx.db, email);
}

export const getUser = (ctx: ServiceContext, email: string, caller: Principal): Promise<UsersTable> => addressableUser(ctx, caller, email);

/** Active users by e-mail, narrowed to a role and to e-mails containing `email`. */
export function listUsers(ctx: ServiceContext, filter: { role?: Role; email?: string }, page: PageRequest): Promise<Page<UsersTable>> {
  return listUserRows(ctx.db, { role: filter.role, emailContains: filter.email ? normaliseEmail(filter.email) : undefined }, page);
}

/**
 * The projects the caller is a member of. Non-admins' memberships were read when they
 * authenticated; admins see every project, so theirs are read here.
 */
export async function memberProjectIds(ctx: ServiceContext, principal: Principal): Promise<string[]> {
  return principal.projects === 'all' ? projectIdsOfUser(ctx.db, principal.user.id) : [...principal.projects];
}

export async function createUser(
  ctx: ServiceContext,
  input: { email: string; name: string; roles?: Role[]; password?: string },
  actor: Actor,
): Promise<UsersTable> {
  const now = ctx.clock().toISOString();
  const row: UsersTable = {
    id: randomUUID(),
    email: normaliseEmail(input.email),
    name: input.name,
    roles: JSON.stringify(input.roles ?? ['viewer']),
    password_hash: input.password ? await hashPassword(input.password) : null,
    created_at: now,
    updated_at: now,
    deleted_at: null,
  };
  try {
    await inTransaction(ctx.db, async (trx) => {
      await insertUser(trx, row);
      await auditBy(ctx, trx, actor, {
        action: 'user.create',
        targetType: 'user',
        targetId: row.id,
        details: { email: row.email, roles: input.roles ?? ['viewer'] },
      });
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw new AppError('ALREADY_EXISTS', 'A user with this e-mail already exists.');
    throw error;
  }
  return row;
}

/**
 * Runs `change` as an access change (`inAccessTransaction`) after locking the admin set, and
 * refuses (409, with `refusal`) when it would leave no active admin. Locking makes two concurrent
 * demotions of the last two admins serialise.
 */
export async function withAdminInvariant<T>(
  ctx: ServiceContext,
  change: (trx: Executor, concerns: (affected: AccessChanged) => void) => Promise<T>,
  refusal = 'At least one admin must remain; promote another user first.',
): Promise<T> {
  return inAccessTransaction(ctx, async (trx, concerns) => {
    await lockAdmins(trx);
    const result = await change(trx, concerns);
    if ((await countActiveAdmins(trx)) === 0) throw new AppError('LAST_ADMIN', refusal);
    return result;
  });
}

export async function setRoles(ctx: ServiceContext, email: string, roles: Role[], actor: Actor): Promise<UsersTable> {
  const ordered = (['viewer', 'tester', 'manager', 'admin'] as const).filter((r) => roles.includes(r));
  return withAdminInvariant(ctx, async (trx, concerns) => {
    const user = await requireActiveUser(trx, email);
    concerns({ userIds: [user.id] });
    const now = ctx.clock().toISOString();
    await updateUser(trx, user.id, { roles: JSON.stringify(ordered), updated_at: now });
    await auditBy(ctx, trx, actor, {
      action: 'user.roles',
      targetType: 'user',
      targetId: user.id,
      details: { from: JSON.parse(user.roles), to: ordered },
    });
    return { ...user, roles: JSON.stringify(ordered), updated_at: now };
  });
}

/** Deletes a user: keys revoked and memberships dropped in the same transaction; created records keep their author id. */
export async function deleteUser(ctx: ServiceContext, email: string, actor: Actor): Promise<void> {
  await withAdminInvariant(ctx, async (trx, concerns) => {
    const user = await requireActiveUser(trx, email);
    concerns({ userIds: [user.id] });
    const now = ctx.clock().toISOString();
    await updateUser(trx, user.id, { deleted_at: now, updated_at: now, password_hash: null });
    await revokeKeysOfUser(trx, user.id, now);
    await deleteMembershipsOfUser(trx, user.id);
    await auditBy(ctx, trx, actor, {
      action: 'user.delete',
      targetType: 'user',
      targetId: user.id,
      details: { email: user.email },
    });
  });
}

/**
 * Sets the password of the user the caller addresses (themselves, or anyone for an admin). A web
 * session confirms first (SEC-2g): with the caller's own current password, or, when the caller has
 * none (single sign-on only), by a sign-in at most `FRESH_SIGN_IN_MS` old. Changing the password is
 * the strongest act a session can do: without the check, whoever holds a stolen session sets a new
 * password, then passes every other re-authentication with it, and the owner is locked out.
 */
export async function setUserPassword(
  ctx: ServiceContext,
  email: string,
  input: { password: string; currentPassword?: string },
  caller: Caller,
): Promise<void> {
  const user = await addressableUser(ctx, caller.principal, email);
  const { key } = caller.principal;
  let confirmedBy: 'api key' | 'password' | 'fresh sign-in' = 'api key';
  if (key.format === 'session') confirmedBy = await confirmSession(ctx, input.currentPassword, caller);
  const ownSession = key.format === 'session' && caller.principal.user.id === user.id ? key.id : undefined;
  await setPassword(ctx, user, input.password, actorOf(caller), ownSession, confirmedBy);
}

export interface KeyRequest {
  name: string;
  format: 'standard' | 'legacy' | 'session';
  /** An existing legacy value to import. */
  value?: string;
  scope?: 'full' | 'read';
  /** Undefined: the default lifetime; null: never expires (only where allowed). */
  expiresAt?: string | null;
}

/** When a new key expires: sessions after the session lifetime, others as asked within the configured bounds. */
function keyExpiry(ctx: ServiceContext, request: KeyRequest, now: Date): string | null {
  if (request.format === 'session') return new Date(now.getTime() + ctx.config.sessionMinutes * 60_000).toISOString();
  if (request.expiresAt === undefined) return new Date(now.getTime() + ctx.config.keyDefaultDays * DAY_MS).toISOString();
  if (request.expiresAt === null) {
    if (!ctx.config.allowNonExpiringKeys) {
      throw new AppError('INVALID_INPUT', '/body/expiresAt: keys must expire (ATTEST_ALLOW_NON_EXPIRING_KEYS is off)', {
        errors: [{ pointer: '/body/expiresAt', message: 'keys must expire on this instance' }],
      });
    }
    return null;
  }
  const maxExpiry = new Date(now.getTime() + ctx.config.keyMaxDays * DAY_MS);
  const at = new Date(request.expiresAt);
  if (Number.isNaN(at.getTime()) || at <= now || at > maxExpiry) {
    throw new AppError('INVALID_INPUT', `/body/expiresAt: must be in the future and within ${ctx.config.keyMaxDays} days`, {
      errors: [{ pointer: '/body/expiresAt', message: `must be in the future and within ${ctx.config.keyMaxDays} days` }],
    });
  }
  return at.toISOString();
}

/**
 * Creates a key for `user` and returns its row with the secret, which is never stored. Runs in its
 * own transaction, or in the caller's when `executor` is one.
 */
export async function createApiKey(
  ctx: ServiceContext,
  user: UsersTable,
  request: KeyRequest,
  actor: Actor,
  executor: Executor = ctx.db,
  /** A standard key chosen by the operator (first-start admin key). */
  presetSecret?: string,
): Promise<{ row: ApiKeysTable; secret: string }> {
  const now = ctx.clock();
  const expiresAt = keyExpiry(ctx, request, now);
  const secret =
    presetSecret ??
    (request.value ? request.value.toLowerCase() : request.format === 'legacy' ? randomUUID() : generateKey(request.format));
  const shape = classifyToken(secret);
  const row: ApiKeysTable = {
    id: randomUUID(),
    user_id: user.id,
    name: request.name,
    format: request.format,
    scope: request.scope ?? 'full',
    key_digest: keyDigest(secret, shape),
    email_digest: request.format === 'legacy' ? emailDigest(user.email) : null,
    display_hint: displayHint(secret, shape),
    created_at: now.toISOString(),
    created_by: actor.userId,
    expires_at: expiresAt,
    last_used_at: null,
    revoked_at: null,
  };
  // Known to the request log before any request can use it (a failed insert only masks a UUID more).
  if (row.format === 'legacy') ctx.legacyKeys.add(row.key_digest);
  try {
    await inTransaction(executor, async (trx) => {
      // Sessions are not counted against the limit and not audited: every login makes one.
      if (request.format !== 'session' && (await countActiveKeys(trx, user.id, now.toISOString())) >= ctx.config.maxKeysPerUser) {
        throw new AppError('TOO_MANY_KEYS', `A user may hold at most ${ctx.config.maxKeysPerUser} active keys; revoke one first.`);
      }
      await insertApiKey(trx, row);
      if (request.format !== 'session') {
        await auditBy(ctx, trx, actor, {
          action: request.value ? 'apikey.import' : 'apikey.create',
          targetType: 'apikey',
          targetId: row.id,
          details: { userId: user.id, format: row.format, scope: row.scope, expiresAt },
        });
      }
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw new AppError('ALREADY_EXISTS', 'This key value is already registered.');
    throw error;
  }
  return { row, secret };
}

export type CreateApiKeyInput = BodyOf<typeof createApiKeyEndpoint>;

/**
 * Creates a key for the user the caller addresses; only admins create or import old-format keys.
 * A web session must confirm with the caller's own password (SEC-2f): a session lasts hours, a key
 * up to `ATTEST_KEY_MAX_DAYS`, so whoever finds a signed-in browser or steals a session must not
 * turn it into a key that outlives it. An API key is not asked: its holder already holds a key
 * (one that may mint others, as any key could before), and a user may have no password at all.
 */
export async function issueApiKey(
  ctx: ServiceContext,
  email: string,
  input: CreateApiKeyInput,
  caller: Caller,
): Promise<{ row: ApiKeysTable; secret: string }> {
  const user = await addressableUser(ctx, caller.principal, email);
  const { name, format = 'standard', value, scope, expiresAt } = input;
  if ((format === 'legacy' || value !== undefined) && caller.principal.role !== 'admin') {
    throw new AppError('FORBIDDEN', 'Only admins create or import old-format keys.');
  }
  if (value !== undefined && format !== 'legacy') {
    throw new AppError('INVALID_INPUT', '/body/value: only old-format keys can be imported; set format to legacy', {
      errors: [{ pointer: '/body/value', message: 'only old-format keys can be imported; set format to legacy' }],
    });
  }
  if (caller.principal.key.format === 'session') await confirmPassword(ctx, input.password, caller);
  return createApiKey(ctx, user, { name, format, value, scope, expiresAt }, actorOf(caller));
}

/** The keys of the user the caller addresses; `unusedForDays` keeps those not used for that long. */
export async function listApiKeys(
  ctx: ServiceContext,
  email: string,
  filter: { includeRevoked?: boolean; unusedForDays?: number },
  page: PageRequest,
  caller: Principal,
): Promise<Page<ApiKeysTable>> {
  const user = await addressableUser(ctx, caller, email);
  const keyFilter: KeyFilter = { includeRevoked: filter.includeRevoked };
  if (filter.unusedForDays !== undefined) {
    keyFilter.unusedSince = new Date(ctx.clock().getTime() - filter.unusedForDays * DAY_MS).toISOString();
  }
  return listKeysOfUser(ctx.db, user.id, keyFilter, page);
}

/** Revokes a key of the user the caller addresses; a revoked or foreign key is a 404. */
export async function revokeApiKey(ctx: ServiceContext, email: string, keyId: string, caller: Caller): Promise<void> {
  const user = await addressableUser(ctx, caller.principal, email);
  const actor = actorOf(caller);
  await inAccessTransaction(ctx, async (trx, concerns) => {
    const key = await findKeyOfUser(trx, keyId, user.id);
    if (!key || key.revoked_at !== null) throw notFound('The key');
    concerns({ keyIds: [key.id] });
    await revokeKey(trx, key.id, ctx.clock().toISOString());
    await auditBy(ctx, trx, actor, {
      action: 'apikey.revoke',
      targetType: 'apikey',
      targetId: key.id,
      details: { userId: user.id, format: key.format },
    });
  });
}
