import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { AppContext } from '../context.ts';
import { resumeImports } from '../services/imports.ts';

/**
 * Imports in the background (IMP-4): once the instance is ready, the imports a previous process
 * acknowledged but did not finish are queued again; a stop lets the running batch commit first.
 */
export const importsPlugin = fp(
  async (app: FastifyInstance, { ctx }: { ctx: AppContext }) => {
    app.addHook('onReady', async () => {
      const resumed = await resumeImports(ctx);
      if (resumed > 0) app.log.info({ imports: resumed }, 'unfinished imports resumed');
    });
    app.addHook('preClose', async () => {
      await ctx.background.stop();
    });
  },
  { name: 'attest-imports' },
);
