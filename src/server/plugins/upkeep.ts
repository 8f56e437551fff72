import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { type AppContext, refreshLegacyKeyDigests } from '../context.ts';
import { requeueExpiredRuns } from '../services/records/run-claims.ts';

/** How often each instance returns runs whose runner lease expired to the queue (SCALE-6). */
const LEASE_SWEEP_MS = 10_000;

/**
 * The server's upkeep on timers of each instance (the background tasks are the background plugin's).
 * The old-format key digests the request log masks by (SEC-2a) are this process's memory, so each
 * instance reads them again every minute. Runs whose runner lease expired go back to the queue every
 * 10 seconds (SCALE-6; claims also do it before they pick): a read when no lease expired, one
 * conditional UPDATE when one did, safe on every instance at once, where a periodic task would
 * write its schedule every 10 seconds.
 */
export const upkeepPlugin = fp(
  async (app: FastifyInstance, { ctx }: { ctx: AppContext }) => {
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
