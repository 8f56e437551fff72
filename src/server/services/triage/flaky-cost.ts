import type { ServiceContext } from '../../context.ts';
import { attemptsOfPairs, FLAKY_COST_PAIRS_MAX, jobsOfCost, retriedFailurePairs } from '../../db/repositories/flaky-cost.ts';
import type { AttemptRow } from '../../db/repositories/outcomes.ts';
import { foldOutcomes, testNameOf } from './outcomes.ts';

// What flakiness costs in CI time (TRIAGE-15, docs/triage.md): the attempts that failed and were
// then retried to a pass, and the jobs whose only failures were such tests.

const DAY_MS = 86_400_000;
/** Most rows of each table an answer lists; the figures count them all. */
export const FLAKY_COST_ROWS_MAX = 1_000;

/** A failed attempt of a test that passed on a later attempt of the same job. */
export interface RetriedAttempt {
  runId: string;
  jobId: string;
  testId: string;
  name: string;
  attempt: number;
  verdict: 'failed' | 'broken';
  durationMs: number;
}

/** A job whose only failures were of tests that passed on a retry. */
export interface FlakyOnlyJob {
  jobId: string;
  name: string;
  flakyTests: number;
  durationMs: number;
}

export interface FlakyCost {
  days: number;
  since: string;
  testId: string | null;
  retriedFailures: { attempts: number; durationMs: number };
  flakyOnlyJobs: { jobs: number; durationMs: number };
  tests: { testId: string; name: string; attempts: number; durationMs: number }[];
  attempts: RetriedAttempt[];
  jobs: FlakyOnlyJob[];
  /** True when the window held more retried failures than one answer reads (FLAKY_COST_PAIRS_MAX pairs). */
  truncated: boolean;
}

const lengthOf = (run: Pick<AttemptRow, 'started_at' | 'finished_at'>) =>
  run.started_at && run.finished_at ? Math.max(0, Date.parse(run.finished_at) - Date.parse(run.started_at)) : 0;

/** The window of `days` days: from midnight UTC `days − 1` days ago, as the dashboard's. */
export function windowStart(now: string, days: number): string {
  return new Date(Date.parse(`${now.slice(0, 10)}T00:00:00Z`) - (days - 1) * DAY_MS).toISOString();
}

/**
 * The flaky cost of a project (or of one test) over the window: every failed or broken attempt of a
 * test whose final attempt in its job passed (the outcome is `flaky`, services/triage/outcomes.ts), with
 * its length, and every job in which such tests failed and no test failed in the end, with its span
 * (first start to last finish of its runs). Read from the superseded failures of the window, the
 * only places a retry to a pass can be, so its cost follows the retries, not the project's runs.
 */
export async function flakyCost(
  ctx: ServiceContext,
  projectId: string,
  options: { days: number; testId?: string | undefined },
): Promise<FlakyCost> {
  const since = windowStart(ctx.clock().toISOString(), options.days);
  const { attempts, flakyTestsByJob, truncated } = await retriedAttempts(ctx, projectId, since, options.testId);
  const jobs: FlakyOnlyJob[] = [];
  for (const [jobId, job] of await jobsOfCost(ctx.db, [...flakyTestsByJob.keys()])) {
    if (job.failedInTheEnd) continue;
    const durationMs = job.startedAt && job.finishedAt ? Math.max(0, Date.parse(job.finishedAt) - Date.parse(job.startedAt)) : 0;
    jobs.push({ jobId, name: job.name, flakyTests: flakyTestsByJob.get(jobId) ?? 0, durationMs });
  }
  jobs.sort((a, b) => b.durationMs - a.durationMs || (a.jobId < b.jobId ? -1 : 1));
  const tests = costPerTest(attempts);
  const sum = <T extends { durationMs: number }>(rows: T[]) => rows.reduce((n, row) => n + row.durationMs, 0);
  return {
    days: options.days,
    since,
    testId: options.testId ?? null,
    retriedFailures: { attempts: attempts.length, durationMs: sum(attempts) },
    flakyOnlyJobs: { jobs: jobs.length, durationMs: sum(jobs) },
    tests: tests.slice(0, FLAKY_COST_ROWS_MAX),
    attempts: attempts.slice(0, FLAKY_COST_ROWS_MAX),
    jobs: jobs.slice(0, FLAKY_COST_ROWS_MAX),
    truncated,
  };
}

/** Every test of the project that flakiness cost CI time in the last `days` days, costliest first (the tests list's `sort=flakyCost`). */
export async function flakyCostOfTests(ctx: ServiceContext, projectId: string, days: number): Promise<FlakyCost['tests']> {
  return costPerTest((await retriedAttempts(ctx, projectId, windowStart(ctx.clock().toISOString(), days))).attempts);
}

/** The cost per test: its retried attempts and their lengths, costliest first (then by id). */
function costPerTest(attempts: readonly RetriedAttempt[]): FlakyCost['tests'] {
  const byTest = new Map<string, { testId: string; name: string; attempts: number; durationMs: number }>();
  for (const attempt of attempts) {
    const test = byTest.get(attempt.testId) ?? { testId: attempt.testId, name: attempt.name, attempts: 0, durationMs: 0 };
    test.attempts++;
    test.durationMs += attempt.durationMs;
    byTest.set(attempt.testId, test);
  }
  return [...byTest.values()].sort((a, b) => b.durationMs - a.durationMs || (a.testId < b.testId ? -1 : 1));
}

/** The window's retried failures (longest first), the flaky tests of each job they were in, and whether the read was cut short. */
async function retriedAttempts(
  ctx: ServiceContext,
  projectId: string,
  since: string,
  testId?: string,
): Promise<{ attempts: RetriedAttempt[]; flakyTestsByJob: Map<string, number>; truncated: boolean }> {
  let pairs = await retriedFailurePairs(ctx.db, projectId, since);
  if (testId !== undefined) pairs = pairs.filter((pair) => pair.testId === testId);
  const truncated = pairs.length > FLAKY_COST_PAIRS_MAX;
  const runs = await attemptsOfPairs(ctx.db, pairs.slice(0, FLAKY_COST_PAIRS_MAX));
  const attemptsByRun = new Map(runs.map((run) => [run.id, run]));
  const keyOf = (jobId: string | null, deviceId: string | null, testId: string | null) => `${jobId}\u0000${deviceId ?? ''}\u0000${testId}`;
  const runsByOutcome = new Map<string, AttemptRow[]>();
  for (const run of runs) {
    const key = keyOf(run.job_id, run.device_id, run.test_id);
    runsByOutcome.set(key, [...(runsByOutcome.get(key) ?? []), run]);
  }

  const attempts: RetriedAttempt[] = [];
  const flakyTestsByJob = new Map<string, number>();
  for (const outcome of foldOutcomes(runs)) {
    if (outcome.verdict !== 'flaky' || outcome.jobId === null || outcome.testId === null) continue;
    flakyTestsByJob.set(outcome.jobId, (flakyTestsByJob.get(outcome.jobId) ?? 0) + 1);
    for (const run of runsByOutcome.get(keyOf(outcome.jobId, outcome.deviceId, outcome.testId)) ?? []) {
      if (run.status !== 'completed' || (run.verdict !== 'failed' && run.verdict !== 'broken')) continue;
      if (run.finished_at === null || run.finished_at < since) continue;
      attempts.push({
        runId: run.id,
        jobId: outcome.jobId,
        testId: outcome.testId,
        name: testNameOf(attemptsByRun.get(outcome.runId) ?? run),
        attempt: run.attempt,
        verdict: run.verdict,
        durationMs: lengthOf(run),
      });
    }
  }
  attempts.sort((a, b) => b.durationMs - a.durationMs || (a.runId < b.runId ? -1 : 1));
  return { attempts, flakyTestsByJob, truncated };
}
