import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { AppContext } from '../context.ts';
import { handleForgeTasks } from '../services/forge.ts';
import { handleIssueTasks } from '../services/issue-links.ts';

/**
 * The integrations' background work (docs/integrations.md): the syncs of jobs' checks with their
 * code host and their sweep (FORGE-2), the refresh of issue links and its sweep (FORGE-6).
 * Registered before the imports plugin, which starts the runner.
 */
export const integrationsPlugin = fp(
  async (_app: FastifyInstance, { ctx }: { ctx: AppContext }) => {
    handleForgeTasks(ctx);
    handleIssueTasks(ctx);
  },
  { name: 'attest-integrations' },
);
