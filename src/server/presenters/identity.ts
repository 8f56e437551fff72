import type { Static } from 'typebox';
import type { Me } from '../../api/v1/meta.ts';
import type { Member, Project, ProjectUsage } from '../../api/v1/projects.ts';
import type { ApiKey, AuditEntry, User } from '../../api/v1/users.ts';
import type { ApiKeysTable, AuditLogTable, ProjectMembersTable, ProjectWithUsage, UsersTable } from '../db/types.ts';
import type { Principal } from '../security/principal.ts';
import { parseRoles } from '../security/roles.ts';
import type { ProjectAnswer } from '../services/records/projects.ts';
import { triageSettingsOf } from '../services/triage/settings.ts';

export function presentUser(row: UsersTable): Static<typeof User> {
  return {
    id: row.id,
    email: row.email,
    name: row.name,
    roles: parseRoles(row.roles),
    hasPassword: row.password_hash !== null,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export function presentApiKey(row: ApiKeysTable): Static<typeof ApiKey> {
  return {
    id: row.id,
    name: row.name,
    format: row.format,
    scope: row.scope,
    hint: row.display_hint,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    lastUsedAt: row.last_used_at,
    revokedAt: row.revoked_at,
  };
}

export function presentProject(row: ProjectAnswer): Static<typeof Project> {
  return {
    id: row.id,
    key: row.key,
    name: row.name,
    description: row.description,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    retention: row.retention === null ? null : JSON.parse(row.retention),
    usage: presentUsage(row),
    triage: triageSettingsOf(row),
    defaultBranch: row.defaultBranch.name,
    defaultBranchInferred: row.defaultBranch.inferred,
  };
}

/** A project's counters and quota (RET-4, RET-5). */
export function presentUsage(row: ProjectWithUsage): Static<typeof ProjectUsage> {
  const { usage } = row;
  return {
    runs: Number(usage.runs),
    artifacts: Number(usage.artifacts),
    logicalBytes: Number(usage.logical_bytes),
    storedBytes: Number(usage.stored_bytes),
    quotaBytes: row.quota_bytes === null ? null : Number(row.quota_bytes),
  };
}

/** A member row; the e-mail goes out only when `showEmail` says the caller manages membership (ERR-4). */
export function presentMember(
  row: Pick<ProjectMembersTable, 'user_id' | 'added_at'> & Pick<UsersTable, 'email' | 'name'>,
  showEmail: boolean,
): Static<typeof Member> {
  return { userId: row.user_id, ...(showEmail ? { email: row.email } : {}), name: row.name, addedAt: row.added_at };
}

export function presentAuditEntry(row: AuditLogTable): Static<typeof AuditEntry> {
  return {
    id: row.id,
    at: row.at,
    actorUserId: row.actor_user_id,
    action: row.action,
    targetType: row.target_type,
    targetId: row.target_id,
    details: JSON.parse(row.details) as Record<string, unknown>,
    requestId: row.request_id,
  };
}

/** The caller as `/me` shows them, with the projects they are a member of. */
export function presentMe(principal: Principal, projectIds: string[]): Static<typeof Me> {
  return {
    id: principal.user.id,
    email: principal.user.email,
    name: principal.user.name,
    roles: principal.user.roles,
    role: principal.role,
    key: principal.key,
    projectIds,
  };
}
