import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { AppContext } from '../context.ts';

/**
 * The server's part in the cluster (SCALE-3, SCALE-4): it listens for the other instances'
 * changes (and connects to Redis when the limits count there) before it serves, and stops
 * listening when it closes. On SQLite there is nobody to listen to.
 */
export const clusterPlugin = fp(
  async (app: FastifyInstance, { ctx }: { ctx: AppContext }) => {
    const { cluster } = ctx;
    await cluster.start();
    app.addHook('onClose', () => cluster.close());
    if (cluster.counts !== undefined) {
      app.log.info({ limitsIn: cluster.countsIn }, 'listening for the other instances; the limits count in a store they share');
    }
  },
  { name: 'attest-cluster' },
);
