import type { ServiceContext } from '../../context.ts';
import { revokeSessionsOfUser } from '../../db/repositories/api-keys.ts';
import { findActiveUserByEmail, updateUser } from '../../db/repositories/users.ts';
import type { UsersTable } from '../../db/types.ts';
import { AppError } from '../../errors.ts';
import { normaliseEmail } from '../../security/api-key.ts';
import { hashPassword } from '../../security/password.ts';
import type { Actor, Caller } from '../actor.ts';
import { inAccessTransaction } from './access-transaction.ts';
import { auditBy } from './audit.ts';
import { checkPassword } from './password-check.ts';

// Setting a password (SEC-2e), and what a web session confirms a sensitive change with: its user's
// password (SEC-2f, SEC-2g), or a fresh sign-in for a user who has none.

/**
 * Sets a user's password and ends their web sessions (SEC-2e): whoever signed in with the old
 * password is out on their next request. `keepSessionId`, the session that made the change when
 * the user changed their own password in the web interface, stays; their API keys stay too (keys
 * are separate credentials, revoked one by one).
 */
export async function setPassword(
  ctx: ServiceContext,
  user: UsersTable,
  password: string,
  actor: Actor,
  keepSessionId?: string,
  confirmedBy?: 'api key' | 'password' | 'fresh sign-in',
): Promise<void> {
  const hash = await hashPassword(password);
  await inAccessTransaction(ctx, async (trx, concerns) => {
    concerns({ userIds: [user.id] });
    const now = ctx.clock().toISOString();
    await updateUser(trx, user.id, { password_hash: hash, updated_at: now });
    const endedSessions = await revokeSessionsOfUser(trx, user.id, now, keepSessionId);
    await auditBy(ctx, trx, actor, {
      action: 'user.password',
      targetType: 'user',
      targetId: user.id,
      details: { endedSessions, ...(confirmedBy ? { confirmedBy } : {}) },
    });
  });
}

/** How long after a sign-in a session of a user without a password may still set one (SEC-2g). */
export const FRESH_SIGN_IN_MS = 10 * 60_000;

/** A web session's confirmation of a password change: its user's password, or a fresh sign-in for a user without one. */
export async function confirmSession(
  ctx: ServiceContext,
  currentPassword: string | undefined,
  caller: Caller,
): Promise<'password' | 'fresh sign-in'> {
  const self = await findActiveUserByEmail(ctx.db, normaliseEmail(caller.principal.user.email));
  if (!self) throw new AppError('REAUTHENTICATION_REQUIRED', 'Your account is gone: sign in again.');
  if (self.password_hash !== null) {
    if (currentPassword === undefined) {
      throw new AppError(
        'REAUTHENTICATION_REQUIRED',
        'Changing a password through a web session needs your current password: send it in `currentPassword`.',
      );
    }
    const confirmed = await checkPassword(ctx, self.email, currentPassword, caller.ip);
    if (confirmed?.id !== self.id) {
      throw new AppError('REAUTHENTICATION_REQUIRED', 'The current password is not right: send your own password in `currentPassword`.');
    }
    return 'password';
  }
  // No password to confirm with: the session itself must be a fresh sign-in (its expiry is its start plus the session lifetime).
  const expiresAt = caller.principal.key.expiresAt;
  const signedInAt = expiresAt === null ? 0 : Date.parse(expiresAt) - ctx.config.sessionMinutes * 60_000;
  if (ctx.clock().getTime() - signedInAt > FRESH_SIGN_IN_MS) {
    throw new AppError(
      'REAUTHENTICATION_REQUIRED',
      `Your account has no password yet: sign in again through single sign-on, then set one within ${FRESH_SIGN_IN_MS / 60_000} minutes.`,
    );
  }
  return 'fresh sign-in';
}

/** Checks the password a web session confirms with, as a login would be (SEC-2d), else 403 (or 429 when throttled). */
export async function confirmPassword(ctx: ServiceContext, password: string | undefined, caller: Caller): Promise<void> {
  if (password === undefined) {
    throw new AppError('REAUTHENTICATION_REQUIRED', 'A key created through a web session needs your password: send it in `password`.');
  }
  const confirmed = await checkPassword(ctx, caller.principal.user.email, password, caller.ip);
  if (confirmed?.id !== caller.principal.user.id) {
    throw new AppError('REAUTHENTICATION_REQUIRED', 'The password is not right: send your own password in `password`.');
  }
}
