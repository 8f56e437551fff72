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

  describe(`[${dialect}] real device id shapes (SPEC-1.4 #1)`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer(dialect);
    });
    after(() => server.close());

    // Ids are whatever the lab reports, compared exactly: unlike our own UUID ids (lower-cased
    // before lookup, src/server/app.ts normaliseIds), a device id in another letter case is
    // another device, so an upper-case simulator UUID does not answer to its lower-case form.
    const shapes: { shape: string; id: string; platform: 'android' | 'ios' }[] = [
      { shape: 'Android serial', id: 'R58M41ABCDE', platform: 'android' },
      { shape: 'adb host:port serial', id: '192.168.1.20:5555', platform: 'android' },
      { shape: 'emulator serial', id: 'emulator-5554', platform: 'android' },
      { shape: 'iOS UDID', id: '00008110-001A2B3C4D5E801E', platform: 'ios' },
      { shape: 'legacy 40-hex iOS UDID', id: 'a1b2c3d4e5f60718293a4b5c6d7e8f9012345678', platform: 'ios' },
      { shape: 'upper-case simulator UUID', id: '6A2F4E7C-9B1D-4C3E-8F5A-0D1E2F3A4B5C', platform: 'ios' },
    ];
    /** The id with its letter case flipped, or undefined when it has no letters. */
    const otherCase = (id: string) => {
      const flipped = [...id].map((c) => (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase())).join('');
      return flipped === id ? undefined : flipped;
    };
    const notFound = (e: ApiError) => e.status === 404 && e.code === 'NOT_FOUND';

    for (const { shape, id, platform } of shapes) {
      test(`${shape} ${id}: register, GET, PATCH and DELETE address it exactly`, async () => {
        const admin = server.admin.client;
        const created = await admin.call(v1.devices.registerDevice, { body: { id, name: shape, platform, labels: ['shape'] } });
        assert.equal(created.id, id);
        assert.equal((await admin.call(v1.devices.getDevice, { params: { deviceId: id } })).id, id);
        // Sent without percent-encoding too (a `:` stays literal in a path), as hand-written clients do.
        const raw = await admin.fetchRaw('GET', `/device/devices/${id}`);
        assert.equal(raw.status, 200, `unencoded path: ${await raw.clone().text()}`);
        assert.equal(((await raw.json()) as { id: string }).id, id);
        const listed = await admin.call(v1.devices.listDevices, { query: { platform, label: 'shape' } });
        assert.ok(
          listed.items.some((d) => d.id === id),
          'listed under its exact id',
        );

        const flipped = otherCase(id);
        if (flipped !== undefined) {
          await assert.rejects(admin.call(v1.devices.getDevice, { params: { deviceId: flipped } }), notFound, `GET ${flipped}`);
          await assert.rejects(
            admin.call(v1.devices.updateDevice, { params: { deviceId: flipped }, body: { status: 'offline' } }),
            notFound,
            `PATCH ${flipped}`,
          );
          await assert.rejects(admin.call(v1.devices.deleteDevice, { params: { deviceId: flipped } }), notFound, `DELETE ${flipped}`);
          // Registering the other letter case is another device, not a duplicate of this one.
          const twin = await admin.call(v1.devices.registerDevice, { body: { id: flipped, name: 'twin', platform } });
          assert.equal(twin.id, flipped);
          await admin.call(v1.devices.deleteDevice, { params: { deviceId: flipped } });
        }

        const updated = await admin.call(v1.devices.updateDevice, {
          params: { deviceId: id },
          body: { name: `${shape} (renamed)`, status: 'maintenance' },
        });
        assert.equal(updated.id, id);
        assert.equal(updated.name, `${shape} (renamed)`);
        assert.equal(updated.status, 'maintenance', 'the earlier PATCH of the other letter case changed nothing');
        assert.equal((await admin.call(v1.devices.getDevice, { params: { deviceId: id } })).status, 'maintenance');

        await admin.call(v1.devices.deleteDevice, { params: { deviceId: id } });
        await assert.rejects(admin.call(v1.devices.getDevice, { params: { deviceId: id } }), notFound);
        await assert.rejects(admin.call(v1.devices.deleteDevice, { params: { deviceId: id } }), notFound, 'a second DELETE');
      });
    }

    test('a lower-cased simulator UUID answers 404 to a viewer too, while the upper-case one answers', async () => {
      const id = '0F1E2D3C-4B5A-4697-8877-66554433AA22';
      await server.admin.client.call(v1.devices.registerDevice, { body: { id, name: 'iPhone 15 Simulator', platform: 'ios' } });
      const viewer = await createUser(server, ['viewer']);
      assert.equal((await viewer.client.call(v1.devices.getDevice, { params: { deviceId: id } })).id, id);
      await assert.rejects(viewer.client.call(v1.devices.getDevice, { params: { deviceId: id.toLowerCase() } }), notFound);
    });
  });
}
