import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { Role } from '../../api/endpoint.ts';
import type { AppContext } from '../context.ts';
import { isUniqueViolation } from '../db/errors.ts';
import type { ApiKeysTable, Executor, UsersTable } from '../db/types.ts';
import { AppError, notFound } from '../errors.ts';
import { classifyToken, displayHint, emailDigest, generateKey, keyDigest, normaliseEmail } from '../security/api-key.ts';
import { hashPassword } from '../security/password.ts';
import { audit } from './audit.ts';

export interface Actor {
  userId: string | null;
  requestId?: string;
}

const DAY_MS = 24 * 60 * 60 * 1000;

/** Finds an active (not deleted) user by e-mail, case-insensitively. */
export async function findActiveUser(executor: Executor, email: string): Promise<UsersTable | undefined> {
  return executor
    .selectFrom('users')
    .selectAll()
    .where('email', '=', normaliseEmail(email))
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
}

export async function requireActiveUser(executor: Executor, email: string): Promise<UsersTable> {
  const user = await findActiveUser(executor, email);
  if (!user) throw notFound('The user');
  return user;
}

export async function createUser(
  ctx: AppContext,
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
    await ctx.db.transaction().execute(async (trx) => {
      await trx.insertInto('users').values(row).execute();
      await audit(ctx, trx, {
        actorUserId: actor.userId,
        action: 'user.create',
        targetType: 'user',
        targetId: row.id,
        details: { email: row.email, roles: input.roles ?? ['viewer'] },
        requestId: actor.requestId,
      });
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw new AppError('ALREADY_EXISTS', 'A user with this e-mail already exists.');
    throw error;
  }
  return row;
}

/**
 * Runs `change` in a transaction after locking the admin set, and refuses (409) when it would
 * leave no active admin. Locking makes two concurrent demotions of the last two admins serialise:
 * SQLite transactions are serial already; PostgreSQL takes row locks on every admin.
 */
async function withAdminInvariant(ctx: AppContext, change: (trx: Executor) => Promise<void>): Promise<void> {
  await ctx.db.transaction().execute(async (trx) => {
    if (ctx.dialect === 'postgres') {
      await sql`SELECT id FROM users WHERE deleted_at IS NULL AND roles LIKE '%"admin"%' ORDER BY id FOR UPDATE`.execute(trx);
    }
    await change(trx);
    const admins = await trx
      .selectFrom('users')
      .select((eb) => eb.fn.countAll<number>().as('count'))
      .where('deleted_at', 'is', null)
      .where('roles', 'like', '%"admin"%')
      .executeTakeFirstOrThrow();
    if (Number(admins.count) === 0) throw new AppError('LAST_ADMIN', 'At least one admin must remain; promote another user first.');
  });
}

export async function setRoles(ctx: AppContext, email: string, roles: Role[], actor: Actor): Promise<UsersTable> {
  const ordered = (['viewer', 'tester', 'manager', 'admin'] as const).filter((r) => roles.includes(r));
  let updated: UsersTable | undefined;
  await withAdminInvariant(ctx, async (trx) => {
    const user = await requireActiveUser(trx, email);
    const now = ctx.clock().toISOString();
    await trx
      .updateTable('users')
      .set({ roles: JSON.stringify(ordered), updated_at: now })
      .where('id', '=', user.id)
      .execute();
    await audit(ctx, trx, {
      actorUserId: actor.userId,
      action: 'user.roles',
      targetType: 'user',
      targetId: user.id,
      details: { from: JSON.parse(user.roles), to: ordered },
      requestId: actor.requestId,
    });
    updated = { ...user, roles: JSON.stringify(ordered), updated_at: now };
  });
  return updated as UsersTable;
}

/** Deletes a user: keys revoked and memberships dropped in the same transaction; created records keep their author id. */
export async function deleteUser(ctx: AppContext, email: string, actor: Actor): Promise<void> {
  await withAdminInvariant(ctx, async (trx) => {
    const user = await requireActiveUser(trx, email);
    const now = ctx.clock().toISOString();
    await trx.updateTable('users').set({ deleted_at: now, updated_at: now, password_hash: null }).where('id', '=', user.id).execute();
    await trx.updateTable('api_keys').set({ revoked_at: now }).where('user_id', '=', user.id).where('revoked_at', 'is', null).execute();
    await trx.deleteFrom('project_members').where('user_id', '=', user.id).execute();
    await audit(ctx, trx, {
      actorUserId: actor.userId,
      action: 'user.delete',
      targetType: 'user',
      targetId: user.id,
      details: { email: user.email },
      requestId: actor.requestId,
    });
  });
}

export async function setPassword(ctx: AppContext, user: UsersTable, password: string, actor: Actor): Promise<void> {
  const hash = await hashPassword(password);
  await ctx.db.transaction().execute(async (trx) => {
    await trx.updateTable('users').set({ password_hash: hash, updated_at: ctx.clock().toISOString() }).where('id', '=', user.id).execute();
    await audit(ctx, trx, {
      actorUserId: actor.userId,
      action: 'user.password',
      targetType: 'user',
      targetId: user.id,
      requestId: actor.requestId,
    });
  });
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

/** Creates a key for `user` and returns its row with the secret, which is never stored. */
export async function createApiKey(
  ctx: AppContext,
  user: UsersTable,
  request: KeyRequest,
  actor: Actor,
  executor: Executor = ctx.db,
  /** A standard key chosen by the operator (first-start admin key). */
  presetSecret?: string,
): Promise<{ row: ApiKeysTable; secret: string }> {
  const now = ctx.clock();
  const maxExpiry = new Date(now.getTime() + ctx.config.keyMaxDays * DAY_MS);
  let expiresAt: string | null;
  if (request.format === 'session') {
    expiresAt = new Date(now.getTime() + ctx.config.sessionMinutes * 60_000).toISOString();
  } else if (request.expiresAt === undefined) {
    expiresAt = new Date(now.getTime() + ctx.config.keyDefaultDays * DAY_MS).toISOString();
  } else if (request.expiresAt === null) {
    if (!ctx.config.allowNonExpiringKeys) {
      throw new AppError('INVALID_INPUT', '/body/expiresAt: keys must expire (ATTEST_ALLOW_NON_EXPIRING_KEYS is off)', {
        errors: [{ pointer: '/body/expiresAt', message: 'keys must expire on this instance' }],
      });
    }
    expiresAt = null;
  } else {
    const at = new Date(request.expiresAt);
    if (Number.isNaN(at.getTime()) || at <= now || at > maxExpiry) {
      throw new AppError('INVALID_INPUT', `/body/expiresAt: must be in the future and within ${ctx.config.keyMaxDays} days`, {
        errors: [{ pointer: '/body/expiresAt', message: `must be in the future and within ${ctx.config.keyMaxDays} days` }],
      });
    }
    expiresAt = at.toISOString();
  }

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
  const insert = async (trx: Executor) => {
    if (request.format !== 'session') {
      const active = await trx
        .selectFrom('api_keys')
        .select((eb) => eb.fn.countAll<number>().as('count'))
        .where('user_id', '=', user.id)
        .where('revoked_at', 'is', null)
        .where('format', '!=', 'session')
        .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now.toISOString())]))
        .executeTakeFirstOrThrow();
      if (Number(active.count) >= ctx.config.maxKeysPerUser) {
        throw new AppError('TOO_MANY_KEYS', `A user may hold at most ${ctx.config.maxKeysPerUser} active keys; revoke one first.`);
      }
    }
    await trx.insertInto('api_keys').values(row).execute();
    if (request.format !== 'session') {
      await audit(ctx, trx, {
        actorUserId: actor.userId,
        action: request.value ? 'apikey.import' : 'apikey.create',
        targetType: 'apikey',
        targetId: row.id,
        details: { userId: user.id, format: row.format, scope: row.scope, expiresAt },
        requestId: actor.requestId,
      });
    }
  };
  try {
    if (executor === ctx.db) await ctx.db.transaction().execute(insert);
    else await insert(executor);
  } catch (error) {
    if (isUniqueViolation(error)) throw new AppError('ALREADY_EXISTS', 'This key value is already registered.');
    throw error;
  }
  return { row, secret };
}

export async function revokeApiKey(ctx: AppContext, user: UsersTable, keyId: string, actor: Actor): Promise<void> {
  await ctx.db.transaction().execute(async (trx) => {
    const key = await trx.selectFrom('api_keys').selectAll().where('id', '=', keyId).where('user_id', '=', user.id).executeTakeFirst();
    if (!key || key.revoked_at !== null) throw notFound('The key');
    await trx.updateTable('api_keys').set({ revoked_at: ctx.clock().toISOString() }).where('id', '=', key.id).execute();
    await audit(ctx, trx, {
      actorUserId: actor.userId,
      action: 'apikey.revoke',
      targetType: 'apikey',
      targetId: key.id,
      details: { userId: user.id, format: key.format },
      requestId: actor.requestId,
    });
  });
}
