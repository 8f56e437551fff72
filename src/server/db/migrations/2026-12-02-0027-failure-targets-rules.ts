// Frozen in time with migration 2026-12-02-0027-failure-targets, which alone uses it: the
// normaliser's target rules as they were that day, read from the rules frozen that day
// (src/server/failures/rules-2026-12-02/, never edited), so that what the migration did never
// changes with the live normaliser. Never edited once shipped; no other application imports.

import { failureLines, statementLines } from '../../failures/rules-2026-12-02/statements.ts';
import { targetOf } from '../../failures/rules-2026-12-02/targets.ts';

/** The target of one failure as the normaliser of this migration's day reads it (no project roots: recording gives none). */
export function targetOfFailure(message: string, trace: string | null): string | null {
  const { raw, messageLines, frameLines } = failureLines(message, trace);
  const head = statementLines(messageLines, []).join('\n');
  return targetOf(raw, head, [], frameLines.join('\n'));
}
