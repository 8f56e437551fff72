import type { Principal } from '../security/principal.ts';

/** Who does a change, as the audit log records it: no user for start-up work such as the first admin. */
export interface Actor {
  userId: string | null;
  requestId?: string;
  /** Where a change without a request came from (`cli` for `attest admin-key`); recorded in the audit details. */
  via?: 'cli';
}

/** The authenticated caller of a request: whom the self-or-admin rule checks, and whom the audit log names. */
export interface Caller {
  principal: Principal;
  requestId: string;
  /** The client address, which a password the caller confirms counts against (SEC-2b). */
  ip: string;
}
