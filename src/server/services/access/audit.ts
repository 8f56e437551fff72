import { randomUUID } from 'node:crypto';
import type { ServiceContext } from '../../context.ts';
import type { Page, PageRequest } from '../../db/pagination.ts';
import { type AuditFilter, insertAuditEntry, listAuditLog as listAuditRows } from '../../db/repositories/audit.ts';
import type { AuditLogTable, Executor } from '../../db/types.ts';
import type { Actor } from '../actor.ts';

export type AuditAction =
  | 'user.create'
  | 'user.delete'
  | 'user.roles'
  | 'user.password'
  | 'apikey.create'
  | 'apikey.import'
  | 'apikey.revoke'
  | 'project.delete'
  | 'project.quota'
  | 'project.triage'
  | 'project.default-branch'
  | 'failure-group.triage'
  | 'failure-rules.set'
  | 'forge.set'
  | 'forge.delete'
  | 'issue-tracker.set'
  | 'issue-tracker.delete'
  | 'issue.create'
  | 'project.member.add'
  | 'project.member.remove'
  | 'run.delete'
  | 'job.delete'
  | 'test.create'
  | 'test.update'
  | 'test.delete'
  | 'test.quarantine'
  | 'test.release'
  | 'test.fix-attempt'
  | 'test.fixed'
  | 'test.fix-failed'
  | 'test.disable'
  | 'test.enable'
  | 'retention.sweep'
  | 'webhook.create'
  | 'webhook.update'
  | 'webhook.delete'
  | 'webhook.disable';

/** Appends an audit entry inside the caller's transaction, so the change and its record commit together. */
export async function audit(
  ctx: ServiceContext,
  trx: Executor,
  entry: {
    actorUserId: string | null;
    action: AuditAction;
    targetType: string;
    targetId: string;
    details?: Record<string, unknown>;
    requestId?: string;
    /** Set for changes made outside a request (`attest admin-key`): added to the details as `via`. */
    via?: string;
  },
): Promise<void> {
  await insertAuditEntry(trx, {
    id: randomUUID(),
    at: ctx.clock().toISOString(),
    actor_user_id: entry.actorUserId,
    action: entry.action,
    target_type: entry.targetType,
    target_id: entry.targetId,
    details: JSON.stringify(entry.via ? { ...entry.details, via: entry.via } : (entry.details ?? {})),
    request_id: entry.requestId ?? null,
  });
}

/** What a change did to what, as the audit log records it; who made it comes from the actor (`auditBy`). */
export interface AuditedChange {
  action: AuditAction;
  targetType: string;
  targetId: string;
  details?: Record<string, unknown>;
}

/**
 * Audits a change `actor` made, inside the caller's transaction: the entry names their user, their
 * request and, for a change they did not ask for in so many words, what made it (`via`).
 */
export function auditBy(ctx: ServiceContext, trx: Executor, actor: Actor, change: AuditedChange): Promise<void> {
  return audit(ctx, trx, { ...change, actorUserId: actor.userId, requestId: actor.requestId, via: actor.via });
}

/** Audits a change `actor` made to a project's settings, members or integrations: the project is its target. */
export function auditProjectChange(
  ctx: ServiceContext,
  trx: Executor,
  actor: Actor,
  projectId: string,
  action: AuditAction,
  details?: Record<string, unknown>,
): Promise<void> {
  return auditBy(ctx, trx, actor, { action, targetType: 'project', targetId: projectId, details });
}

export const listAuditLog = (ctx: ServiceContext, filter: AuditFilter, page: PageRequest): Promise<Page<AuditLogTable>> =>
  listAuditRows(ctx.db, filter, page);
