import { v1Endpoints } from '../../../api/v1/index.ts';
import * as api from '../../../api/v1/meta.ts';
import type { AppContext } from '../../context.ts';
import { AppError } from '../../errors.ts';
import { clientAddress } from '../../http/client-address.ts';
import { publishedDocument } from '../../openapi/document.ts';
import { presentMe } from '../../presenters/identity.ts';
import { logIn } from '../../services/access/authenticate.ts';
import { authMethods, finishSsoLogin, startSsoLogin } from '../../services/access/sso.ts';
import { memberProjectIds } from '../../services/access/users.ts';
import { APP_VERSION } from '../../version.ts';
import { route, sendJsonText } from '../route.ts';

/** `probe`, or a rejection once `ms` have passed without its answer (the probe itself is left to finish). */
async function answeredWithin(probe: Promise<void>, ms: number, what: string): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms);
  });
  try {
    await Promise.race([probe, late]);
  } finally {
    clearTimeout(timer);
  }
}

export function metaRoutes(ctx: AppContext) {
  return [
    route(api.getHealth, { handler: async () => ({ status: 'ok' as const, version: APP_VERSION }) }),

    route(api.getReadiness, {
      handler: async (_request, reply) => {
        const status = ctx.readiness();
        if (status !== 'ready') {
          throw new AppError('UNAVAILABLE', status === 'stopping' ? 'The instance is shutting down.' : 'The instance is still starting.', {
            headers: { 'retry-after': '1' },
          });
        }
        // Start-up recovery ran the full quick_check once (DUR-9); a probe only asks for an answer.
        // Both stores are asked at once; the answer names each one that failed (SCALE-7), or that
        // has not answered within ATTEST_READINESS_TIMEOUT_MS: a database cut off the network never
        // answers at all, and a probe must say so while the balancer still asks (DUR-15).
        const limit = ctx.config.readinessTimeoutMs;
        const [database, blobs] = await Promise.allSettled([
          answeredWithin(ctx.database.ping(), limit, 'the database'),
          answeredWithin(ctx.blobs.ping(), limit, 'the blob store'),
        ]);
        const unreachable = [
          ...(database.status === 'rejected' ? [{ what: 'database' as const, error: database.reason }] : []),
          ...(blobs.status === 'rejected' ? [{ what: 'blob store' as const, error: blobs.reason }] : []),
        ];
        for (const { what, error } of unreachable) ctx.log.error({ err: error }, `readiness: the ${what} does not answer`);
        if (database.status === 'rejected') {
          throw new AppError(
            'UNAVAILABLE',
            `Not ready: the ${unreachable.map((u) => u.what).join(' and the ')} ${unreachable.length > 1 ? 'do' : 'does'} not answer.`,
            {
              headers: { 'retry-after': '5' },
              unreachable: unreachable.map((u) => u.what),
            },
          );
        }
        // Every instance shares the blob store: were its failure to make them not ready, a balancer
        // would take them all out at once and refuse even the requests that need no blob. It is
        // named, the instance stays ready, and the requests that need it answer 503 with
        // Retry-After themselves (SCALE-7, SCALE-10).
        reply.code(200);
        return {
          status,
          database: ctx.dialect,
          blobs: ctx.blobs.kind,
          ...(blobs.status === 'rejected' ? { unreachable: ['blob store' as const] } : {}),
        };
      },
    }),

    route(api.getOpenApi, {
      handler: (_request, reply) => sendJsonText(reply, publishedDocument(v1Endpoints, 'v1').text),
    }),

    route(api.getMe, {
      handler: async (request) => presentMe(request.principal, await memberProjectIds(ctx, request.principal)),
    }),

    route(api.login, {
      handler: async (request) => {
        const { row, secret } = await logIn(ctx, request.body, { ip: clientAddress(request), requestId: request.id });
        return { key: secret, keyId: row.id, expiresAt: row.expires_at as string };
      },
    }),

    route(api.getAuthMethods, { handler: async () => authMethods(ctx) }),

    route(api.startSsoLogin, {
      handler: async (request) => startSsoLogin(ctx, { origin: `${request.protocol}://${request.host}`, ip: clientAddress(request) }),
    }),

    route(api.finishSsoLogin, {
      handler: async (request) => {
        const { row, secret, email } = await finishSsoLogin(ctx, request.body, { requestId: request.id, ip: clientAddress(request) });
        return { key: secret, keyId: row.id, expiresAt: row.expires_at as string, email };
      },
    }),
  ];
}
