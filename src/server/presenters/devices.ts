import type { Static } from 'typebox';
import type { Device } from '../../api/v1/devices.ts';
import type { DevicesTable } from '../db/types.ts';

export function presentDevice(row: DevicesTable): Static<typeof Device> {
  return {
    id: row.id,
    name: row.name,
    platform: row.platform as Static<typeof Device>['platform'],
    osVersion: row.os_version,
    model: row.model,
    manufacturer: row.manufacturer,
    status: row.status as Static<typeof Device>['status'],
    labels: JSON.parse(row.labels) as string[],
    lastSeenAt: row.last_seen_at,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}
