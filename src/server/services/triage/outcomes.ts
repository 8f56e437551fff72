import { type AttemptRow, attemptsOfJobs } from '../../db/repositories/outcomes.ts';
import type { Executor } from '../../db/types.ts';

// Retries folded into their test (TRIAGE-5, docs/triage.md): within one job, a test's runs are its
// attempts, and the final attempt decides the test's verdict there.

/** What a test's outcome in a job is: a run's verdict, `flaky`, or null while it has none yet. */
export type OutcomeVerdict = 'passed' | 'failed' | 'broken' | 'skipped' | 'flaky' | null;

/** One test's outcome in one job (or one run without a job), its attempts folded. */
export interface TestOutcome {
  /** The test id, else `name:` and the run's name. */
  testKey: string;
  testId: string | null;
  /** The device of the runs: one test run on two devices in a job is two outcomes, not a retry. */
  deviceId: string | null;
  name: string;
  /** The final attempt's verdict, or `flaky` when an attempt failed or broke and the final one passed; null when unfinished. */
  verdict: OutcomeVerdict;
  /** Runs of the test in the job (aborted ones included). */
  attempts: number;
  /** The final attempt. */
  runId: string;
  failureGroupId: string | null;
  finishedAt: string | null;
  durationMs: number | null;
  branch: string | null;
  commit: string | null;
  jobId: string | null;
  /** The newest creation time among the attempts: outcomes are ordered by it. */
  createdAt: string;
}

/** A run's test key: its test id, else `name:` and its name. */
export const testKeyOf = (run: Pick<AttemptRow, 'test_id' | 'name'>): string => run.test_id ?? `name:${run.name}`;

/**
 * The test's name from a run of it (TRIAGE-14): the run's name, without the ` (retry N)` that the
 * reporter and the Playwright import added to a retry's name before a retry's attempt was only its
 * `attempt`, so that no answer names a test by its last attempt.
 */
export const testNameOf = (run: Pick<AttemptRow, 'name' | 'attempt'>): string =>
  run.attempt > 0 && run.name.endsWith(` (retry ${run.attempt})`) ? run.name.slice(0, -` (retry ${run.attempt})`.length) : run.name;

const failing = (verdict: AttemptRow['verdict']) => verdict === 'failed' || verdict === 'broken';

/** What folding attempts reads of a run. */
type FoldedRow = Pick<AttemptRow, 'id' | 'status' | 'verdict' | 'attempt' | 'created_at'>;

/**
 * Whether `a` is a later final attempt than `b`. An aborted run was never executed, so it is final
 * only when every attempt was aborted; otherwise the highest attempt, then the latest created, then
 * the greatest id (one order on every dialect).
 */
function laterAttempt(a: FoldedRow, b: FoldedRow): boolean {
  const aborted = (run: FoldedRow) => run.status === 'aborted';
  if (aborted(a) !== aborted(b)) return aborted(b);
  if (a.attempt !== b.attempt) return a.attempt > b.attempt;
  if (a.created_at !== b.created_at) return a.created_at > b.created_at;
  return a.id > b.id;
}

/** The final attempt of one test in one job (at least one attempt), the newest creation among them, and the folded verdict. */
function finalAttempt<R extends FoldedRow>(attempts: readonly R[]): { final: R; createdAt: string; verdict: OutcomeVerdict } {
  let final = attempts[0] as R;
  let createdAt = final.created_at;
  let anyFailed = false;
  for (const run of attempts) {
    if (laterAttempt(run, final)) final = run;
    if (run.created_at > createdAt) createdAt = run.created_at;
    if (run.status === 'completed' && failing(run.verdict)) anyFailed = true;
  }
  const verdict: OutcomeVerdict = final.status !== 'completed' ? null : final.verdict === 'passed' && anyFailed ? 'flaky' : final.verdict;
  return { final, createdAt, verdict };
}

/** Folds the attempts of one test in one job (at least one) into its outcome. */
export function foldAttempts(attempts: readonly AttemptRow[]): TestOutcome {
  const { final, createdAt, verdict } = finalAttempt(attempts);
  const durationMs =
    final.started_at && final.finished_at ? Math.max(0, Date.parse(final.finished_at) - Date.parse(final.started_at)) : null;
  return {
    testKey: testKeyOf(final),
    testId: final.test_id,
    deviceId: final.device_id,
    name: testNameOf(final),
    verdict,
    attempts: attempts.length,
    runId: final.id,
    failureGroupId: final.failure_group_id,
    finishedAt: final.finished_at,
    durationMs,
    branch: final.branch,
    commit: final.commit_sha,
    jobId: final.job_id,
    createdAt,
  };
}

/** Runs grouped into the attempts of one outcome each, by `keyOf`; a run without a job is an outcome of its own. */
function attemptsByOutcome<R extends Pick<AttemptRow, 'id' | 'job_id' | 'device_id'>>(
  runs: readonly R[],
  testKey: (run: R) => string,
): R[][] {
  const byOutcome = new Map<string, R[]>();
  for (const run of runs) {
    const key = run.job_id === null ? `run:${run.id}` : `${run.job_id}\u0000${run.device_id ?? ''}\u0000${testKey(run)}`;
    const attempts = byOutcome.get(key);
    if (attempts) attempts.push(run);
    else byOutcome.set(key, [run]);
  }
  return [...byOutcome.values()];
}

/** Newest first: by the newest attempt's creation, then the final run's id. */
const newestFirst = (a: { createdAt: string; runId: string }, b: { createdAt: string; runId: string }) =>
  a.createdAt !== b.createdAt ? (a.createdAt < b.createdAt ? 1 : -1) : a.runId < b.runId ? 1 : -1;

/**
 * Folds runs into outcomes: per job, device and test key (a job fans a test out to each of its
 * devices: those runs are executions of their own, not retries); a run without a job is an outcome
 * of its own.
 * Answers them newest first (by their newest attempt's creation, then final run id).
 */
export function foldOutcomes(runs: readonly AttemptRow[]): TestOutcome[] {
  return attemptsByOutcome(runs, testKeyOf).map(foldAttempts).sort(newestFirst);
}

/** What a test's health reads of one of its runs (`healthRunsOfTests`): no more than folding and scoring need. */
export type HealthRun = FoldedRow & Pick<AttemptRow, 'job_id' | 'device_id' | 'branch' | 'commit_sha'>;

/** One test's outcomes as its health scores them (`scoreHealth`), newest first: its runs folded as `foldOutcomes` folds them. */
export function healthOutcomes(runs: readonly HealthRun[]): Pick<TestOutcome, 'verdict' | 'branch' | 'commit' | 'runId' | 'jobId'>[] {
  return attemptsByOutcome(runs, () => '')
    .map((attempts) => {
      const { final, createdAt, verdict } = finalAttempt(attempts);
      return { verdict, branch: final.branch, commit: final.commit_sha, createdAt, runId: final.id, jobId: final.job_id };
    })
    .sort(newestFirst);
}

/** The outcome of each test of each job given, by job (every job given has an entry); within a job, ordered by name. */
export async function testOutcomesOfJobs(executor: Executor, jobIds: readonly string[]): Promise<Map<string, TestOutcome[]>> {
  const byJob = new Map<string, TestOutcome[]>(jobIds.map((id) => [id, []]));
  if (jobIds.length === 0) return byJob;
  for (const outcome of foldOutcomes(await attemptsOfJobs(executor, jobIds))) byJob.get(outcome.jobId as string)?.push(outcome);
  for (const outcomes of byJob.values())
    outcomes.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : a.testKey < b.testKey ? -1 : 1));
  return byJob;
}

/** Counts of outcomes by verdict, as job progress shows them (`unfinished`: no verdict yet). */
export interface OutcomeCounts {
  total: number;
  passed: number;
  failed: number;
  broken: number;
  skipped: number;
  flaky: number;
  unfinished: number;
}

export function countOutcomes(outcomes: readonly TestOutcome[]): OutcomeCounts {
  const counts: OutcomeCounts = { total: 0, passed: 0, failed: 0, broken: 0, skipped: 0, flaky: 0, unfinished: 0 };
  for (const { verdict } of outcomes) {
    counts.total++;
    counts[verdict ?? 'unfinished']++;
  }
  return counts;
}
