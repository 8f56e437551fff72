import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { type AppContext, refreshLegacyKeyDigests } from '../context.ts';
import { collectGarbage } from '../services/maintenance.ts';
import { handleIdleManualRuns } from '../services/manual-runs.ts';
import { sweepRetention } from '../services/retention.ts';
import { requeueExpiredRuns } from '../services/run-claims.ts';
import { handleWebhookDeliveries } from '../services/webhook-delivery.ts';

/** How often each instance returns runs whose runner lease expired to the queue (SCALE-6). */
const LEASE_SWEEP_MS = 10_000;

/**
 * The server's upkeep. Blob garbage collection every `gcIntervalMinutes` (DUR-10) and the retention
 * sweep every `retentionIntervalMinutes` (RET-2) are periodic background tasks (SCALE-5): of all
 * the instances on one database, one at a time runs each, and the period counts from the end of
 * its last run wherever that was (0: never); each stops between batches once its lease is lost or
 * the instance stops, and the next run goes on. Garbage collection then frees what the sweep deleted.
 * The old-format key digests the request log masks by (SEC-2a) are this process's memory, so each
 * instance reads them again every minute on a timer of its own. Runs whose runner lease expired go
 * back to the queue every 10 seconds on a timer of each instance too (SCALE-6; claims also do it
 * before they pick): a read when no lease expired, one conditional UPDATE when one did, safe
 * on every instance at once, where a periodic task would write its schedule every 10 seconds.
 * Webhook deliveries (HOOK-3) are sent by a dispatch task queued with each change, and by a
 * periodic sweep (at most a minute apart, sooner when a retry is due sooner) that also announces
 * expired quarantines. Runs executed by hand and left open end `aborted` once idle for
 * `launchIdleMinutes` (TCM-9), by a periodic task that runs when the next of them falls idle (at
 * most an hour apart).
 */
export const upkeepPlugin = fp(
  async (app: FastifyInstance, { ctx }: { ctx: AppContext }) => {
    ctx.background.every('gc', ctx.config.gcIntervalMinutes * 60_000, async (lease) => {
      const report = await collectGarbage(ctx, { graceMs: ctx.config.gcGraceMinutes * 60_000, lease });
      if (report.deleted > 0 || report.removedFolders > 0) ctx.log.info({ gc: report }, 'blob garbage collection');
    });
    ctx.background.every('retention', ctx.config.retentionIntervalMinutes * 60_000, async (lease) => {
      const report = await sweepRetention(ctx, { lease });
      if (report.deleted > 0) ctx.log.info({ retention: { deleted: report.deleted } }, 'retention sweep');
    });
    handleWebhookDeliveries(ctx);
    handleIdleManualRuns(ctx);
    const refresh = setInterval(() => {
      if (ctx.readiness() !== 'ready') return;
      refreshLegacyKeyDigests(ctx).catch((error: unknown) => ctx.log.error({ err: error }, 'reading the old-format key digests failed'));
    }, 60_000);
    refresh.unref();
    const sweep = setInterval(() => {
      if (ctx.readiness() !== 'ready') return;
      requeueExpiredRuns(ctx).catch((error: unknown) =>
        ctx.log.error({ err: error }, 'returning runs with expired leases to the queue failed'),
      );
    }, LEASE_SWEEP_MS);
    sweep.unref();
    app.addHook('onClose', async () => {
      clearInterval(refresh);
      clearInterval(sweep);
    });
  },
  { name: 'attest-upkeep' },
);
