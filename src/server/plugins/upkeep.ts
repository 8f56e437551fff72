import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { AppContext } from '../context.ts';
import { blobGcPlugin } from './blob-gc.ts';
import { retentionPlugin } from './retention.ts';

/** The server's own upkeep on timers: blob garbage collection (DUR-10) and the retention sweep (RET-2). */
export const upkeepPlugin = fp(
  async (app: FastifyInstance, { ctx }: { ctx: AppContext }) => {
    await app.register(blobGcPlugin, { ctx });
    await app.register(retentionPlugin, { ctx });
  },
  { name: 'attest-upkeep' },
);
