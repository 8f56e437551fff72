import { randomUUID } from 'node:crypto';
import type { Lease } from '../../background.ts';
import { TaskInterrupted } from '../../background.ts';
import type { ServiceContext } from '../../context.ts';
import { openManualRuns } from '../../db/repositories/manual-runs.ts';
import { insertCells, nextResultPosition } from '../../db/repositories/results.ts';
import { updateRunIfStatus } from '../../db/repositories/runs.ts';
import { inTransaction } from '../../db/repositories/transaction.ts';
import { queueForgeSyncs } from '../integrations/forge-hooks.ts';
import { queueJobsCompleted } from '../webhooks/events.ts';
import { deliverSoon } from '../webhooks/outbox.ts';

// A run executed by hand that nobody finishes (UI-10, TCM-9): the tester closed the tab, or went
// home. It would stay `running` for ever, and keep its job running. Like a launch nobody closes
// (JOB-2), it ends after `ATTEST_LAUNCH_IDLE_MINUTES` without activity; unlike a launch, whose end
// is derived when it is read, the run is written `aborted`, with a note saying why, since a run's
// status is stored and its results freeze when it finishes.

export const MANUAL_RUN_IDLE_TASK = 'manual-run-idle';
/** The name of the note an idle manual run ends with (a run-level text cell). */
export const IDLE_NOTE_CELL = 'aborted';
/** The sweep's longest period; it runs sooner when the next open run falls idle sooner. */
const SWEEP_MAX_MS = 3_600_000;
/** The sweep's shortest wait: an instance never writes its schedule more often than this. */
const SWEEP_MIN_MS = 60_000;

/** The note a manual run ends with when it was left idle. */
export function idleNote(idleMinutes: number, lastActivity: string): string {
  return (
    `Ended by Attest: nothing was recorded on this run for ${idleMinutes} minutes (ATTEST_LAUNCH_IDLE_MINUTES), ` +
    `the last at ${lastActivity}. A run executed by hand ends this way when it is left open; start a new run to execute the test again.`
  );
}

/** Registers the sweep that ends idle manual runs (from the catalogue, background-tasks.ts). */
export function handleIdleManualRuns(ctx: ServiceContext): void {
  ctx.background.every(MANUAL_RUN_IDLE_TASK, SWEEP_MAX_MS, (lease) => endIdleManualRuns(ctx, lease));
}

/**
 * Aborts every manual run with no activity for `launchIdleMinutes`, each with its note, its job's
 * check and `job.completed` queued as a PATCH to `aborted` would; answers how soon the next open
 * run falls idle (for the sweep's next run: at least a minute, at most an hour).
 */
export async function endIdleManualRuns(ctx: ServiceContext, lease?: Lease): Promise<number> {
  const idleMs = ctx.config.launchIdleMinutes * 60_000;
  let next = SWEEP_MAX_MS;
  let queued = false;
  for (const run of await openManualRuns(ctx.db)) {
    if (lease && !lease.stillHeld()) throw new TaskInterrupted('idle manual runs');
    const now = ctx.clock();
    const idleFor = now.getTime() - Date.parse(run.last_activity);
    if (idleFor < idleMs) {
      next = Math.min(next, idleMs - idleFor);
      continue;
    }
    queued = (await abortIdleRun(ctx, run.id, idleMs)) || queued;
  }
  if (queued) deliverSoon(ctx);
  return Math.max(SWEEP_MIN_MS, next);
}

/** Aborts one run if it is still open and idle (checked again under its lock: a step may have come meanwhile). */
async function abortIdleRun(ctx: ServiceContext, runId: string, idleMs: number): Promise<boolean> {
  return inTransaction(ctx.db, async (trx) => {
    const now = ctx.clock().toISOString();
    const [run] = await openManualRuns(trx, runId);
    if (!run || Date.parse(now) - Date.parse(run.last_activity) < idleMs) return false;
    const changes = { status: 'aborted' as const, finished_at: now, lease_owner: null, lease_expires_at: null };
    if (!(await updateRunIfStatus(trx, run.id, 'running', changes))) return false;
    await insertCells(trx, [
      {
        id: randomUUID(),
        run_id: run.id,
        step_id: null,
        client_key: null,
        position: await nextResultPosition(trx, run.id),
        name: IDLE_NOTE_CELL,
        media_type: 'text/plain',
        text: idleNote(ctx.config.launchIdleMinutes, run.last_activity),
        created_at: now,
      },
    ]);
    ctx.log.info({ runId: run.id, lastActivity: run.last_activity }, 'a manual run left idle was aborted');
    // As a PATCH to aborted: its job's code-host check, and the job's end when it was its last run.
    let queued = await queueForgeSyncs(ctx, trx, [run.job_id]);
    if (run.job_id !== null) queued = (await queueJobsCompleted(ctx, trx, [run.job_id])) || queued;
    return queued;
  });
}
