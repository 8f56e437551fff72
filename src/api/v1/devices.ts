import { Type } from 'typebox';
import { LABEL_MAX, LABELS_MAX, NAME_MAX, Name, NoContent, Nullable, Page, PageQuery, Timestamp } from '../common.ts';
import { endpoint } from '../endpoint.ts';

const Platform = Type.Union([
  Type.Literal('android'),
  Type.Literal('ios'),
  Type.Literal('web'),
  Type.Literal('desktop'),
  Type.Literal('other'),
]);
const DeviceStatus = Type.Union([Type.Literal('available'), Type.Literal('busy'), Type.Literal('offline'), Type.Literal('maintenance')]);
/** Serials, UDIDs, emulator names: printable, no slash or whitespace, so it is a safe path segment. */
export const DeviceId = Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9][A-Za-z0-9._:@+=-]*$' });
/** A device label (`android`, `phone`, `lab-2`): no whitespace or comma, so a list of them fits a query. */
export const DeviceLabel = Type.String({ minLength: 1, maxLength: LABEL_MAX, pattern: '^[^\\s,]+$' });
const Labels = Type.Array(DeviceLabel, { maxItems: LABELS_MAX, uniqueItems: true });
const ShortText = Type.String({ maxLength: NAME_MAX });

export const Device = Type.Object(
  {
    id: DeviceId,
    name: ShortText,
    platform: Platform,
    osVersion: Nullable(ShortText),
    model: Nullable(ShortText),
    manufacturer: Nullable(ShortText),
    status: DeviceStatus,
    labels: Labels,
    lastSeenAt: Nullable(Timestamp),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { additionalProperties: false },
);

const DeviceParams = Type.Object({ deviceId: DeviceId }, { additionalProperties: false });

export const listDevices = endpoint({
  operationId: 'listDevices',
  method: 'GET',
  path: '/device/devices',
  summary: 'The device lab, filterable by status, platform and label.',
  tag: 'Devices',
  access: { scope: 'global', role: 'viewer' },
  querystring: Type.Object(
    { ...PageQuery, status: Type.Optional(DeviceStatus), platform: Type.Optional(Platform), label: Type.Optional(DeviceLabel) },
    { additionalProperties: false },
  ),
  responses: { 200: Page(Device) },
});

export const registerDevice = endpoint({
  operationId: 'registerDevice',
  method: 'POST',
  path: '/device/devices',
  summary: 'Register a device under its own id (serial, UDID) (manager).',
  tag: 'Devices',
  access: { scope: 'global', role: 'manager' },
  body: Type.Object(
    {
      id: DeviceId,
      name: Name,
      platform: Platform,
      osVersion: Type.Optional(Nullable(ShortText)),
      model: Type.Optional(Nullable(ShortText)),
      manufacturer: Type.Optional(Nullable(ShortText)),
      status: Type.Optional(DeviceStatus),
      labels: Type.Optional(Labels),
    },
    { additionalProperties: false },
  ),
  responses: { 201: Device },
});

export const getDevice = endpoint({
  operationId: 'getDevice',
  method: 'GET',
  path: '/device/devices/{deviceId}',
  summary: 'Get a device (documented endpoint 1).',
  tag: 'Devices',
  access: { scope: 'global', role: 'viewer' },
  params: DeviceParams,
  responses: { 200: Device },
});

export const updateDevice = endpoint({
  operationId: 'updateDevice',
  method: 'PATCH',
  path: '/device/devices/{deviceId}',
  summary: 'Change a device (manager).',
  tag: 'Devices',
  access: { scope: 'global', role: 'manager' },
  params: DeviceParams,
  body: Type.Object(
    {
      name: Type.Optional(Name),
      platform: Type.Optional(Platform),
      osVersion: Type.Optional(Nullable(ShortText)),
      model: Type.Optional(Nullable(ShortText)),
      manufacturer: Type.Optional(Nullable(ShortText)),
      status: Type.Optional(DeviceStatus),
      labels: Type.Optional(Labels),
      lastSeenAt: Type.Optional(Nullable(Timestamp)),
    },
    { additionalProperties: false, minProperties: 1 },
  ),
  responses: { 200: Device },
});

export const deleteDevice = endpoint({
  operationId: 'deleteDevice',
  method: 'DELETE',
  path: '/device/devices/{deviceId}',
  summary: 'Remove a device from the lab (manager); runs keep their history.',
  tag: 'Devices',
  access: { scope: 'global', role: 'manager' },
  params: DeviceParams,
  responses: { 204: NoContent },
});
