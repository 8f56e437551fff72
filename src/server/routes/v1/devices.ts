import * as api from '../../../api/v1/devices.ts';
import type { AppContext } from '../../context.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import type { DevicesTable, Executor } from '../../db/types.ts';
import { AppError, notFound } from '../../errors.ts';
import { keysetPage } from '../../pagination.ts';
import { presentDevice } from '../../presenters/devices.ts';
import { route } from '../route.ts';

async function replaceLabels(trx: Executor, deviceId: string, labels: string[]): Promise<void> {
  await trx.deleteFrom('device_labels').where('device_id', '=', deviceId).execute();
  if (labels.length > 0)
    await trx
      .insertInto('device_labels')
      .values(labels.map((label) => ({ device_id: deviceId, label })))
      .execute();
}

export function deviceRoutes(ctx: AppContext) {
  const load = async (id: string, executor: Executor = ctx.db): Promise<DevicesTable> => {
    const row = await executor.selectFrom('devices').selectAll().where('id', '=', id).executeTakeFirst();
    if (!row) throw notFound('The device');
    return row;
  };

  return [
    route(api.listDevices, {
      handler: async (request) => {
        const { cursor, limit, status, platform, label } = request.query;
        let query = ctx.db.selectFrom('devices').selectAll();
        if (status) query = query.where('status', '=', status);
        if (platform) query = query.where('platform', '=', platform);
        if (label) {
          query = query.where((eb) =>
            eb.exists(
              eb
                .selectFrom('device_labels')
                .select('device_id')
                .whereRef('device_labels.device_id', '=', 'devices.id')
                .where('label', '=', label),
            ),
          );
        }
        const page = await keysetPage(ctx, query, { columns: ['id'], direction: 'asc', cursor, limit });
        return { items: page.items.map(presentDevice), nextCursor: page.nextCursor };
      },
    }),

    route(api.registerDevice, {
      handler: async (request, reply) => {
        const now = ctx.clock().toISOString();
        const body = request.body;
        const row: DevicesTable = {
          id: body.id,
          name: body.name,
          platform: body.platform,
          os_version: body.osVersion ?? null,
          model: body.model ?? null,
          manufacturer: body.manufacturer ?? null,
          status: body.status ?? 'available',
          labels: JSON.stringify(body.labels ?? []),
          last_seen_at: null,
          created_at: now,
          updated_at: now,
        };
        const duplicate = () => new AppError('ALREADY_EXISTS', `A device with id ${row.id} is already registered.`);
        try {
          await ctx.db.transaction().execute(async (trx) => {
            const existing = await trx.selectFrom('devices').select('id').where('id', '=', row.id).executeTakeFirst();
            if (existing) throw duplicate();
            await trx.insertInto('devices').values(row).execute();
            await replaceLabels(trx, row.id, body.labels ?? []);
          });
        } catch (error) {
          if (isUniqueViolation(error)) throw duplicate();
          throw error;
        }
        reply.code(201);
        return presentDevice(row);
      },
    }),

    route(api.getDevice, { handler: async (request) => presentDevice(await load(request.params.deviceId)) }),

    route(api.updateDevice, {
      handler: async (request) => {
        const body = request.body;
        return presentDevice(
          await ctx.db.transaction().execute(async (trx) => {
            const current = await load(request.params.deviceId, trx);
            const changes: Partial<DevicesTable> = { updated_at: ctx.clock().toISOString() };
            if (body.name !== undefined) changes.name = body.name;
            if (body.platform !== undefined) changes.platform = body.platform;
            if (body.osVersion !== undefined) changes.os_version = body.osVersion;
            if (body.model !== undefined) changes.model = body.model;
            if (body.manufacturer !== undefined) changes.manufacturer = body.manufacturer;
            if (body.status !== undefined) changes.status = body.status;
            if (body.lastSeenAt !== undefined)
              changes.last_seen_at = body.lastSeenAt === null ? null : new Date(body.lastSeenAt).toISOString();
            if (body.labels !== undefined) {
              changes.labels = JSON.stringify(body.labels);
              await replaceLabels(trx, current.id, body.labels);
            }
            await trx.updateTable('devices').set(changes).where('id', '=', current.id).execute();
            return { ...current, ...changes };
          }),
        );
      },
    }),

    route(api.deleteDevice, {
      handler: async (request, reply) => {
        const result = await ctx.db.deleteFrom('devices').where('id', '=', request.params.deviceId).executeTakeFirst();
        if (Number(result.numDeletedRows) === 0) throw notFound('The device');
        return reply.code(204).send();
      },
    }),
  ];
}
