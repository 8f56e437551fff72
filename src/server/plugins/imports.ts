import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { AppContext } from '../context.ts';
import { handleImportTasks } from '../services/import-tasks.ts';

/**
 * Imports in the background (IMP-4) and the background task runner itself (SCALE-5): the writing
 * of imports is registered with the runner, which starts claiming tasks once the instance is ready
 * (this plugin is registered last, so every plugin has registered its kinds by then). Imports a
 * crashed instance left unfinished need no resuming here: their tasks are in the database, and
 * the first instance to find their lease run out claims them. A stop lets the running batch commit
 * first, and gives the task back.
 */
export const importsPlugin = fp(
  async (app: FastifyInstance, { ctx }: { ctx: AppContext }) => {
    handleImportTasks(ctx);
    app.addHook('onReady', async () => {
      ctx.background.start();
    });
    app.addHook('preClose', async () => {
      await ctx.background.stop();
    });
  },
  { name: 'attest-imports' },
);
