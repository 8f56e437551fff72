import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { AppContext } from '../context.ts';
import { collectGarbage } from '../services/maintenance.ts';

/**
 * Runs blob garbage collection every `gcIntervalMinutes` while the server is up (DUR-10). One run
 * at a time; a failed run is logged and retried at the next tick.
 */
export const blobGcPlugin = fp(
  async (app: FastifyInstance, { ctx }: { ctx: AppContext }) => {
    const intervalMs = ctx.config.gcIntervalMinutes * 60_000;
    if (intervalMs === 0) return;
    let running = false;
    const run = async () => {
      if (running || ctx.readiness() !== 'ready') return;
      running = true;
      try {
        const report = await collectGarbage(ctx, { graceMs: ctx.config.gcGraceMinutes * 60_000 });
        if (report.deleted > 0) ctx.log.info({ gc: report }, 'blob garbage collection');
      } catch (error) {
        ctx.log.error({ err: error }, 'blob garbage collection failed');
      } finally {
        running = false;
      }
    };
    const timer = setInterval(() => void run(), intervalMs);
    timer.unref();
    app.addHook('onClose', async () => clearInterval(timer));
  },
  { name: 'attest-blob-gc' },
);
