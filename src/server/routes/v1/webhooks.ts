import * as api from '../../../api/v1/webhooks.ts';
import type { AppContext } from '../../context.ts';
import { presentCreatedWebhook, presentDelivery, presentDeliveryDetails, presentWebhook } from '../../presenters/webhooks.ts';
import {
  createWebhook,
  deleteWebhook,
  getWebhook,
  getWebhookDelivery,
  listWebhookDeliveries,
  listWebhooks,
  redeliver,
  sendTestEvent,
  updateWebhook,
} from '../../services/webhooks/webhooks.ts';
import { pathProject } from '../owners.ts';
import { noContent, pageOf, route } from '../route.ts';

export function webhookRoutes(ctx: AppContext) {
  // Every webhook route names its project in the path; the service answers 404 for a webhook of another.
  const owner = (request: Parameters<typeof pathProject>[1]) => pathProject(ctx, request);
  return [
    route(api.listWebhooks, {
      owner,
      handler: async (request) => {
        const page = await listWebhooks(ctx, request.projectId, pageOf(ctx.config, request.query));
        return { items: page.items.map(presentWebhook), nextCursor: page.nextCursor };
      },
    }),
    route(api.createWebhook, {
      owner,
      handler: async (request, reply) => {
        const row = await createWebhook(ctx, request.projectId, request.body, { userId: request.principal.user.id, requestId: request.id });
        reply.code(201);
        return presentCreatedWebhook(row);
      },
    }),
    route(api.getWebhook, {
      owner,
      handler: async (request) => presentWebhook(await getWebhook(ctx, request.projectId, request.params.webhookId)),
    }),
    route(api.updateWebhook, {
      owner,
      handler: async (request) =>
        presentWebhook(
          await updateWebhook(ctx, request.projectId, request.params.webhookId, request.body, {
            userId: request.principal.user.id,
            requestId: request.id,
          }),
        ),
    }),
    route(api.deleteWebhook, {
      owner,
      handler: async (request, reply) => {
        await deleteWebhook(ctx, request.projectId, request.params.webhookId, { userId: request.principal.user.id, requestId: request.id });
        return noContent(reply);
      },
    }),
    route(api.listWebhookDeliveries, {
      owner,
      handler: async (request) => {
        const page = await listWebhookDeliveries(ctx, request.projectId, request.params.webhookId, pageOf(ctx.config, request.query));
        return { items: page.items.map(presentDelivery), nextCursor: page.nextCursor };
      },
    }),
    route(api.getWebhookDelivery, {
      owner,
      handler: async (request) =>
        presentDeliveryDetails(await getWebhookDelivery(ctx, request.projectId, request.params.webhookId, request.params.deliveryId)),
    }),
    route(api.redeliverWebhookDelivery, {
      owner,
      handler: async (request, reply) => {
        const view = await redeliver(ctx, request.projectId, request.params.webhookId, request.params.deliveryId);
        reply.code(202);
        return presentDelivery(view);
      },
    }),
    route(api.testWebhook, {
      owner,
      handler: async (request, reply) => {
        const view = await sendTestEvent(ctx, request.projectId, request.params.webhookId);
        reply.code(202);
        return presentDelivery(view);
      },
    }),
  ];
}
