import type { AppContext } from '../context.ts';
import { anyUserExists } from '../db/repositories/users.ts';
import { classifyToken } from '../security/api-key.ts';
import { createApiKey, createUser } from './users.ts';

/**
 * First start with an empty database: create the admin named by ATTEST_ADMIN_EMAIL with the key in
 * ATTEST_ADMIN_API_KEY (standard or old format), or generate a key and print it once. No default
 * credentials exist (SEC-8b).
 */
export async function bootstrapAdmin(ctx: AppContext, announce: (message: string) => void): Promise<void> {
  if (await anyUserExists(ctx.db)) return;
  const email = ctx.config.adminEmail ?? 'admin@attest.local';
  const given = ctx.config.adminApiKey;
  const shape = given ? classifyToken(given) : 'standard';
  if (given && (shape === 'invalid' || shape === 'session')) {
    throw new Error('ATTEST_ADMIN_API_KEY must be a standard key (atk_…, with a valid checksum) or an old-format UUID key');
  }
  const user = await createUser(ctx, { email, name: 'Administrator', roles: ['admin'] }, { userId: null });
  const { secret } = await createApiKey(
    ctx,
    user,
    {
      name: 'bootstrap',
      format: shape === 'legacy' ? 'legacy' : 'standard',
      value: shape === 'legacy' ? given : undefined,
      expiresAt: new Date(ctx.clock().getTime() + ctx.config.keyMaxDays * 86_400_000).toISOString(),
    },
    { userId: null },
    ctx.db,
    given && shape === 'standard' ? given : undefined,
  );
  if (given) {
    ctx.log.info({ email }, 'created the first admin from ATTEST_ADMIN_EMAIL and ATTEST_ADMIN_API_KEY');
  } else {
    announce(
      [
        '',
        'Attest: created the first admin. This key is shown once; store it now.',
        `  service.user:      ${email}`,
        `  service.api-token: ${secret}`,
        '',
      ].join('\n'),
    );
  }
}
