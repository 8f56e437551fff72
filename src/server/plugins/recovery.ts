import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { AppContext } from '../context.ts';
import { markClosed, markOpen, stoppedUncleanly } from '../db/clean-stop.ts';

/**
 * Start-up recovery (DUR-9), after the database took the data folder's lock (DUR-3) and before the
 * instance reports ready, and the matching clean stop: the database closes, then the open marker
 * goes, so only a stop that closed everything counts as clean.
 */
export const recoveryPlugin = fp(
  async (app: FastifyInstance, { ctx }: { ctx: AppContext }) => {
    const { database, config } = ctx;
    const embedded = database.dialect === 'sqlite';
    app.addHook('onClose', async () => {
      await database.close();
      if (embedded) markClosed(config.dataDir);
    });
    // The whole-file check reads every page (seconds on a large database), so it runs only when the
    // previous server did not close the folder; `attest verify` runs the full check on demand.
    if (!embedded || stoppedUncleanly(config.dataDir)) await database.check();
    else app.log.info('no unclean stop on record: start-up integrity check skipped');
    if (embedded) markOpen(config.dataDir);
    // Uploads a previous process left unfinished are deleted. In a bucket that is housekeeping, not
    // safety (a leftover temp object is never referenced, and the next start or a lifecycle rule
    // removes it): a store that is down or refuses the listing does not stop the start, and the
    // instance reports not ready while the store does not answer (SCALE-7).
    try {
      const recovered = await ctx.blobs.recover();
      app.log.info({ blobs: ctx.blobs.location, removedTempFiles: recovered.removedTempFiles }, 'blob store recovered');
    } catch (error) {
      if (ctx.blobs.kind !== 's3') throw error;
      app.log.warn({ err: error, blobs: ctx.blobs.location }, 'leftover uploads in the bucket were not cleaned up at start');
    }
  },
  { name: 'attest-recovery' },
);
