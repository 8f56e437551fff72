import type { ServiceContext } from '../../context.ts';
import { testsOfJobs, triageOfProjects } from '../../db/repositories/failures.ts';
import type { Executor, TestRunsTable } from '../../db/types.ts';
import { queueForgeSyncs } from '../integrations/forge-hooks.ts';
import { recordFailures, settleIncident, type WrittenResults } from '../triage/failure-recording.ts';
import { advanceLifecycles } from '../triage/fix-verification.ts';
import { refreshHealth } from '../triage/health.ts';
import { queueRunEvents } from '../webhooks/events.ts';

// What follows a run's completion, inside the transaction that completes it (docs/triage.md):
// every path that completes runs (a PATCH to completed, a run posted finished, an import's batch)
// calls this once with the runs it completed, so a reader never sees a completed run without its
// error groups, or a test's health that leaves it out. Their webhook events go into the outbox in
// the same transaction (HOOK-3), except for imported runs: an import announces itself once.

/**
 * Records the failures of the runs just completed, then the health of their tests (which reads the
 * jobs' incidents), and of every test of a job whose incident the runs set or cleared: its earlier
 * runs now count, or no longer count, in flaky scores. Then their tests' fix attempts and automatic
 * quarantines (TRIAGE-13). Then their jobs' code-host checks are queued
 * for a sync (FORGE-2), and their webhook events unless `webhooks` is false (HOOK-2): true when any
 * background work was queued (the caller wakes the runners after its commit). A caller that wrote
 * every step and cell of the runs in this transaction gives them as `written`, and they are not read again.
 */
export async function onRunsCompleted(
  ctx: ServiceContext,
  trx: Executor,
  runs: readonly TestRunsTable[],
  options: { webhooks?: boolean; written?: WrittenResults; incidents?: 'now' | 'when-the-job-ends' } = {},
): Promise<boolean> {
  if (runs.length === 0) return false;
  // The projects' rules and thresholds, read once for both.
  const projects = new Map((await triageOfProjects(trx, [...new Set(runs.map((run) => run.project_id))])).map((row) => [row.id, row]));
  const incidentsChanged = await recordFailures(ctx, trx, runs, projects, { written: options.written, incidents: options.incidents });
  const alsoChanged = incidentsChanged.length > 0 ? await testsOfJobs(trx, incidentsChanged) : [];
  await refreshHealth(ctx, trx, [...runs, ...alsoChanged], projects);
  // The quarantine lifecycle reads the health just kept (TRIAGE-13); imports announce their transitions too.
  const lifecycle = await advanceLifecycles(ctx, trx, runs, projects);
  const forge = await queueForgeSyncs(
    ctx,
    trx,
    runs.map((run) => run.job_id),
  );
  const hooks = options.webhooks === false ? false : await queueRunEvents(ctx, trx, runs);
  return forge || hooks || lifecycle;
}

/**
 * The end of a job whose runs were completed with `incidents: 'when-the-job-ends'` (an import's):
 * its outage guard looked at once (TRIAGE-4), and when that changed its incident, the health of
 * every test it ran, whose flaky scores then leave its runs out, or count them again.
 */
export async function onJobEnded(ctx: ServiceContext, trx: Executor, jobId: string): Promise<void> {
  const changed = await settleIncident(trx, jobId);
  if (changed.length === 0) return;
  const tests = await testsOfJobs(trx, changed);
  const projects = new Map((await triageOfProjects(trx, [...new Set(tests.map((test) => test.project_id))])).map((row) => [row.id, row]));
  await refreshHealth(ctx, trx, tests, projects);
}
