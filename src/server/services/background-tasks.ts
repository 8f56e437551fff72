import type { ServiceContext } from '../context.ts';
import { handleImportTasks } from './imports/tasks.ts';
import { handleForgeTasks } from './integrations/forge.ts';
import { handleIssueTasks } from './integrations/issue-links.ts';
import { collectGarbage } from './operations/maintenance.ts';
import { sweepRetention } from './operations/retention.ts';
import { handleIdleManualRuns } from './tests/manual-runs.ts';
import { handleWebhookDeliveries } from './webhooks/delivery.ts';

/**
 * The catalogue of background work (SCALE-5): every kind of task the runner claims is registered
 * here, once, by the background plugin before it starts the runner. Of all the instances on one
 * database one at a time runs each task; a periodic task's period counts from the end of its last
 * run, wherever that was (0: never).
 *
 * - `import`: writes an accepted import's job (IMP-4).
 * - `forge-sync`, `forge-sweep`: a job's check on its code host and their sweep (FORGE-2).
 * - `issue-refresh`, `issue-refresh-sweep`: the refresh of issue links and its sweep (FORGE-6).
 * - `webhook-dispatch`, `webhook-sweep`: webhook deliveries and the sweep that also announces
 *   expired quarantines (HOOK-3).
 * - `manual-run-idle`: ends runs executed by hand and left idle (TCM-9).
 * - `gc`: blob garbage collection every `gcIntervalMinutes` (DUR-10); it frees what retention deleted.
 * - `retention`: the retention sweep every `retentionIntervalMinutes` (RET-2).
 */
export function registerBackgroundTasks(ctx: ServiceContext): void {
  handleImportTasks(ctx);
  handleForgeTasks(ctx);
  handleIssueTasks(ctx);
  handleWebhookDeliveries(ctx);
  handleIdleManualRuns(ctx);
  ctx.background.every('gc', ctx.config.gcIntervalMinutes * 60_000, async (lease) => {
    const report = await collectGarbage(ctx, { graceMs: ctx.config.gcGraceMinutes * 60_000, lease });
    if (report.deleted > 0 || report.removedFolders > 0) ctx.log.info({ gc: report }, 'blob garbage collection');
  });
  ctx.background.every('retention', ctx.config.retentionIntervalMinutes * 60_000, async (lease) => {
    const report = await sweepRetention(ctx, { lease });
    if (report.deleted > 0) ctx.log.info({ retention: { deleted: report.deleted } }, 'retention sweep');
  });
}
