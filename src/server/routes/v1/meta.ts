import { v1Endpoints } from '../../../api/v1/index.ts';
import * as api from '../../../api/v1/meta.ts';
import type { AppContext } from '../../context.ts';
import { AppError } from '../../errors.ts';
import { buildOpenApiDocument } from '../../openapi.ts';
import { verifyPassword } from '../../security/password.ts';
import { unauthenticated } from '../../services/authenticate.ts';
import { createApiKey, findActiveUser } from '../../services/users.ts';
import { APP_VERSION } from '../../version.ts';
import { route } from '../route.ts';

export function metaRoutes(ctx: AppContext) {
  const openApiText = JSON.stringify(buildOpenApiDocument(v1Endpoints, { version: 'v1', appVersion: APP_VERSION }));
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
        try {
          await ctx.database.ping();
        } catch (error) {
          ctx.log.error({ err: error }, 'readiness: database check failed');
          throw new AppError('UNAVAILABLE', 'The database does not answer.', { headers: { 'retry-after': '5' } });
        }
        reply.code(200);
        return { status, database: ctx.dialect };
      },
    }),

    route(api.getOpenApi, {
      handler: async (_request, reply) => reply.type('application/json; charset=utf-8').send(openApiText),
    }),

    route(api.getMe, {
      handler: async (request) => {
        const { principal } = request;
        const projectIds =
          principal.projects === 'all'
            ? (await ctx.db.selectFrom('project_members').select('project_id').where('user_id', '=', principal.user.id).execute()).map(
                (m) => m.project_id,
              )
            : [...principal.projects];
        return {
          id: principal.user.id,
          email: principal.user.email,
          name: principal.user.name,
          roles: principal.user.roles,
          role: principal.role,
          key: principal.key,
          projectIds,
        };
      },
    }),

    route(api.login, {
      handler: async (request) => {
        const subject = `ip:${request.ip}`;
        const wait = ctx.authFailures.retryAfter(subject);
        if (wait > 0) {
          throw new AppError('RATE_LIMITED', 'Too many failed logins; retry after the time in Retry-After.', {
            headers: { 'retry-after': String(wait) },
          });
        }
        const user = await findActiveUser(ctx.db, request.body.email);
        const valid = await verifyPassword(request.body.password, user?.password_hash);
        if (!user || !valid) {
          ctx.authFailures.recordFailure(subject);
          throw unauthenticated();
        }
        const { row, secret } = await createApiKey(
          ctx,
          user,
          { name: 'web session', format: 'session' },
          { userId: user.id, requestId: request.id },
        );
        return { key: secret, keyId: row.id, expiresAt: row.expires_at as string };
      },
    }),
  ];
}
