import type { ServiceContext } from '../context.ts';
import { testsOfJobs } from '../db/repositories/failures.ts';
import type { Executor, TestRunsTable } from '../db/types.ts';
import { recordFailures } from './failure-recording.ts';
import { refreshHealth } from './health.ts';
import { queueRunEvents } from './webhook-events.ts';

// What follows a run's completion, inside the transaction that completes it (docs/triage.md):
// every path that completes runs (a PATCH to completed, a run posted finished, an import's batch)
// calls this once with the runs it completed, so a reader never sees a completed run without its
// error groups, or a test's health that leaves it out. Their webhook events go into the outbox in
// the same transaction (HOOK-3), except for imported runs: an import announces itself once.

/**
 * Records the failures of the runs just completed, then the health of their tests (which reads the
 * jobs' incidents), and of every test of a job whose incident the runs set or cleared: its earlier
 * runs now count, or no longer count, in flaky scores. Then queues their webhook events unless
 * `webhooks` is false; true when any delivery was queued (the caller calls `deliverSoon` after its
 * commit).
 */
export async function onRunsCompleted(
  ctx: ServiceContext,
  trx: Executor,
  runs: readonly TestRunsTable[],
  options: { webhooks?: boolean } = {},
): Promise<boolean> {
  if (runs.length === 0) return false;
  const incidentsChanged = await recordFailures(ctx, trx, runs);
  const alsoChanged = incidentsChanged.length > 0 ? await testsOfJobs(trx, incidentsChanged) : [];
  await refreshHealth(ctx, trx, [...runs, ...alsoChanged]);
  return options.webhooks === false ? false : queueRunEvents(ctx, trx, runs);
}
