import type { BodyOf } from '../../../api/endpoint.ts';
import type { registerDevice as registerDeviceEndpoint, updateDevice as updateDeviceEndpoint } from '../../../api/v1/devices.ts';
import type { ServiceContext } from '../../context.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import type { Page, PageRequest } from '../../db/pagination.ts';
import {
  type DeviceFilter,
  deleteDevice as deleteDeviceRow,
  findDevice,
  findDeviceId,
  insertDevice,
  listDevices as listDeviceRows,
  replaceDeviceLabels,
  updateDevice as updateDeviceRow,
} from '../../db/repositories/devices.ts';
import { inTransaction } from '../../db/repositories/transaction.ts';
import type { DevicesTable } from '../../db/types.ts';
import { AppError, found, notFound } from '../../errors.ts';

export type RegisterDeviceInput = BodyOf<typeof registerDeviceEndpoint>;
export type UpdateDeviceInput = BodyOf<typeof updateDeviceEndpoint>;

export const getDevice = async (ctx: ServiceContext, deviceId: string): Promise<DevicesTable> =>
  found(await findDevice(ctx.db, deviceId), 'The device');

export const listDevices = (ctx: ServiceContext, filter: DeviceFilter, page: PageRequest): Promise<Page<DevicesTable>> =>
  listDeviceRows(ctx.db, filter, page);

/** Registers a device under its own id (serial, UDID); an id already registered is a 409. */
export async function registerDevice(ctx: ServiceContext, input: RegisterDeviceInput): Promise<DevicesTable> {
  const now = ctx.clock().toISOString();
  const row: DevicesTable = {
    id: input.id,
    name: input.name,
    platform: input.platform,
    os_version: input.osVersion ?? null,
    model: input.model ?? null,
    manufacturer: input.manufacturer ?? null,
    status: input.status ?? 'available',
    labels: JSON.stringify(input.labels ?? []),
    last_seen_at: null,
    created_at: now,
    updated_at: now,
  };
  const duplicate = () => new AppError('ALREADY_EXISTS', `A device with id ${row.id} is already registered.`);
  try {
    await inTransaction(ctx.db, async (trx) => {
      if (await findDeviceId(trx, row.id)) throw duplicate();
      await insertDevice(trx, row);
      await replaceDeviceLabels(trx, row.id, input.labels ?? []);
    });
  } catch (error) {
    // Two concurrent registrations of one id: the primary key decides, the loser gets 409.
    if (isUniqueViolation(error)) throw duplicate();
    throw error;
  }
  return row;
}

/**
 * Applies the fields given and returns the device as stored; labels given replace the old ones.
 * Updates and deletions forget the device's kept answer once they are done (PERF-5).
 */
export async function updateDevice(ctx: ServiceContext, deviceId: string, input: UpdateDeviceInput): Promise<DevicesTable> {
  return writingDevice(ctx, deviceId, () =>
    inTransaction(ctx.db, async (trx) => {
      const current = found(await findDevice(trx, deviceId), 'The device');
      const changes: Partial<DevicesTable> = { updated_at: ctx.clock().toISOString() };
      if (input.name !== undefined) changes.name = input.name;
      if (input.platform !== undefined) changes.platform = input.platform;
      if (input.osVersion !== undefined) changes.os_version = input.osVersion;
      if (input.model !== undefined) changes.model = input.model;
      if (input.manufacturer !== undefined) changes.manufacturer = input.manufacturer;
      if (input.status !== undefined) changes.status = input.status;
      if (input.lastSeenAt !== undefined)
        changes.last_seen_at = input.lastSeenAt === null ? null : new Date(input.lastSeenAt).toISOString();
      if (input.labels !== undefined) {
        changes.labels = JSON.stringify(input.labels);
        await replaceDeviceLabels(trx, current.id, input.labels);
      }
      await updateDeviceRow(trx, current.id, changes);
      return { ...current, ...changes };
    }),
  );
}

/**
 * Runs a write to one device and forgets the device's kept answer after it (PERF-5), whether it
 * committed or failed (a rollback only costs a miss), so the very next request reads what is stored.
 */
async function writingDevice<T>(ctx: ServiceContext, deviceId: string, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } finally {
    ctx.changes.emit({ kind: 'device-written', deviceId });
  }
}

/** Removes a device from the lab; runs keep their history. */
export async function deleteDevice(ctx: ServiceContext, deviceId: string): Promise<void> {
  if (!(await writingDevice(ctx, deviceId, () => deleteDeviceRow(ctx.db, deviceId)))) throw notFound('The device');
}
