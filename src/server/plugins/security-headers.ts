import cors from '@fastify/cors';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { Config } from '../config.ts';

/** When old-format keys were deprecated: 2026-11-22, as an RFC 9745 `Deprecation` date. */
const LEGACY_KEYS_DEPRECATED = '@1795305600';

/**
 * Headers every answer carries (SEC-8a): a request id, `nosniff`, no referrer; API answers are
 * never framed, run nothing and are not cached unless a route says otherwise. Answers to old-format
 * keys say those are deprecated. CORS only for explicitly configured origins.
 */
export const securityHeadersPlugin = fp(
  async (app: FastifyInstance, { config }: { config: Config }) => {
    if (config.corsOrigins.length > 0) {
      await app.register(cors, {
        origin: config.corsOrigins,
        allowedHeaders: ['content-type', 'accept', 'service.api-token', 'service.user', 'range', 'if-none-match'],
        exposedHeaders: ['x-request-id', 'etag', 'retry-after', 'content-disposition'],
      });
    }
    // Callback style: a hook that never waits need not cost a promise per answer.
    app.addHook('onSend', (request, reply, payload, done) => {
      reply.header('x-request-id', request.id);
      reply.header('x-content-type-options', 'nosniff');
      reply.header('referrer-policy', 'no-referrer');
      if (request.url.startsWith('/api')) {
        reply.header('x-frame-options', 'DENY');
        if (!reply.hasHeader('content-security-policy'))
          reply.header('content-security-policy', "default-src 'none'; frame-ancestors 'none'");
        if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store');
      }
      if (request.principal?.key.format === 'legacy') {
        reply.header('deprecation', LEGACY_KEYS_DEPRECATED);
        reply.header('link', '</docs/api-keys.md#old-format-keys>; rel="deprecation"');
        if (config.legacyKeysSunset) reply.header('sunset', config.legacyKeysSunset.toUTCString());
      }
      done(null, payload);
    });
  },
  { name: 'attest-security-headers' },
);
