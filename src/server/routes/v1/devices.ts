import * as api from '../../../api/v1/devices.ts';
import type { AppContext } from '../../context.ts';
import { presentDevice } from '../../presenters/devices.ts';
import { deleteDevice, getDevice, listDevices, registerDevice, updateDevice } from '../../services/records/devices.ts';
import { noContent, pageOf, route } from '../route.ts';

export function deviceRoutes(ctx: AppContext) {
  return [
    route(api.listDevices, {
      handler: async (request) => {
        const { status, platform, label } = request.query;
        const page = await listDevices(ctx, { status, platform, label }, pageOf(ctx.config, request.query));
        return { items: page.items.map(presentDevice), nextCursor: page.nextCursor };
      },
    }),

    route(api.registerDevice, {
      handler: async (request, reply) => {
        const device = await registerDevice(ctx, request.body);
        reply.code(201);
        return presentDevice(device);
      },
    }),

    // Devices change only through the writes below, which forget the kept answer (PERF-5): a read
    // sends the text serialised by the route's own schema, built once, after the access hooks.
    route(api.getDevice, {
      keeps: { in: ctx.deviceAnswers, key: (request) => request.params.deviceId },
      handler: async (request) => presentDevice(await getDevice(ctx, request.params.deviceId)),
    }),

    route(api.updateDevice, {
      handler: async (request) => presentDevice(await updateDevice(ctx, request.params.deviceId, request.body)),
    }),

    route(api.deleteDevice, {
      handler: async (request, reply) => {
        await deleteDevice(ctx, request.params.deviceId);
        return noContent(reply);
      },
    }),
  ];
}
