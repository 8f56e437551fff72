import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type ApiError, v1 } from '../../src/client/index.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createUser, unique } from '../helpers/factories.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

for (const dialect of DIALECTS) {
  describe(`[${dialect}] devices`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer(dialect);
    });
    after(() => server.close());

    describe('POST /device/devices', () => {
      test('registers a device under its client-chosen id, and a manager may do it', async () => {
        const manager = await createUser(server, ['manager']);
        const id = `R58M${unique()}`;
        const device = await manager.client.call(v1.devices.registerDevice, {
          body: { id, name: 'Galaxy S23', platform: 'android', osVersion: '14', labels: ['pixel-lab', 'android-14'] },
        });
        assert.equal(device.id, id);
        assert.equal(device.status, 'available');
        assert.deepEqual(device.labels, ['pixel-lab', 'android-14']);
      });

      test('refuses a tester with 403 and registers nothing', async () => {
        const tester = await createUser(server, ['tester']);
        const id = unique('dev-');
        await assert.rejects(
          tester.client.call(v1.devices.registerDevice, { body: { id, name: 'x', platform: 'web' } }),
          (e: ApiError) => e.status === 403,
        );
        await assert.rejects(
          server.admin.client.call(v1.devices.getDevice, { params: { deviceId: id } }),
          (e: ApiError) => e.status === 404,
        );
      });

      test('answers 409 for an id already registered', async () => {
        const id = unique('dev-');
        await server.admin.client.call(v1.devices.registerDevice, { body: { id, name: 'a', platform: 'ios' } });
        await assert.rejects(
          server.admin.client.call(v1.devices.registerDevice, { body: { id, name: 'b', platform: 'ios' } }),
          (e: ApiError) => e.status === 409 && e.code === 'ALREADY_EXISTS',
        );
      });
    });

    describe('GET /device/devices/{deviceId}', () => {
      test('returns an iOS UDID device to a viewer', async () => {
        const udid = '00008110-001A2B3C4D5E801E';
        await server.admin.client.call(v1.devices.registerDevice, {
          body: { id: udid, name: 'iPhone 15', platform: 'ios', model: 'iPhone15,4' },
        });
        const viewer = await createUser(server, ['viewer']);
        const device = await viewer.client.call(v1.devices.getDevice, { params: { deviceId: udid } });
        assert.equal(device.model, 'iPhone15,4');
      });

      test('answers 404 with a problem for an unknown id', async () => {
        await assert.rejects(
          server.admin.client.call(v1.devices.getDevice, { params: { deviceId: 'nope-123' } }),
          (e: ApiError) => e.status === 404 && e.code === 'NOT_FOUND',
        );
      });
    });

    describe('GET /device/devices', () => {
      test('filters by status, platform and label and pages with a cursor', async () => {
        const label = unique('lab-');
        for (let i = 0; i < 5; i++) {
          await server.admin.client.call(v1.devices.registerDevice, {
            body: {
              id: `${label}-${i}`,
              name: `d${i}`,
              platform: i % 2 ? 'android' : 'web',
              status: i === 4 ? 'offline' : 'available',
              labels: [label],
            },
          });
        }
        const first = await server.admin.client.call(v1.devices.listDevices, { query: { label, limit: 2 } });
        assert.equal(first.items.length, 2);
        assert.ok(first.nextCursor);
        const rest = await server.admin.client.call(v1.devices.listDevices, { query: { label, limit: 10, cursor: first.nextCursor } });
        assert.deepEqual(
          [...first.items, ...rest.items].map((d) => d.id),
          [0, 1, 2, 3, 4].map((i) => `${label}-${i}`),
        );
        const android = await server.admin.client.call(v1.devices.listDevices, { query: { label, platform: 'android' } });
        assert.deepEqual(
          android.items.map((d) => d.id),
          [`${label}-1`, `${label}-3`],
        );
        const offline = await server.admin.client.call(v1.devices.listDevices, { query: { label, status: 'offline' } });
        assert.deepEqual(
          offline.items.map((d) => d.id),
          [`${label}-4`],
        );
      });

      test('rejects a limit over the configured maximum with 400 naming the field', async () => {
        await assert.rejects(server.admin.client.call(v1.devices.listDevices, { query: { limit: 100000 } }), (e: ApiError) => {
          assert.equal(e.status, 400);
          assert.equal((e.problem.errors as { pointer: string }[])[0]?.pointer, '/query/limit');
          return true;
        });
      });
    });

    describe('PATCH and DELETE /device/devices/{deviceId}', () => {
      test('updates labels and status, then deletes', async () => {
        const id = unique('dev-');
        await server.admin.client.call(v1.devices.registerDevice, { body: { id, name: 'a', platform: 'desktop', labels: ['old'] } });
        const updated = await server.admin.client.call(v1.devices.updateDevice, {
          params: { deviceId: id },
          body: { status: 'maintenance', labels: ['new'] },
        });
        assert.equal(updated.status, 'maintenance');
        const byNew = await server.admin.client.call(v1.devices.listDevices, { query: { label: 'new' } });
        assert.ok(byNew.items.some((d) => d.id === id));
        const byOld = await server.admin.client.call(v1.devices.listDevices, { query: { label: 'old' } });
        assert.ok(!byOld.items.some((d) => d.id === id));
        await server.admin.client.call(v1.devices.deleteDevice, { params: { deviceId: id } });
        await assert.rejects(
          server.admin.client.call(v1.devices.getDevice, { params: { deviceId: id } }),
          (e: ApiError) => e.status === 404,
        );
      });
    });
  });
}
