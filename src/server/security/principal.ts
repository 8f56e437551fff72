import type { Role } from '../../api/endpoint.ts';

/** The authenticated caller of a request. */
export interface Principal {
  user: { id: string; email: string; name: string; roles: Role[] };
  /** The effective role: the user's highest role, capped at viewer for a read-only key. */
  role: Role;
  key: { id: string; format: 'standard' | 'legacy' | 'session'; scope: 'full' | 'read'; expiresAt: string | null };
  /** Projects the caller may see: every project for admins, else their memberships. */
  projects: 'all' | Set<string>;
}
