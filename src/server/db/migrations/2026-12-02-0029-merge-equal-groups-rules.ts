// Frozen in time with migration 2026-12-02-0029-merge-equal-groups, which alone uses it: the
// normaliser as it was that day, after a one-line JUnit message the body restates came to be read
// from the body (TRIAGE-2), built on the rules frozen that day (src/server/failures/rules-2026-12-02/,
// never edited), so that what the migration did never changes with the live normaliser. Only what
// makes a fingerprint is read (a failure's category and action are not part of it). Never edited
// once shipped; no other application imports.

import { failureStatement } from '../../failures/rules-2026-12-02/statements.ts';

/** A failure as the normaliser of this migration's day reads it (no project roots: recording gives none). */
export interface Normalised {
  fingerprint: string;
  /** The normalised message. */
  message: string;
  /** Whether the failure has project frames (the richer evidence of one cause, TRIAGE-2). */
  framed: boolean;
  target: string | null;
}

/** The fingerprint, normalised message, evidence and target of one failure, as `normaliseFailure` made them that day. */
export function normalised(message: string, trace: string | null): Normalised {
  const read = failureStatement(message, trace, []);
  return { fingerprint: read.fingerprint, message: read.message, framed: read.frames.length > 0, target: read.target };
}
