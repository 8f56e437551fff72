import { chunk, IN_LIST_SIZE } from '../chunks.ts';
import { compiledOnce } from '../compiled-once.ts';
import { keysetPage, type Page, type PageRequest } from '../pagination.ts';
import type { DeviceLabelsTable, DevicesTable, Executor } from '../types.ts';

// Queries of devices and their labels. `devices.labels` keeps the list as given (for reading);
// `device_labels` holds one row per label (for matching). Writers keep the two in step.

/** One device by id; compiled once (`GET /device/devices/{id}` runs it on every request). */
export const findDevice: (executor: Executor, deviceId: string) => Promise<DevicesTable | undefined> = compiledOnce(
  (executor, deviceId: string) => executor.selectFrom('devices').selectAll().where('id', '=', deviceId).limit(1),
);

/** The device's id when it is registered. */
export async function findDeviceId(executor: Executor, deviceId: string): Promise<string | undefined> {
  return (await executor.selectFrom('devices').select('id').where('id', '=', deviceId).executeTakeFirst())?.id;
}

/** Which of `deviceIds` are registered. */
export async function knownDeviceIds(executor: Executor, deviceIds: readonly string[]): Promise<Set<string>> {
  const known = new Set<string>();
  for (const ids of chunk(deviceIds, IN_LIST_SIZE)) {
    for (const row of await executor.selectFrom('devices').select('id').where('id', 'in', ids).execute()) known.add(row.id);
  }
  return known;
}

/** The (device, label) pairs carrying any of `labels`, by device id. */
export async function deviceIdsWithLabels(executor: Executor, labels: readonly string[]): Promise<DeviceLabelsTable[]> {
  if (labels.length === 0) return [];
  return executor.selectFrom('device_labels').select(['device_id', 'label']).where('label', 'in', labels).orderBy('device_id').execute();
}

export async function insertDevice(executor: Executor, device: DevicesTable): Promise<void> {
  await executor.insertInto('devices').values(device).execute();
}

export async function updateDevice(executor: Executor, deviceId: string, changes: Partial<Omit<DevicesTable, 'id'>>): Promise<void> {
  await executor.updateTable('devices').set(changes).where('id', '=', deviceId).execute();
}

/** Replaces a device's label rows with `labels`. */
export async function replaceDeviceLabels(executor: Executor, deviceId: string, labels: readonly string[]): Promise<void> {
  await executor.deleteFrom('device_labels').where('device_id', '=', deviceId).execute();
  if (labels.length > 0) {
    await executor
      .insertInto('device_labels')
      .values(labels.map((label) => ({ device_id: deviceId, label })))
      .execute();
  }
}

/** Deletes a device (its label rows go with it); false when there was none. */
export async function deleteDevice(executor: Executor, deviceId: string): Promise<boolean> {
  const result = await executor.deleteFrom('devices').where('id', '=', deviceId).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

export interface DeviceFilter {
  status?: string;
  platform?: string;
  /** Only devices carrying this label. */
  label?: string;
}

/** Devices by id, narrowed by every filter given. */
export async function listDevices(executor: Executor, filter: DeviceFilter, page: PageRequest): Promise<Page<DevicesTable>> {
  let query = executor.selectFrom('devices').selectAll();
  if (filter.status) query = query.where('status', '=', filter.status);
  if (filter.platform) query = query.where('platform', '=', filter.platform);
  const label = filter.label;
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
  return keysetPage(query, { columns: ['id'], direction: 'asc' }, page);
}
