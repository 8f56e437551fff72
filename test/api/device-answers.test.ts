import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { v1 } from '../../src/client/index.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createUser, unique } from '../helpers/factories.ts';
import { databaseSettled, startTestServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

// PERF-5: a device's answer is serialised once and kept until a write to that device; every
// request still passes the access hooks, and every write is seen by the very next request.

for (const dialect of DIALECTS) {
  describe(`[${dialect}] device answers kept until a write (PERF-5)`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer(dialect);
    });
    after(() => server?.close());

    const url = (id: string) => `${server.url}/api/v1/device/devices/${encodeURIComponent(id)}`;
    const read = (id: string, key = server.admin.key) => fetch(url(id), { headers: { 'service.api-token': key } });
    const device = async (id: string) => (await (await read(id)).json()) as { name: string; platform: string; labels: string[] };

    async function registered(name = 'Pixel 8') {
      const id = unique('R58M-');
      await server.admin.client.call(v1.devices.registerDevice, { body: { id, name, platform: 'android', labels: ['lab-1'] } });
      return id;
    }

    test('a kept answer is the same bytes and headers, and runs no query', async () => {
      const id = await registered();
      const first = await read(id);
      const firstText = await first.text();
      assert.equal(first.status, 200);
      // The admin key's first use of this server is recorded in the background; on a busy
      // PostgreSQL that write can outlast databaseSettled's quiet window, so it is awaited first.
      const db = server.app.attest.db;
      await waitFor(async () => {
        const unrecorded = await db
          .selectFrom('api_keys')
          .innerJoin('users', 'users.id', 'api_keys.user_id')
          .select('api_keys.id')
          .where('users.email', '=', server.admin.email)
          .where('api_keys.last_used_at', 'is', null)
          .execute();
        return unrecorded.length === 0;
      });
      await databaseSettled(server);
      const before = server.app.attest.database.stats.statements;
      const again = await read(id);
      assert.equal(await again.text(), firstText);
      assert.equal(server.app.attest.database.stats.statements - before, 0, 'the second read ran a query');
      for (const header of ['content-type', 'content-length', 'cache-control', 'x-content-type-options', 'content-security-policy'])
        assert.equal(again.headers.get(header), first.headers.get(header), header);
      assert.deepEqual(JSON.parse(firstText), await server.admin.client.call(v1.devices.getDevice, { params: { deviceId: id } }));
    });

    test('an update is in the very next answer, labels included', async () => {
      const id = await registered();
      assert.equal((await device(id)).name, 'Pixel 8');
      for (const bench of [2, 3]) {
        const name = `Pixel 8 (bench ${bench})`;
        await server.admin.client.call(v1.devices.updateDevice, { params: { deviceId: id }, body: { name, labels: [`bench-${bench}`] } });
        const updated = await device(id);
        assert.equal(updated.name, name);
        assert.deepEqual(updated.labels, [`bench-${bench}`]);
      }
    });

    test('a deletion answers 404 on the very next request, and a new registration its own answer', async () => {
      const id = await registered('Old phone');
      assert.equal((await read(id)).status, 200);
      await server.admin.client.call(v1.devices.deleteDevice, { params: { deviceId: id } });
      const gone = await read(id);
      assert.equal(gone.status, 404);
      assert.doesNotMatch(await gone.text(), /Old phone/);
      await server.admin.client.call(v1.devices.registerDevice, { body: { id, name: 'New phone', platform: 'ios' } });
      const fresh = await device(id);
      assert.equal(fresh.name, 'New phone');
      assert.equal(fresh.platform, 'ios');
    });

    test('a kept answer still needs a valid key: none, a wrong one and a revoked one are refused', async () => {
      const id = await registered();
      const viewer = await createUser(server, ['viewer']);
      assert.equal((await read(id, viewer.key)).status, 200);
      assert.equal((await fetch(url(id))).status, 401);
      assert.equal((await read(id, `${viewer.key.slice(0, -3)}xyz`)).status, 401);
      await server.admin.client.call(v1.users.revokeApiKey, { params: { email: viewer.email, keyId: viewer.keyId } });
      assert.equal((await read(id, viewer.key)).status, 401);
    });
  });
}
