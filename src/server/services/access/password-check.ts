import type { ServiceContext } from '../../context.ts';
import { findActiveUserByEmail } from '../../db/repositories/users.ts';
import type { UsersTable } from '../../db/types.ts';
import { AppError } from '../../errors.ts';
import { emailDigest, normaliseEmail } from '../../security/api-key.ts';
import { verifyPassword } from '../../security/password.ts';

/**
 * Checks a password for an account under both throttles, and answers the user when it is right,
 * or undefined when the e-mail, the password or both are wrong (callers answer each the same way).
 * Every password check goes through here: the login, and the password a web session confirms a
 * new key with, so neither is a way around the other's budget.
 *
 * - The address's failure budget (SEC-2b) and the account's backoff (SEC-2d) refuse with 429
 *   before the password is checked, so a throttled answer says nothing about the password.
 * - Every attempt is counted before its password is checked, each count one atomic step with the
 *   check of its budget, and taken back when the password is right (or when the attempt is refused):
 *   so however many attempts arrive at once, no more than the budget are ever checked.
 * - A client that signed in to this account from this address lately skips both (SEC-2d): another
 *   caller's failures at the same address, or on the same account from elsewhere, do not lock out
 *   the person who signs in there, while the pair's own failures end that pass.
 */
export async function checkPassword(ctx: ServiceContext, email: string, password: string, ip: string): Promise<UsersTable | undefined> {
  const account = emailDigest(email);
  const addressSubject = `login:${ip}`;
  const now = ctx.clock().getTime();
  const known = await ctx.logins.claimKnownPass(account, ip, now);
  if (!known) {
    const addressWait = await ctx.authFailures.recordFailure(addressSubject);
    const accountWait = addressWait > 0 ? 0 : await ctx.logins.beginAttempt(account, now, true);
    if (addressWait > 0 || accountWait > 0) {
      // Refused unchecked: the address's count is taken back, as the account's was never made.
      await ctx.authFailures.forgive(addressSubject);
      throw new AppError('RATE_LIMITED', 'Too many failed logins; retry after the time in Retry-After.', {
        headers: { 'retry-after': String(Math.max(addressWait, accountWait)) },
      });
    }
  } else {
    await ctx.logins.beginAttempt(account, now, false);
  }
  const user = await findActiveUserByEmail(ctx.db, normaliseEmail(email));
  // Verified even without a user, so the answer takes as long for unknown e-mails.
  const valid = await verifyPassword(password, user?.password_hash);
  // A failure stays counted where it was counted before the check.
  if (!user || !valid) return undefined;
  await Promise.all([ctx.logins.recordSuccess(account, ip, now), known ? undefined : ctx.authFailures.forgive(addressSubject)]);
  return user;
}
