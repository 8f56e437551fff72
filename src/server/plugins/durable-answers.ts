import type { FastifyInstance, FastifyRequest, onSendHookHandler } from 'fastify';
import fp from 'fastify-plugin';
import type { AppContext } from '../context.ts';
import { AppError } from '../errors.ts';

/**
 * "Acknowledged means durable" (DUR-14): the answer to a request that may write (any method but
 * GET and HEAD) is sent only once everything committed before it is on disk. The database groups
 * the syncs, so concurrent writes share one; when nothing was committed since the last sync the
 * wait is a resolved promise. GET and HEAD routes get no hook at all, so reads never wait.
 */
export const durableAnswersPlugin = fp(
  async (app: FastifyInstance, { ctx }: { ctx: AppContext }) => {
    const failed = new WeakSet<FastifyRequest>();
    const waitForDisk: onSendHookHandler = async (request, _reply, payload) => {
      // The problem answer for a failed sync passes through this hook again; it acknowledges nothing.
      if (failed.has(request)) return payload;
      try {
        await ctx.database.durable();
      } catch (error) {
        failed.add(request);
        request.log.error({ err: error }, 'a write could not be made durable');
        throw new AppError('UNAVAILABLE', 'The storage failed; the write may not have been kept. Retry later.', {
          headers: { 'retry-after': '5' },
        });
      }
      return payload;
    };
    app.addHook('onRoute', (route) => {
      const methods = Array.isArray(route.method) ? route.method : [route.method];
      if (methods.every((method) => method === 'GET' || method === 'HEAD')) return;
      const own = route.onSend;
      route.onSend = own === undefined ? [waitForDisk] : [...(Array.isArray(own) ? own : [own]), waitForDisk];
    });
  },
  { name: 'attest-durable-answers' },
);
