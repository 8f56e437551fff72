import type { Executor, SigningKeysTable } from '../types.ts';

/** The instance's key for one purpose (migration 0034 made it): its 32 bytes. */
export async function findSigningKey(executor: Executor, purpose: SigningKeysTable['purpose']): Promise<Buffer> {
  const row = await executor.selectFrom('signing_keys').select('secret').where('purpose', '=', purpose).executeTakeFirstOrThrow();
  return Buffer.from(row.secret, 'base64url');
}
