import type { Principal } from '../security/principal.ts';

/** Who does a change, as the audit log records it: no user for start-up work such as the first admin. */
export interface Actor {
  userId: string | null;
  requestId?: string;
  /**
   * What made a change its user did not ask for in so many words, recorded in the audit details:
   * `cli` for `attest admin-key` (no request), `sso` for a sign-in that creates the user (SSO-3) or
   * follows their provider's groups (SSO-4, SSO-5).
   */
  via?: 'cli' | 'sso';
}

/** A user who acts, as the changes that record their author in the row (`created_by`, `updated_by`) need one. */
export type UserActor = Actor & { userId: string };

/** The authenticated caller of a request: whom the self-or-admin rule checks, and whom the audit log names. */
export interface Caller {
  principal: Principal;
  requestId: string;
  /** The client address, which a password the caller confirms counts against (SEC-2b). */
  ip: string;
}
