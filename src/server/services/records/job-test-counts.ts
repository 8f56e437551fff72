import type { JobRunSummary } from '../../db/repositories/jobs.ts';
import type { Executor } from '../../db/types.ts';
import { countOutcomes, type OutcomeCounts, testOutcomesOfJobs } from '../triage/outcomes.ts';

// What job views count (TRIAGE-5): each job's tests counted once, kept for settled jobs (jobs.ts reads them).

/**
 * The per-test counts of settled jobs (no run queued or running; TRIAGE-5), by what their runs add
 * up to: the number of runs, the last finish and the last creation. Folding a job reads every run
 * of it (a 5,000-test import is 5,000 rows), and a settled job's counts change only when a run is
 * added, finished or deleted, each of which changes the key. Per process, bounded, oldest out first.
 */
const settledCounts = new Map<string, OutcomeCounts>();
const SETTLED_COUNTS_MAX = 20_000;

function settledKey(jobId: string, runs: JobRunSummary | undefined): string | undefined {
  if (!runs || runs.queued + runs.running > 0) return undefined;
  return `${jobId}|${runs.completed + runs.aborted}|${runs.lastFinished ?? ''}|${runs.lastCreated ?? ''}`;
}

/** Each job's tests counted once (TRIAGE-5): settled jobs from the cache, the others folded from their runs. */
export async function testCountsOfJobs(
  executor: Executor,
  jobIds: readonly string[],
  summaries: ReadonlyMap<string, JobRunSummary>,
): Promise<Map<string, OutcomeCounts>> {
  const counts = new Map<string, OutcomeCounts>();
  const keys = new Map<string, string>();
  const toFold: string[] = [];
  for (const jobId of jobIds) {
    const key = settledKey(jobId, summaries.get(jobId));
    const known = key === undefined ? undefined : settledCounts.get(key);
    if (known) counts.set(jobId, known);
    else {
      toFold.push(jobId);
      if (key !== undefined) keys.set(jobId, key);
    }
  }
  if (toFold.length === 0) return counts;
  const outcomes = await testOutcomesOfJobs(executor, toFold);
  for (const jobId of toFold) {
    const folded = countOutcomes(outcomes.get(jobId) ?? []);
    counts.set(jobId, folded);
    const key = keys.get(jobId);
    if (key === undefined) continue;
    settledCounts.set(key, folded);
    if (settledCounts.size > SETTLED_COUNTS_MAX) settledCounts.delete(settledCounts.keys().next().value as string);
  }
  return counts;
}
