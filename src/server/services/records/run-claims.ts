import type { Static } from 'typebox';
import {
  type claimRun as claimRunEndpoint,
  type heartbeatRun as heartbeatRunEndpoint,
  LEASE_SECONDS_DEFAULT,
} from '../../../api/v1/runs.ts';
import type { ServiceContext } from '../../context.ts';
import { findProjectId } from '../../db/repositories/projects.ts';
import { claimOldestQueuedRun, findRun, renewRunLease, requeueExpiredLeases } from '../../db/repositories/runs.ts';
import type { TestRunsTable } from '../../db/types.ts';
import { AppError, found } from '../../errors.ts';
import type { Principal } from '../../security/principal.ts';
import { queueForgeSyncs, wakeForgeSyncs } from '../integrations/forge-hooks.ts';

// Runners claim queued runs under a lease (SCALE-6). A lease is a runner's name and an expiry on
// the run's row (`lease_owner`, `lease_expires_at`), so every instance sees the same leases and
// any instance may hand out, renew or expire them. Times come from the instance's clock: instances
// are expected to keep their clocks in step (NTP), a few seconds of skew against leases of minutes.

export type ClaimInput = Static<NonNullable<(typeof claimRunEndpoint)['body']>>;
export type HeartbeatInput = Static<NonNullable<(typeof heartbeatRunEndpoint)['body']>>;

const leaseEnd = (now: Date, seconds = LEASE_SECONDS_DEFAULT) => new Date(now.getTime() + seconds * 1000).toISOString();

/**
 * Returns every run whose lease has expired to the queue, so its job counts it queued again and
 * the next claim can take it; a run of a cancelled job is aborted instead. Claims call it before
 * they pick; a periodic task calls it too, so a lost run shows queued even when no runner asks.
 * Answers how many went back.
 */
export async function requeueExpiredRuns(ctx: ServiceContext): Promise<number> {
  const { requeued, aborted } = await requeueExpiredLeases(ctx.db, ctx.clock().toISOString());
  if (requeued.length > 0) ctx.log.info({ runs: requeued }, 'runs whose runner lease expired went back to the queue');
  if (aborted.length > 0) ctx.log.info({ runs: aborted }, 'runs of cancelled jobs whose runner lease expired were aborted');
  return requeued.length;
}

/** The projects a claim takes from: those the caller sees, or the one it names, which must be one of them. */
async function claimableProjects(
  ctx: ServiceContext,
  visible: Principal['projects'],
  projectId: string | undefined,
): Promise<'all' | string[]> {
  if (projectId === undefined) return visible === 'all' ? 'all' : [...visible];
  const seen = visible === 'all' ? await findProjectId(ctx.db, projectId) : visible.has(projectId) ? projectId : undefined;
  return [found(seen, 'The project')];
}

/**
 * Hands the oldest queued run the runner can serve, of the projects the caller may see, to this
 * caller alone, `running` under the runner's lease; undefined when none matches.
 */
export async function claimRun(ctx: ServiceContext, input: ClaimInput, visible: Principal['projects']): Promise<TestRunsTable | undefined> {
  const projectIds = await claimableProjects(ctx, visible, input.projectId);
  if (projectIds !== 'all' && projectIds.length === 0) return undefined;
  await requeueExpiredRuns(ctx);
  const now = ctx.clock();
  const claimed = await claimOldestQueuedRun(ctx.db, {
    runner: input.runner,
    projectIds,
    deviceIds: input.deviceIds ?? [],
    deviceLabels: input.deviceLabels ?? [],
    now: now.toISOString(),
    leaseExpiresAt: leaseEnd(now, input.leaseSeconds),
  });
  // The first claimed run starts its job (FORGE-2). Queued after the claim committed: a sync that
  // is lost (the instance died in between) is made good by the periodic sweep (forge.ts).
  if (claimed?.job_id) wakeForgeSyncs(ctx, await queueForgeSyncs(ctx, ctx.db, [claimed.job_id]));
  return claimed;
}

/** Why `runner` holds no live lease on the run, for the 409 it gets. */
function lostLease(run: TestRunsTable, runner: string, now: string): string {
  if (run.status === 'completed' || run.status === 'aborted') return `The run is ${run.status}; its lease has ended.`;
  if (run.status === 'queued') return 'The lease expired and the run went back to the queue; stop working on it.';
  if (run.lease_owner === null) return 'The run was not claimed by a runner; it has no lease to extend.';
  if (run.lease_owner !== runner) return 'Another runner holds the lease on this run; stop working on it.';
  return `The lease expired at ${run.lease_expires_at ?? now}; the run goes back to the queue. Stop working on it.`;
}

/**
 * Extends the lease `runner` holds on a run to `leaseSeconds` from now. A runner without a live
 * lease on it (expired, another runner's, finished, never claimed) gets a 409 saying which.
 */
export async function heartbeatRun(ctx: ServiceContext, runId: string, input: HeartbeatInput): Promise<TestRunsTable> {
  const now = ctx.clock();
  const renewed = await renewRunLease(ctx.db, runId, {
    runner: input.runner,
    now: now.toISOString(),
    leaseExpiresAt: leaseEnd(now, input.leaseSeconds),
  });
  if (renewed) return renewed;
  const run = found(await findRun(ctx.db, runId), 'The test run');
  throw new AppError('STATE_CONFLICT', lostLease(run, input.runner, now.toISOString()));
}
