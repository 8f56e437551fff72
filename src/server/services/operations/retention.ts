import type { Static } from 'typebox';
import type { RetentionPolicy } from '../../../api/v1/projects.ts';
import type { Lease } from '../../background.ts';
import type { ServiceContext } from '../../context.ts';
import { deleteRuns, expiredRuns, type Policy, projectsForRetention, setKeep, trySweepLock } from '../../db/repositories/retention.ts';
import { findRun } from '../../db/repositories/runs.ts';
import { inTransaction } from '../../db/repositories/transaction.ts';
import type { TestRunsTable } from '../../db/types.ts';
import { AppError, found } from '../../errors.ts';
import { audit } from '../access/audit.ts';
import { forgetKeptContent } from '../records/deletions.ts';

// Retention (RET-2): each project's policy, or the instance default, applied by a sweep that
// deletes expired runs a small batch per transaction, so writers never wait long behind it.

export type RetentionRules = Static<typeof RetentionPolicy>;

/**
 * Runs deleted per transaction, and found per query. A query pages on through the project from the
 * last page's end; with a count rule each one ranks the runs from there on, so a page is large.
 */
const SWEEP_BATCH = 100;
const SWEEP_SELECT = 10_000;
const DAY_MS = 86_400_000;

export interface RetentionReport {
  dryRun: boolean;
  deleted: number;
  projects: { key: string; rules: RetentionRules; source: 'project' | 'default'; expired: number }[];
}

/** The instance default from configuration: the rules whose variables are not 0. */
export function defaultRules(config: ServiceContext['config']): RetentionRules {
  return {
    ...(config.retentionDays > 0 ? { days: config.retentionDays } : {}),
    ...(config.retentionFailedDays > 0 ? { failedDays: config.retentionFailedDays } : {}),
    ...(config.retentionLastRuns > 0 ? { lastRunsPerTest: config.retentionLastRuns } : {}),
  };
}

function policyOf(rules: RetentionRules, now: number): Policy {
  const before = (days: number | undefined) => (days === undefined ? undefined : new Date(now - days * DAY_MS).toISOString());
  return { cutoff: before(rules.days), failedCutoff: before(rules.failedDays), lastRunsPerTest: rules.lastRunsPerTest };
}

/**
 * Applies every project's retention: deletes the runs it expires (or, with `dryRun`, only counts
 * them). On PostgreSQL each batch takes the sweep's advisory lock, so of several instances only one
 * sweeps at a time; another that finds it taken stops and leaves the work to it. Run as a periodic
 * task, it stops before the next batch once `lease` is no longer held (lost, or this instance stopping).
 * `progress` hears the runs deleted so far after each batch (the command line's progress).
 */
export async function sweepRetention(
  ctx: ServiceContext,
  options: { dryRun?: boolean; lease?: Lease; progress?: (deleted: number) => void } = {},
): Promise<RetentionReport> {
  const report: RetentionReport = { dryRun: options.dryRun === true, deleted: 0, projects: [] };
  const now = ctx.clock().getTime();
  const fallback = defaultRules(ctx.config);
  for (const project of await projectsForRetention(ctx.db)) {
    const rules = project.retention === null ? fallback : (JSON.parse(project.retention) as RetentionRules);
    const policy = policyOf(rules, now);
    const entry = { key: project.key, rules, source: project.retention === null ? ('default' as const) : ('project' as const), expired: 0 };
    report.projects.push(entry);
    if (options.dryRun) {
      entry.expired = (await expiredRuns(ctx.db, project.id, policy, Number.MAX_SAFE_INTEGER)).length;
      continue;
    }
    // The expired runs are found ten thousand at a time, oldest first, each page from where the
    // last one ended, then deleted a hundred per transaction; a run marked keep in between is
    // skipped by the delete.
    let from: string | undefined;
    for (;;) {
      const page = await expiredRuns(ctx.db, project.id, policy, SWEEP_SELECT, from);
      const expired = page.map((run) => run.id);
      for (let i = 0; i < expired.length; i += SWEEP_BATCH) {
        if (options.lease?.stillHeld() === false) return report;
        const batch = await inTransaction(ctx.db, async (trx) => {
          if (!(await trySweepLock(trx))) return undefined;
          const deleted = await deleteRuns(trx, expired.slice(i, i + SWEEP_BATCH));
          if (deleted > 0) {
            await audit(ctx, trx, {
              actorUserId: null,
              action: 'retention.sweep',
              targetType: 'project',
              targetId: project.id,
              details: { key: project.key, deleted, rules },
            });
          }
          return deleted;
        });
        if (batch === undefined) return report; // Another instance is sweeping.
        // The results (PERF-2), image uses (PERF-6) and owners (PERF-7) kept in memory may not
        // outlive the runs that went.
        if (batch > 0) forgetKeptContent(ctx);
        entry.expired += batch;
        report.deleted += batch;
        options.progress?.(report.deleted);
      }
      if (page.length < SWEEP_SELECT) break;
      from = page[page.length - 1]?.finishedAt;
    }
  }
  return report;
}

/** Marks a run to keep (a run still going may be marked ahead: retention only ever expires finished runs), or unmarks it. */
export async function keepRun(ctx: ServiceContext, runId: string, keep: boolean): Promise<TestRunsTable> {
  const run = found(await findRun(ctx.db, runId), 'The test run');
  if (!(await setKeep(ctx.db, run.id, keep))) throw new AppError('NOT_FOUND', 'The test run is not there any more.');
  return { ...run, keep: keep ? 1 : 0 };
}
