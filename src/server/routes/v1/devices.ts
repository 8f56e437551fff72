import type { FastifyReply } from 'fastify';
import * as api from '../../../api/v1/devices.ts';
import type { AppContext } from '../../context.ts';
import { presentDevice } from '../../presenters/devices.ts';
import { deleteDevice, getDevice, listDevices, registerDevice, updateDevice } from '../../services/devices.ts';
import { pageOf, route } from '../route.ts';

/** A device answer serialised before: sent as it is. */
const sendJsonText = (reply: FastifyReply, text: string) => reply.type('application/json; charset=utf-8').send(text);

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
    // sends the text serialised by the route's own schema, built once, after the access hooks. A
    // kept answer goes out in the same tick, with no promise (5% of the read's CPU when it was an
    // async handler); anything else waits for the database.
    route(api.getDevice, {
      handler: (request, reply) => {
        const { deviceId } = request.params;
        const kept = ctx.deviceAnswers.get(deviceId);
        if (kept !== undefined) return sendJsonText(reply, kept);
        const ticket = ctx.deviceAnswers.ticket();
        return getDevice(ctx, deviceId).then((device) => {
          const text = reply.serialize(presentDevice(device)) as string;
          ctx.deviceAnswers.store(deviceId, text, ticket);
          return sendJsonText(reply, text);
        });
      },
    }),

    route(api.updateDevice, {
      handler: async (request) => presentDevice(await updateDevice(ctx, request.params.deviceId, request.body)),
    }),

    route(api.deleteDevice, {
      handler: async (request, reply) => {
        await deleteDevice(ctx, request.params.deviceId);
        return reply.code(204).send();
      },
    }),
  ];
}
