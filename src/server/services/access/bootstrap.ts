import type { ServiceContext } from '../../context.ts';
import { anyUserExists } from '../../db/repositories/users.ts';
import { classifyToken } from '../../security/api-key.ts';
import { type Actor, createApiKey, createUser, findActiveUser, setRoles } from './users.ts';

const DAY_MS = 86_400_000;

/** An admin key the operator must store: what `adminKeyBanner` prints and `attest admin-key --json` returns. */
export interface MintedKey {
  email: string;
  secret: string;
  format: 'standard' | 'legacy';
  expiresAt: string | null;
}

/**
 * The lines that hand a new admin key to the operator, once. A standard key is sent alone, so only
 * its header is shown; an old-format key also needs `service.user` (SPEC 1.3).
 */
export function adminKeyBanner(key: MintedKey, heading: string): string {
  return [
    '',
    `Attest: ${heading}. This key is shown once; store it now.`,
    key.expiresAt
      ? `It expires at ${key.expiresAt}; before then, create the next one (or run \`attest admin-key --email ${key.email}\` on the server).`
      : 'It never expires.',
    ...(key.format === 'legacy' ? [`  service.user:      ${key.email}`] : []),
    `  service.api-token: ${key.secret}`,
    '',
  ].join('\n');
}

/**
 * First start with an empty database, run once the server listens: create the admin named by
 * ATTEST_ADMIN_EMAIL with the key in ATTEST_ADMIN_API_KEY (standard or old format), or generate a
 * key and print it once. No default credentials exist (SEC-8b).
 */
export async function bootstrapAdmin(ctx: ServiceContext, announce: (message: string) => void): Promise<void> {
  if (await anyUserExists(ctx.db)) return;
  const email = ctx.config.adminEmail ?? 'admin@attest.local';
  const given = ctx.config.adminApiKey;
  const shape = given ? classifyToken(given) : 'standard';
  if (given && (shape === 'invalid' || shape === 'session')) {
    throw new Error('ATTEST_ADMIN_API_KEY must be a standard key (atk_…, with a valid checksum) or an old-format UUID key');
  }
  const user = await createUser(ctx, { email, name: 'Administrator', roles: ['admin'] }, { userId: null });
  const format = shape === 'legacy' ? 'legacy' : 'standard';
  const { row, secret } = await createApiKey(
    ctx,
    user,
    {
      name: 'bootstrap',
      format,
      value: shape === 'legacy' ? given : undefined,
      expiresAt: new Date(ctx.clock().getTime() + ctx.config.keyMaxDays * DAY_MS).toISOString(),
    },
    { userId: null },
    ctx.db,
    given && shape === 'standard' ? given : undefined,
  );
  // The key is acknowledged (printed, or accepted) only once it is on disk (DUR-14).
  await ctx.database.durable();
  if (given) {
    ctx.log.info({ email }, 'created the first admin from ATTEST_ADMIN_EMAIL and ATTEST_ADMIN_API_KEY');
  } else {
    announce(adminKeyBanner({ email: user.email, secret, format, expiresAt: row.expires_at }, `created the first admin, ${user.email}`));
  }
}

/**
 * Recovery (`attest admin-key`): a new admin key for `email`, made without a request. The user is
 * created as an admin when missing; an existing user gains the admin role beside their others.
 * Every change is audited with no actor and `via: cli`. The key lives as long as the first admin's
 * (ATTEST_KEY_MAX_DAYS).
 */
export async function mintAdminKey(
  ctx: ServiceContext,
  email: string,
  format: 'standard' | 'legacy',
): Promise<MintedKey & { created: boolean; promoted: boolean }> {
  const actor: Actor = { userId: null, via: 'cli' };
  let user = await findActiveUser(ctx.db, email);
  let created = false;
  let promoted = false;
  if (!user) {
    user = await createUser(ctx, { email, name: 'Administrator', roles: ['admin'] }, actor);
    created = true;
  } else {
    const roles = JSON.parse(user.roles) as ('viewer' | 'tester' | 'manager' | 'admin')[];
    if (!roles.includes('admin')) {
      user = await setRoles(ctx, user.email, [...roles, 'admin'], actor);
      promoted = true;
    }
  }
  const expiresAt = new Date(ctx.clock().getTime() + ctx.config.keyMaxDays * DAY_MS).toISOString();
  const { row, secret } = await createApiKey(ctx, user, { name: 'admin-key (CLI)', format, expiresAt }, actor);
  return { email: user.email, secret, format, expiresAt: row.expires_at, created, promoted };
}
