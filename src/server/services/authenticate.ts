import { ROLES, type Role } from '../../api/endpoint.ts';
import type { AppContext, Principal } from '../context.ts';
import { AppError } from '../errors.ts';
import { classifyToken, digestsMatch, emailDigest, keyDigest } from '../security/api-key.ts';

export const AUTH_FAILURE_DETAIL = 'Invalid or missing credentials';

/** The one 401 every authentication failure answers, whatever the cause (RELIABILITY AUTH-10). */
export const unauthenticated = () =>
  new AppError('UNAUTHENTICATED', AUTH_FAILURE_DETAIL, {
    headers: { 'www-authenticate': 'ApiKey realm="attest", header="service.api-token"' },
  });

export function highestRole(roles: readonly string[]): Role {
  let best = 0;
  for (const role of roles) best = Math.max(best, ROLES.indexOf(role as Role));
  return ROLES[best] ?? 'viewer';
}

export function parseRoles(json: string): Role[] {
  const parsed: unknown = JSON.parse(json);
  return Array.isArray(parsed) ? ROLES.filter((r) => parsed.includes(r)) : [];
}

/**
 * Resolves the caller from the two headers of SPEC 1.3. A standard key with a bad layout or
 * checksum fails before any query. Every other failure runs exactly one lookup and one
 * constant-time comparison, so unknown keys, wrong e-mails and missing e-mails cost the same.
 */
export async function authenticate(ctx: AppContext, token: string | undefined, userHeader: string | undefined): Promise<Principal> {
  if (!token) throw unauthenticated();
  const shape = classifyToken(token);
  if (shape === 'invalid' || (shape === 'legacy' && !ctx.config.legacyKeys)) throw unauthenticated();

  const digest = keyDigest(token, shape);
  const row = await ctx.db
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

  const expectedFormat = shape === 'legacy' ? 'legacy' : shape === 'session' ? 'session' : 'standard';
  const usable = row !== undefined && row.format === expectedFormat;
  // Always compare, even without a row, so timing does not reveal whether the key exists.
  const confirmed =
    shape === 'legacy'
      ? digestsMatch(emailDigest(userHeader ?? ''), usable ? row.email_digest : null) && userHeader !== undefined
      : digestsMatch(digest, usable ? row.key_digest : null);
  const now = ctx.clock().toISOString();
  if (!usable || !confirmed || row.revoked_at !== null || row.deleted_at !== null || (row.expires_at !== null && row.expires_at <= now)) {
    throw unauthenticated();
  }

  const roles = parseRoles(row.roles);
  const userRole = highestRole(roles);
  let projects: Principal['projects'] = 'all';
  if (userRole !== 'admin') {
    const memberships = await ctx.db.selectFrom('project_members').where('user_id', '=', row.userId).select('project_id').execute();
    projects = new Set(memberships.map((m) => m.project_id));
  }
  recordKeyUse(ctx, row.keyId);
  return {
    user: { id: row.userId, email: row.email, name: row.name, roles },
    role: row.scope === 'read' ? 'viewer' : userRole,
    key: { id: row.keyId, format: row.format, scope: row.scope, expiresAt: row.expires_at },
    projects,
  };
}

const LAST_USED_INTERVAL_MS = 60_000;

/** Updates `last_used_at` at most once a minute per key, off the request's critical path. */
function recordKeyUse(ctx: AppContext, keyId: string): void {
  const now = ctx.clock();
  const last = ctx.lastUsedWrites.get(keyId);
  if (last !== undefined && now.getTime() - last < LAST_USED_INTERVAL_MS) return;
  ctx.lastUsedWrites.set(keyId, now.getTime());
  setImmediate(() => {
    ctx.db
      .updateTable('api_keys')
      .set({ last_used_at: now.toISOString() })
      .where('id', '=', keyId)
      .execute()
      .catch((error: unknown) => ctx.log.warn({ err: error, keyId }, 'could not record key use'));
  });
}

/** True when `role` is at least `required` in the role order. */
export function roleAtLeast(role: Role, required: Role): boolean {
  return ROLES.indexOf(role) >= ROLES.indexOf(required);
}

export function canSeeProject(principal: Principal, projectId: string): boolean {
  return principal.projects === 'all' || principal.projects.has(projectId);
}
