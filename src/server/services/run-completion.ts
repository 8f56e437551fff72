import type { ServiceContext } from '../context.ts';
import type { Executor, TestRunsTable } from '../db/types.ts';
import { recordFailures } from './failure-recording.ts';
import { refreshHealth } from './health.ts';

// What follows a run's completion, inside the transaction that completes it (docs/triage.md):
// every path that completes runs (a PATCH to completed, a run posted finished, an import's batch)
// calls this once with the runs it completed, so a reader never sees a completed run without its
// error groups, or a test's health that leaves it out.

/** Records the failures of the runs just completed, then the health of their tests (which reads the jobs' incidents). */
export async function onRunsCompleted(ctx: ServiceContext, trx: Executor, runs: readonly TestRunsTable[]): Promise<void> {
  if (runs.length === 0) return;
  await recordFailures(ctx, trx, runs);
  await refreshHealth(ctx, trx, runs);
}
