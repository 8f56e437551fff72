import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { type AppContext, refreshLegacyKeyDigests } from '../context.ts';
import { collectGarbage } from '../services/maintenance.ts';
import { sweepRetention } from '../services/retention.ts';

/**
 * Runs `task` every `minutes` while the server is up and ready (0: never): one run at a time; a
 * failed run is logged and tried again at the next tick.
 */
function every(app: FastifyInstance, ctx: AppContext, minutes: number, what: string, task: () => Promise<void>): void {
  if (minutes === 0) return;
  let running = false;
  const run = async () => {
    if (running || ctx.readiness() !== 'ready') return;
    running = true;
    try {
      await task();
    } catch (error) {
      ctx.log.error({ err: error }, `${what} failed`);
    } finally {
      running = false;
    }
  };
  const timer = setInterval(() => void run(), minutes * 60_000);
  timer.unref();
  app.addHook('onClose', async () => clearInterval(timer));
}

/**
 * The server's own upkeep on timers: blob garbage collection every `gcIntervalMinutes` (DUR-10),
 * the old-format key digests the request log masks by every minute (SEC-2a), and the retention
 * sweep every `retentionIntervalMinutes` (RET-2; across instances one sweeps at a time, through the
 * database's lock). Garbage collection then frees what the sweep deleted.
 */
export const upkeepPlugin = fp(
  async (app: FastifyInstance, { ctx }: { ctx: AppContext }) => {
    every(app, ctx, ctx.config.gcIntervalMinutes, 'blob garbage collection', async () => {
      const report = await collectGarbage(ctx, { graceMs: ctx.config.gcGraceMinutes * 60_000 });
      if (report.deleted > 0 || report.removedFolders > 0) ctx.log.info({ gc: report }, 'blob garbage collection');
    });
    every(app, ctx, 1, 'reading the old-format key digests', () => refreshLegacyKeyDigests(ctx));
    every(app, ctx, ctx.config.retentionIntervalMinutes, 'retention sweep', async () => {
      const report = await sweepRetention(ctx);
      if (report.deleted > 0) ctx.log.info({ retention: { deleted: report.deleted } }, 'retention sweep');
    });
  },
  { name: 'attest-upkeep' },
);
