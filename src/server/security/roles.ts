import { ROLES, type Role } from '../../api/endpoint.ts';
import type { Principal } from './principal.ts';

/** The highest of a user's roles (viewer when none is known). */
export function highestRole(roles: readonly string[]): Role {
  let best = 0;
  for (const role of roles) best = Math.max(best, ROLES.indexOf(role as Role));
  return ROLES[best] ?? 'viewer';
}

/** A user's stored roles (a JSON array), in role order, unknown names dropped. */
export function parseRoles(json: string): Role[] {
  const parsed: unknown = JSON.parse(json);
  return Array.isArray(parsed) ? ROLES.filter((r) => parsed.includes(r)) : [];
}

/** True when `role` is at least `required` in the role order. */
export function roleAtLeast(role: Role, required: Role): boolean {
  return ROLES.indexOf(role) >= ROLES.indexOf(required);
}

/** Whether the caller may see a project: admins see all, everyone else their memberships (SEC-1a). */
export function canSeeProject(principal: Principal, projectId: string): boolean {
  return principal.projects === 'all' || principal.projects.has(projectId);
}
