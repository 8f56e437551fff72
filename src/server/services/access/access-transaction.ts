import { type AccessChanged, changingAccess } from '../../changes.ts';
import type { ServiceContext } from '../../context.ts';
import { inTransaction } from '../../db/repositories/transaction.ts';
import type { Executor } from '../../db/types.ts';

/**
 * Runs `write` in one transaction that may change who can do what, announced as `changingAccess`
 * says: once it has committed, before it is acknowledged, for the keys and users `write` names
 * through `concerns` (everyone when it names none, or when it fails).
 */
export function inAccessTransaction<T>(
  ctx: ServiceContext,
  write: (trx: Executor, concerns: (affected: AccessChanged) => void) => Promise<T>,
): Promise<T> {
  return changingAccess(ctx.changes, (concerns) => inTransaction(ctx.db, (trx) => write(trx, concerns)));
}
