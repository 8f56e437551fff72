import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { AppContext } from '../context.ts';
import { sweepRetention } from '../services/retention.ts';

/**
 * Sweeps expired runs every `retentionIntervalMinutes` while the server is up (RET-2): one sweep
 * at a time in this process, and across instances one at a time through the database's lock. A
 * failed sweep is logged and tried again at the next tick; garbage collection then frees the bytes.
 */
export const retentionPlugin = fp(
  async (app: FastifyInstance, { ctx }: { ctx: AppContext }) => {
    const intervalMs = ctx.config.retentionIntervalMinutes * 60_000;
    if (intervalMs === 0) return;
    let running = false;
    const run = async () => {
      if (running || ctx.readiness() !== 'ready') return;
      running = true;
      try {
        const report = await sweepRetention(ctx);
        if (report.deleted > 0) ctx.log.info({ retention: { deleted: report.deleted } }, 'retention sweep');
      } catch (error) {
        ctx.log.error({ err: error }, 'retention sweep failed');
      } finally {
        running = false;
      }
    };
    const timer = setInterval(() => void run(), intervalMs);
    timer.unref();
    app.addHook('onClose', async () => clearInterval(timer));
  },
  { name: 'attest-retention' },
);
