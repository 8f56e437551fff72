import type { ServiceContext } from '../../context.ts';
import { findForgeSettings, insertForgeCheck, unsettledChecksOf } from '../../db/repositories/integrations.ts';
import { enqueueTask } from '../../db/repositories/tasks.ts';
import type { Executor } from '../../db/types.ts';

// Where jobs meet their code host (FORGE-2): the writes that change a job's state (its creation,
// a run starting or finishing, a close or a cancel) queue a sync of its check in their own
// transaction, so the change and the task commit together; the sync itself (forge.ts) runs in
// the background. Kept apart from forge.ts, which reads jobs, so jobs.ts can call in here.

/** The kind of the background task that sends a job's state to its code host; its key is `forge-sync:<jobId>`. */
export const FORGE_SYNC_TASK = 'forge-sync';
/**
 * Syncs after a run event wait this long, so the events of a burst (a batch of results, runs
 * finishing together) become one call: a queued task takes no second one with its key.
 */
export const FORGE_SYNC_DEBOUNCE_MS = 1000;

/** Queues the sync of each job's check; true when one was queued (the caller wakes the runner after its commit). */
export async function queueForgeSyncs(
  ctx: ServiceContext,
  trx: Executor,
  jobIds: readonly (string | null)[],
  delayMs = FORGE_SYNC_DEBOUNCE_MS,
): Promise<boolean> {
  const ids = [...new Set(jobIds.filter((id): id is string => id !== null))];
  if (ids.length === 0) return false;
  const unsettled = await unsettledChecksOf(trx, ids);
  const now = ctx.background.time();
  let queued = false;
  for (const jobId of unsettled) {
    queued =
      (await enqueueTask(trx, {
        kind: FORGE_SYNC_TASK,
        key: `${FORGE_SYNC_TASK}:${jobId}`,
        payload: JSON.stringify({ jobId }),
        runAt: new Date(now.getTime() + delayMs),
        now,
      })) || queued;
  }
  return queued;
}

/**
 * A job created with a commit and a repository, in a project with a code host: its check is
 * recorded and its first sync queued (the check run is created at once). True when queued.
 */
export async function registerForgeCheck(
  ctx: ServiceContext,
  trx: Executor,
  job: { id: string; project_id: string },
  labels: { repository?: string | null; commit: string | null },
): Promise<boolean> {
  const { repository, commit } = labels;
  if (!repository || !commit) return false;
  const settings = await findForgeSettings(trx, job.project_id);
  if (settings?.enabled !== 1) return false;
  const now = ctx.clock().toISOString();
  await insertForgeCheck(trx, {
    job_id: job.id,
    project_id: job.project_id,
    repository,
    commit_sha: commit,
    check_run_id: null,
    synced: null,
    settled: 0,
    last_error: null,
    created_at: now,
    updated_at: now,
  });
  return queueForgeSyncs(ctx, trx, [job.id], 0);
}

/** After the commit of a write that queued syncs: this runner looks now, the others hear of it. */
export function wakeForgeSyncs(ctx: ServiceContext, queued: boolean): void {
  if (!queued) return;
  ctx.background.announce();
  ctx.background.wake();
}

/**
 * After a write to a job committed (a close, a cancel): its check's sync is queued. Outside the
 * write's transaction, so one lost with its instance in between is made good by the sweep (forge.ts).
 */
export async function syncAfter<T>(ctx: ServiceContext, jobId: string, result: T): Promise<T> {
  wakeForgeSyncs(ctx, await queueForgeSyncs(ctx, ctx.db, [jobId], 0));
  return result;
}
