import * as api from '../../../api/v1/users.ts';
import type { AppContext, Principal } from '../../context.ts';
import type { UsersTable } from '../../db/types.ts';
import { AppError, notFound } from '../../errors.ts';
import { keysetPage } from '../../pagination.ts';
import { presentApiKey, presentAuditEntry, presentUser } from '../../presenters/identity.ts';
import { normaliseEmail } from '../../security/api-key.ts';
import { createApiKey, createUser, deleteUser, requireActiveUser, revokeApiKey, setPassword, setRoles } from '../../services/users.ts';
import { route } from '../route.ts';

/**
 * The user an admin-or-self route addresses. Non-admins may only address themselves; any other
 * e-mail answers 404 whether or not it belongs to someone, so e-mails cannot be probed.
 */
async function selfOrAdmin(ctx: AppContext, principal: Principal, email: string): Promise<UsersTable> {
  if (principal.role !== 'admin' && normaliseEmail(email) !== principal.user.email) throw notFound('The user');
  return requireActiveUser(ctx.db, email);
}

export function userRoutes(ctx: AppContext) {
  return [
    route(api.listUsers, {
      handler: async (request) => {
        const { cursor, limit, role, email } = request.query;
        let query = ctx.db.selectFrom('users').selectAll().where('deleted_at', 'is', null);
        if (role) query = query.where('roles', 'like', `%"${role}"%`);
        if (email) query = query.where('email', 'like', `%${normaliseEmail(email).replace(/[%_\\]/g, '')}%`);
        const page = await keysetPage(ctx, query, { columns: ['email', 'id'], direction: 'asc', cursor, limit });
        return { items: page.items.map(presentUser), nextCursor: page.nextCursor };
      },
    }),

    route(api.createUser, {
      handler: async (request, reply) => {
        const user = await createUser(ctx, request.body, { userId: request.principal.user.id, requestId: request.id });
        reply.code(201);
        return presentUser(user);
      },
    }),

    route(api.getUser, {
      handler: async (request) => presentUser(await selfOrAdmin(ctx, request.principal, request.params.email)),
    }),

    route(api.setUserRoles, {
      handler: async (request) =>
        presentUser(
          await setRoles(ctx, request.params.email, request.body.roles, { userId: request.principal.user.id, requestId: request.id }),
        ),
    }),

    route(api.setUserPassword, {
      handler: async (request, reply) => {
        const user = await selfOrAdmin(ctx, request.principal, request.params.email);
        await setPassword(ctx, user, request.body.password, { userId: request.principal.user.id, requestId: request.id });
        return reply.code(204).send();
      },
    }),

    route(api.deleteUser, {
      handler: async (request, reply) => {
        await deleteUser(ctx, request.params.email, { userId: request.principal.user.id, requestId: request.id });
        return reply.code(204).send();
      },
    }),

    route(api.listApiKeys, {
      handler: async (request) => {
        const user = await selfOrAdmin(ctx, request.principal, request.params.email);
        const { cursor, limit, includeRevoked, unusedForDays } = request.query;
        let query = ctx.db.selectFrom('api_keys').selectAll().where('user_id', '=', user.id).where('format', '!=', 'session');
        if (!includeRevoked) query = query.where('revoked_at', 'is', null);
        if (unusedForDays !== undefined) {
          const since = new Date(ctx.clock().getTime() - unusedForDays * 86_400_000).toISOString();
          query = query.where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', since)]));
        }
        const page = await keysetPage(ctx, query, { columns: ['created_at', 'id'], direction: 'desc', cursor, limit });
        return { items: page.items.map(presentApiKey), nextCursor: page.nextCursor };
      },
    }),

    route(api.createApiKey, {
      handler: async (request, reply) => {
        const user = await selfOrAdmin(ctx, request.principal, request.params.email);
        const { name, format = 'standard', value, scope, expiresAt } = request.body;
        if ((format === 'legacy' || value !== undefined) && request.principal.role !== 'admin') {
          throw new AppError('FORBIDDEN', 'Only admins create or import old-format keys.');
        }
        if (value !== undefined && format !== 'legacy') {
          throw new AppError('INVALID_INPUT', '/body/value: only old-format keys can be imported; set format to legacy', {
            errors: [{ pointer: '/body/value', message: 'only old-format keys can be imported; set format to legacy' }],
          });
        }
        const { row, secret } = await createApiKey(
          ctx,
          user,
          { name, format, value, scope, expiresAt },
          {
            userId: request.principal.user.id,
            requestId: request.id,
          },
        );
        reply.code(201);
        return { ...presentApiKey(row), key: secret };
      },
    }),

    route(api.revokeApiKey, {
      handler: async (request, reply) => {
        const user = await selfOrAdmin(ctx, request.principal, request.params.email);
        await revokeApiKey(ctx, user, request.params.keyId, { userId: request.principal.user.id, requestId: request.id });
        return reply.code(204).send();
      },
    }),

    route(api.listAuditLog, {
      handler: async (request) => {
        const { cursor, limit, action, targetId } = request.query;
        let query = ctx.db.selectFrom('audit_log').selectAll();
        if (action) query = query.where('action', '=', action);
        if (targetId) query = query.where('target_id', '=', targetId);
        const page = await keysetPage(ctx, query, { columns: ['at', 'id'], direction: 'desc', cursor, limit });
        return { items: page.items.map(presentAuditEntry), nextCursor: page.nextCursor };
      },
    }),
  ];
}
