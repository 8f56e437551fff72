import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { AppContext } from '../context.ts';
import { AppError } from '../errors.ts';
import { clientAddress } from '../http/client-address.ts';
import { type Budget, RequestBudget } from '../security/request-budget.ts';
import { SharedRequestBudget } from '../security/shared-limits.ts';

/**
 * Requests per minute per API key (per address before a key is known), checked after
 * authentication so a key's budget is its own. Open routes are exempt, except the login exchange.
 * Every counted answer says where the budget stands (`X-RateLimit-Limit`, `-Remaining`, `-Reset`
 * in seconds); one over it is 429 `RATE_LIMITED` with `Retry-After`. The default and its
 * reasoning: docs/configuration.md, "Why 60,000 requests a minute per key".
 *
 * One synchronous hook and a map lookup: it runs on every request, and the general-purpose plugin
 * it replaces (@fastify/rate-limit, with awaits at each step) cost about 5% of a cached device
 * read's CPU, and a fifth of a bare Fastify route's throughput (docs/decisions.md). With other
 * instances (SCALE-4) the hook stays synchronous: the budget counts here and exchanges its counts
 * with the shared store every `EXCHANGE_MS` (shared-limits.ts, with the overshoot that allows).
 */
export const rateLimitPlugin = fp(
  async (app: FastifyInstance, { ctx }: { ctx: AppContext }) => {
    const { config } = ctx;
    const { counts, onStoreError } = ctx.cluster;
    // Disabled means not installed: no per-request counting, no headers.
    if (config.rateLimitPerMinute === 0) return;
    const budgetOf = (prefix: string): Budget & { close?: () => void } =>
      counts === undefined
        ? new RequestBudget(config.rateLimitPerMinute, 60_000)
        : new SharedRequestBudget(config.rateLimitPerMinute, 60_000, counts, { prefix, onError: onStoreError });
    // Keys and addresses in budgets of their own: a key's id is used as it is, with no per-request string built.
    const keys = budgetOf('rate:key:');
    const addresses = budgetOf('rate:ip:');
    app.addHook('preClose', async () => {
      keys.close?.();
      addresses.close?.();
    });
    const limit = String(config.rateLimitPerMinute);
    app.addHook('preValidation', (request, reply, done) => {
      const principal = request.principal;
      // A caller with a principal is on a route that needs one; only the others may be exempt.
      if (!principal && request.routeOptions.config.route?.endpoint.access.scope === 'public' && !request.url.includes('/auth/')) {
        done();
        return;
      }
      const nowMs = Date.now();
      const budget = principal ? keys : addresses;
      const window = budget.spend(principal ? principal.key.id : clientAddress(request), nowMs);
      const reset = String(budget.resetSeconds(window, nowMs));
      reply.header('x-ratelimit-limit', limit);
      reply.header('x-ratelimit-remaining', String(budget.remaining(window)));
      reply.header('x-ratelimit-reset', reset);
      if (!budget.exceeded(window)) {
        done();
        return;
      }
      done(new AppError('RATE_LIMITED', 'Too many requests; retry after the time in Retry-After.', { headers: { 'retry-after': reset } }));
    });
  },
  { name: 'attest-rate-limit' },
);
