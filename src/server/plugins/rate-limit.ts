import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { Config } from '../config.ts';

/**
 * Requests per minute per API key (per address before a key is known), checked after
 * authentication so a key's budget is its own. Open routes are exempt, except the login exchange.
 * The default and its reasoning: docs/configuration.md, "Why 60,000 requests a minute per key".
 */
export const rateLimitPlugin = fp(
  async (app: FastifyInstance, { config }: { config: Config }) => {
    // Disabled means not installed: no per-request counting, no headers.
    if (config.rateLimitPerMinute === 0) return;
    await app.register(rateLimit, {
      global: true,
      hook: 'preValidation',
      max: config.rateLimitPerMinute,
      timeWindow: 60_000,
      keyGenerator: (request) => (request.principal ? `key:${request.principal.key.id}` : `ip:${request.ip}`),
      allowList: (request) => request.routeOptions.config.route?.endpoint.access.scope === 'public' && !request.url.includes('/auth/'),
      errorResponseBuilder: (_request, context) =>
        Object.assign(new Error('rate limited'), { statusCode: 429, retryAfter: Math.ceil(context.ttl / 1000) }),
      addHeaders: { 'x-ratelimit-limit': true, 'x-ratelimit-remaining': true, 'x-ratelimit-reset': true, 'retry-after': true },
    });
  },
  { name: 'attest-rate-limit' },
);
