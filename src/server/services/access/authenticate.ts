import type { ServiceContext } from '../../context.ts';
import { findKeyWithUserByDigest, touchKeyLastUsed } from '../../db/repositories/api-keys.ts';
import { projectIdsOfUser } from '../../db/repositories/users.ts';
import type { ApiKeysTable } from '../../db/types.ts';
import { AppError } from '../../errors.ts';
import { classifyToken, digestsMatch, emailDigest, KEY_PREFIXES, keyDigest } from '../../security/api-key.ts';
import type { Principal } from '../../security/principal.ts';
import { highestRole, parseRoles } from '../../security/roles.ts';
import { checkPassword } from './password-check.ts';
import { createApiKey } from './users.ts';

/**
 * The one line every failed key check answers: what a request needs, never which part of it was
 * wrong (AUTH-10), so it says the same for a missing, unknown, expired or mismatched key.
 */
export const AUTH_FAILURE_DETAIL =
  'Invalid or missing credentials. Send your API key in the service.api-token header; ' +
  "an old-format key (a UUID such as 3f2b8c1e-…) also needs its owner's e-mail address in the service.user header.";

/** The one 401 every authentication failure answers, whatever the cause (AUTH-10). */
export const unauthenticated = () =>
  new AppError('UNAUTHENTICATED', AUTH_FAILURE_DETAIL, {
    headers: { 'www-authenticate': 'ApiKey realm="attest", header="service.api-token"' },
  });

/**
 * Resolves the caller from the two headers of SPEC-1.3. A standard key with a bad layout or
 * checksum fails before any query. Every other failure runs exactly one lookup and one
 * constant-time comparison, so unknown keys, wrong e-mails and missing e-mails cost the same.
 * A key that succeeds goes into the credentials cache, where `knownPrincipal` finds it until access
 * changes (PERF-1); failures are never cached. The access hook asks the cache first.
 */
export async function authenticate(ctx: ServiceContext, token: string | undefined, userHeader: string | undefined): Promise<Principal> {
  if (!token) throw unauthenticated();
  const shape = classifyToken(token);
  if (shape === 'invalid' || (shape === 'legacy' && !ctx.config.legacyKeys)) throw unauthenticated();

  const digest = keyDigest(token, shape);
  const cacheKey = credentialsKey(digest, shape, userHeader);
  const ticket = ctx.credentials.ticket();
  const row = await findKeyWithUserByDigest(ctx.db, digest);

  const expectedFormat = shape === 'legacy' ? 'legacy' : shape === 'session' ? 'session' : 'standard';
  const usable = row !== undefined && row.format === expectedFormat;
  // Always compare, even without a row, so timing does not reveal whether the key exists.
  const confirmed =
    shape === 'legacy'
      ? digestsMatch(emailDigest(userHeader ?? ''), usable ? row.email_digest : null) && userHeader !== undefined
      : digestsMatch(digest, usable ? row.key_digest : null);
  const clock = ctx.clock();
  const now = clock.toISOString();
  if (!usable || !confirmed || row.revoked_at !== null || row.deleted_at !== null || (row.expires_at !== null && row.expires_at <= now)) {
    throw unauthenticated();
  }

  const roles = parseRoles(row.roles);
  const userRole = highestRole(roles);
  const projects: Principal['projects'] = userRole === 'admin' ? 'all' : new Set(await projectIdsOfUser(ctx.db, row.userId));
  recordKeyUse(ctx, row.keyId, clock);
  const principal: Principal = Object.freeze({
    user: Object.freeze({ id: row.userId, email: row.email, name: row.name, roles }),
    role: row.scope === 'read' ? 'viewer' : userRole,
    key: Object.freeze({ id: row.keyId, format: row.format, scope: row.scope, expiresAt: row.expires_at }),
    projects,
  });
  const keyExpiresAt = row.expires_at === null ? Number.POSITIVE_INFINITY : Date.parse(row.expires_at);
  ctx.credentials.store(cacheKey, principal, ticket, keyExpiresAt, clock.getTime());
  return principal;
}

/** An old-format key is only half the credential: the e-mail it came with is part of the entry. */
const credentialsKey = (digest: string, shape: ReturnType<typeof classifyToken>, userHeader: string | undefined) =>
  shape === 'legacy' ? `${digest}\n${userHeader ?? ''}` : digest;

/** The cached principal for this entry, unless it expired meanwhile; its use is recorded. */
function usableCached(ctx: ServiceContext, cacheKey: string): Principal | undefined {
  const now = ctx.clock();
  const cached = ctx.credentials.get(cacheKey, now.getTime());
  if (cached) recordKeyUse(ctx, cached.key.id, now);
  return cached;
}

/**
 * The caller, when the credentials cache already knows them (PERF-1): answered without waiting, so
 * the access hook finishes in the same tick. Undefined means "ask `authenticate`", never "refused".
 */
export function knownPrincipal(ctx: ServiceContext, token: string | undefined, userHeader: string | undefined): Principal | undefined {
  if (!token) return undefined;
  // The checksum needs no checking here: only digests of keys that passed every check are kept,
  // and no other token has the same SHA-256.
  const shape = token.startsWith(KEY_PREFIXES.standard) ? 'standard' : token.startsWith(KEY_PREFIXES.session) ? 'session' : 'legacy';
  if (shape === 'legacy' && !ctx.config.legacyKeys) return undefined;
  return usableCached(ctx, credentialsKey(keyDigest(token, shape), shape, userHeader));
}

const LAST_USED_INTERVAL_MS = 60_000;

/** Updates `last_used_at` at most once a minute per key, off the request's critical path. */
function recordKeyUse(ctx: ServiceContext, keyId: string, now: Date): void {
  const last = ctx.lastUsedWrites.get(keyId);
  if (last !== undefined && now.getTime() - last < LAST_USED_INTERVAL_MS) return;
  ctx.lastUsedWrites.set(keyId, now.getTime());
  setImmediate(() => {
    touchKeyLastUsed(ctx.db, keyId, now.toISOString()).catch((error: unknown) =>
      ctx.log.warn({ err: error, keyId }, 'could not record key use'),
    );
  });
}

/**
 * Exchanges an e-mail and password for a session key. The password is checked under the address's
 * and the account's throttles (`checkPassword`); failed keys do not count against either (a broken
 * CI job's bad key behind the same NAT must not lock its people out of the web login).
 */
export async function logIn(
  ctx: ServiceContext,
  credentials: { email: string; password: string },
  client: { ip: string; requestId: string },
): Promise<{ row: ApiKeysTable; secret: string }> {
  // Refused before the password is read: an instance that signs in through its provider only keeps no second door (SSO-6).
  if (!ctx.config.passwordLogin) {
    throw new AppError('PASSWORD_LOGIN_DISABLED', 'Password sign-in is turned off on this instance: sign in through single sign-on.');
  }
  const user = await checkPassword(ctx, credentials.email, credentials.password, client.ip);
  if (!user) throw unauthenticated();
  return createApiKey(ctx, user, { name: 'web session', format: 'session' }, { userId: user.id, requestId: client.requestId });
}
