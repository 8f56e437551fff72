// Row shapes of the quarantine lifecycle (migration 0030, TRIAGE-13, docs/triage.md) and of the
// keys the server signs its links with (migration 0034, HOOK-14), beside types.ts, which holds the
// Database that lists them.

/**
 * Where a test stands in the quarantine lifecycle beyond its quarantine row: a fix attempt pending,
 * verified (`fixed`) or `ended` (failed, naming the failing run, or cancelled by a release or a
 * disable), or the manual `disabled`.
 */
export interface TestLifecyclesTable {
  test_id: string;
  project_id: string;
  state: 'fix-pending' | 'fixed' | 'ended' | 'disabled';
  attempt_started_at: string | null;
  attempt_started_by: string | null;
  attempt_commit: string | null;
  attempt_note: string | null;
  /** The branch the attempt is verified on; null: runs on any branch count. */
  attempt_branch: string | null;
  /** Passing runs in a row the attempt needs (the project's `fixPasses` when it started). */
  attempt_required: number | null;
  attempt_passes: number;
  attempt_ended_at: string | null;
  attempt_failed_run_id: string | null;
  disabled_at: string | null;
  disabled_by: string | null;
  disabled_reason: string | null;
  updated_at: string;
}

/** A key the server signs its own links with, one per purpose (HOOK-14). */
export interface SigningKeysTable {
  purpose: 'image-links';
  /** 32 random bytes, base64url. */
  secret: string;
  created_at: string;
}
