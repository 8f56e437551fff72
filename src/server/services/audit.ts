import { randomUUID } from 'node:crypto';
import type { AppContext } from '../context.ts';
import type { Executor } from '../db/types.ts';

export type AuditAction =
  | 'user.create'
  | 'user.delete'
  | 'user.roles'
  | 'user.password'
  | 'apikey.create'
  | 'apikey.import'
  | 'apikey.revoke'
  | 'project.delete'
  | 'project.member.add'
  | 'project.member.remove';

/** Appends an audit entry inside the caller's transaction, so the change and its record commit together. */
export async function audit(
  ctx: AppContext,
  executor: Executor,
  entry: {
    actorUserId: string | null;
    action: AuditAction;
    targetType: string;
    targetId: string;
    details?: Record<string, unknown>;
    requestId?: string;
  },
): Promise<void> {
  await executor
    .insertInto('audit_log')
    .values({
      id: randomUUID(),
      at: ctx.clock().toISOString(),
      actor_user_id: entry.actorUserId,
      action: entry.action,
      target_type: entry.targetType,
      target_id: entry.targetId,
      details: JSON.stringify(entry.details ?? {}),
      request_id: entry.requestId ?? null,
    })
    .execute();
}
