import * as api from '../../../api/v1/users.ts';
import type { AppContext } from '../../context.ts';
import { clientAddress } from '../../http/client-address.ts';
import { presentApiKey, presentAuditEntry, presentUser } from '../../presenters/identity.ts';
import type { Principal } from '../../security/principal.ts';
import { listAuditLog } from '../../services/access/audit.ts';
import {
  type Actor,
  type Caller,
  createUser,
  deleteUser,
  getUser,
  issueApiKey,
  listApiKeys,
  listUsers,
  revokeApiKey,
  setRoles,
  setUserPassword,
} from '../../services/access/users.ts';
import { noContent, pageOf, route } from '../route.ts';

type AuthenticatedRequest = { principal: Principal; id: string; ip: string };

/** The caller of a request, for services that check who addresses whom and record it. */
const callerOf = (request: AuthenticatedRequest): Caller => ({
  principal: request.principal,
  requestId: request.id,
  ip: clientAddress(request),
});
/** Who the audit log names for a change the request makes. */
const actorOf = (request: AuthenticatedRequest): Actor => ({ userId: request.principal.user.id, requestId: request.id });

export function userRoutes(ctx: AppContext) {
  return [
    route(api.listUsers, {
      handler: async (request) => {
        const { role, email } = request.query;
        const page = await listUsers(ctx, { role, email }, pageOf(ctx.config, request.query));
        return { items: page.items.map(presentUser), nextCursor: page.nextCursor };
      },
    }),

    route(api.createUser, {
      handler: async (request, reply) => {
        const user = await createUser(ctx, request.body, actorOf(request));
        reply.code(201);
        return presentUser(user);
      },
    }),

    route(api.getUser, {
      handler: async (request) => presentUser(await getUser(ctx, request.params.email, request.principal)),
    }),

    route(api.setUserRoles, {
      handler: async (request) => presentUser(await setRoles(ctx, request.params.email, request.body.roles, actorOf(request))),
    }),

    route(api.setUserPassword, {
      handler: async (request, reply) => {
        await setUserPassword(ctx, request.params.email, request.body, callerOf(request));
        return noContent(reply);
      },
    }),

    route(api.deleteUser, {
      handler: async (request, reply) => {
        await deleteUser(ctx, request.params.email, actorOf(request));
        return noContent(reply);
      },
    }),

    route(api.listApiKeys, {
      handler: async (request) => {
        const { includeRevoked, unusedForDays } = request.query;
        const page = await listApiKeys(
          ctx,
          request.params.email,
          { includeRevoked, unusedForDays },
          pageOf(ctx.config, request.query),
          request.principal,
        );
        return { items: page.items.map(presentApiKey), nextCursor: page.nextCursor };
      },
    }),

    route(api.createApiKey, {
      handler: async (request, reply) => {
        const { row, secret } = await issueApiKey(ctx, request.params.email, request.body, callerOf(request));
        reply.code(201);
        return { ...presentApiKey(row), key: secret };
      },
    }),

    route(api.revokeApiKey, {
      handler: async (request, reply) => {
        await revokeApiKey(ctx, request.params.email, request.params.keyId, callerOf(request));
        return noContent(reply);
      },
    }),

    route(api.listAuditLog, {
      handler: async (request) => {
        const { action, targetId } = request.query;
        const page = await listAuditLog(ctx, { action, targetId }, pageOf(ctx.config, request.query));
        return { items: page.items.map(presentAuditEntry), nextCursor: page.nextCursor };
      },
    }),
  ];
}
