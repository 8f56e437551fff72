import { keysetPage, type Page, type PageRequest } from '../pagination.ts';
import type { AuditLogTable, Executor } from '../types.ts';

// The audit log: append-only, read by admins.

export async function insertAuditEntry(executor: Executor, entry: AuditLogTable): Promise<void> {
  await executor.insertInto('audit_log').values(entry).execute();
}

export interface AuditFilter {
  action?: string;
  targetId?: string;
}

/** Audit entries, newest first, narrowed by every filter given. */
export async function listAuditLog(executor: Executor, filter: AuditFilter, page: PageRequest): Promise<Page<AuditLogTable>> {
  let query = executor.selectFrom('audit_log').selectAll();
  if (filter.action) query = query.where('action', '=', filter.action);
  if (filter.targetId) query = query.where('target_id', '=', filter.targetId);
  return keysetPage(query, { columns: ['at', 'id'], direction: 'desc' }, page);
}
