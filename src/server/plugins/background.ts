import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { AppContext } from '../context.ts';
import { registerBackgroundTasks } from '../services/background-tasks.ts';

/**
 * The background task runner (SCALE-5): every kind of task is registered from the one catalogue
 * (services/background-tasks.ts), then the runner starts claiming once the instance is ready.
 * Work a crashed instance left unfinished needs no resuming here: its tasks are in the database, and
 * the first instance to find their lease run out claims them. A stop lets the running batch commit
 * first, and gives the task back.
 */
export const backgroundPlugin = fp(
  async (app: FastifyInstance, { ctx }: { ctx: AppContext }) => {
    registerBackgroundTasks(ctx);
    app.addHook('onReady', async () => {
      ctx.background.start();
    });
    app.addHook('preClose', async () => {
      await ctx.background.stop();
    });
  },
  { name: 'attest-background' },
);
