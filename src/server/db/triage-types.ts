// Row shapes of the tables of answers across runs (migration 0016, docs/triage.md), beside
// types.ts, which holds the Database that lists them.

/** One cause of failure in a project (TRIAGE-1, TRIAGE-2). */
export interface FailureGroupsTable {
  id: string;
  project_id: string;
  fingerprint: string;
  /** The normalised message. */
  title: string;
  /** The first occurrence's message as written. */
  message: string;
  /** JSON array of the first project frames, `file:function`. */
  frames: string;
  category: 'assertion' | 'timeout' | 'network' | 'crash' | 'element' | 'other';
  action: string | null;
  target: string | null;
  /** The name of the first category rule that matched (TRIAGE-3). */
  rule: string | null;
  status: 'new' | 'known' | 'regressed' | 'resolved';
  defect_type: 'product_bug' | 'automation_bug' | 'system_issue' | 'no_defect' | 'to_investigate';
  comment: string | null;
  issue_url: string | null;
  assignee: string | null;
  first_seen_at: string;
  first_seen_run_id: string;
  first_seen_job_id: string | null;
  last_seen_at: string;
  last_seen_run_id: string;
  last_seen_job_id: string | null;
  /** Failed runs with this cause (a run counts once, however many of its steps share it). */
  occurrences: number;
  affected_tests: number;
  affected_branches: number;
  triaged_at: string | null;
  triaged_by: string | null;
  created_at: string;
  updated_at: string;
}

/** A failed run with this cause. */
export interface FailureOccurrencesTable {
  group_id: string;
  run_id: string;
  project_id: string;
  job_id: string | null;
  /** The first failed step with this cause; null for a run-level error. */
  step_id: string | null;
  /** The test id, else `name:` and the run's name. */
  test_key: string;
  branch: string | null;
  /** The run's finish time. */
  at: string;
}

export interface FailureGroupTestsTable {
  group_id: string;
  test_key: string;
}

export interface FailureGroupBranchesTable {
  group_id: string;
  branch: string;
}

/** A test's health over its latest completed runs (TRIAGE-6), kept as runs complete. */
export interface TestHealthTable {
  test_id: string;
  project_id: string;
  state: 'stable' | 'flaky' | 'broken';
  flaky_score: number;
  runs_considered: number;
  failing_streak: number;
  updated_at: string;
  /** The monitor that decided the state (TRIAGE-11): `retry`, `rate` or `broken`; null when stable (and on rows scored before migration 0033). */
  monitor: 'retry' | 'rate' | 'broken' | null;
  /** The branch the health was scored on (the project's default branch); null for runs without one. */
  branch: string | null;
  /** JSON `MonitorEvidence` (services/triage/monitors.ts): what the monitor saw. */
  evidence: string | null;
}

/** A quarantined test (TRIAGE-6): it still runs and reports; its failures do not fail a CI job until it expires. */
export interface TestQuarantinesTable {
  test_id: string;
  project_id: string;
  owner: string;
  reason: string;
  expires_at: string;
  created_at: string;
  created_by: string | null;
  /** When quarantine.expired was announced for this expiry (migration 0018, HOOK-7); a renewal clears it. */
  expiry_announced_at?: string | null;
}

/**
 * A project's completed runs of one UTC day (of their finish) and branch (`''`: none), kept by
 * triggers (migration 0023) for the dashboard (TRIAGE-8). `failed` leaves out failed attempts a later
 * attempt superseded (TRIAGE-5); `duration_sum` / `durations` is the mean length of those with one.
 */
export interface RunDaysTable {
  project_id: string;
  day: string;
  branch: string;
  runs: number | string;
  passed: number | string;
  failed: number | string;
  skipped: number | string;
  duration_sum: number;
  durations: number | string;
}

/**
 * Failed runs of an error group per project and UTC day of their finish, kept by the
 * `failure_occurrences` triggers (migration 0025) for the dashboard's top groups (TRIAGE-8).
 */
export interface GroupDaysTable {
  project_id: string;
  day: string;
  group_id: string;
  occurrences: number | string;
}
