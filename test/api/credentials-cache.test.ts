import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { v1 } from '../../src/client/index.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createProject, createUser } from '../helpers/factories.ts';
import { databaseSettled, startTestServer, type TestServer } from '../helpers/server.ts';

// The credentials cache (PERF-1): a key that authenticated is answered without a query, and every
// change of access (role, revocation, deletion, membership, project) is seen by the very next request.

/** One GET with exactly these headers; the status and how many statements it ran. */
async function get(server: TestServer, url: string, headers: Record<string, string>): Promise<{ status: number; statements: number }> {
  await databaseSettled(server);
  const before = server.app.attest.database.stats.statements;
  const response = await fetch(`${server.url}${url}`, { headers: { accept: 'application/json', ...headers } });
  await response.arrayBuffer();
  return { status: response.status, statements: server.app.attest.database.stats.statements - before };
}

const key = (token: string) => ({ 'service.api-token': token });

for (const dialect of DIALECTS) {
  describe(`[${dialect}] credentials cache (PERF-1)`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer(dialect);
    });
    after(() => server?.close());

    test('a known key runs no authentication query; an unknown one is never cached', async () => {
      const user = await createUser(server, ['viewer']);
      const first = await get(server, '/api/v1/me', key(user.key));
      assert.equal(first.status, 200);
      const second = await get(server, '/api/v1/me', key(user.key));
      assert.equal(second.status, 200);
      assert.ok(second.statements < first.statements, `cached: ${second.statements} statements, first ${first.statements}`);
      // /me reads the user's memberships itself; the key lookup is what the cache saves.
      const forged = `${user.key.slice(0, -8)}AAAAAAAA`;
      for (let i = 0; i < 2; i++) assert.equal((await get(server, '/api/v1/me', key(forged))).status, 401);
    });

    test('a role change is seen by the very next request', async () => {
      const user = await createUser(server, ['manager']);
      const devices = '/api/v1/device/devices';
      const register = () =>
        fetch(`${server.url}${devices}`, {
          method: 'POST',
          headers: { ...key(user.key), 'content-type': 'application/json' },
          body: JSON.stringify({ id: `D-${Math.random().toString(36).slice(2)}`, name: 'Pixel', platform: 'android' }),
        });
      assert.equal((await register()).status, 201);
      await server.admin.client.call(v1.users.setUserRoles, { params: { email: user.email }, body: { roles: ['viewer'] } });
      assert.equal((await register()).status, 403, 'demoted at once');
      await server.admin.client.call(v1.users.setUserRoles, { params: { email: user.email }, body: { roles: ['manager'] } });
      assert.equal((await register()).status, 201, 'promoted at once');
    });

    test('a revoked key fails on the very next request, in both formats', async () => {
      const user = await createUser(server, ['viewer']);
      assert.equal((await get(server, '/api/v1/me', key(user.key))).status, 200);
      await get(server, '/api/v1/me', key(user.key));
      await server.admin.client.call(v1.users.revokeApiKey, { params: { email: user.email, keyId: user.keyId } });
      assert.equal((await get(server, '/api/v1/me', key(user.key))).status, 401);

      const legacy = await server.admin.client.call(v1.users.createApiKey, {
        params: { email: server.admin.email },
        body: { name: 'old client', format: 'legacy' },
      });
      const headers = { ...key(legacy.key), 'service.user': server.admin.email };
      assert.equal((await get(server, '/api/v1/me', headers)).status, 200);
      assert.equal((await get(server, '/api/v1/me', headers)).status, 200);
      // The cached pairing holds for its own e-mail only.
      assert.equal((await get(server, '/api/v1/me', { ...key(legacy.key), 'service.user': 'someone@example.test' })).status, 401);
      await server.admin.client.call(v1.users.revokeApiKey, { params: { email: server.admin.email, keyId: legacy.id } });
      assert.equal((await get(server, '/api/v1/me', headers)).status, 401);
    });

    test('a deleted user fails on the very next request', async () => {
      const user = await createUser(server, ['viewer']);
      assert.equal((await get(server, '/api/v1/me', key(user.key))).status, 200);
      await server.admin.client.call(v1.users.deleteUser, { params: { email: user.email } });
      assert.equal((await get(server, '/api/v1/me', key(user.key))).status, 401);
    });

    test('a key that expires stops working without any write', async () => {
      const user = await createUser(server, ['viewer']);
      const expiring = await server.admin.client.call(v1.users.createApiKey, {
        params: { email: user.email },
        body: { name: 'short', expiresAt: new Date(server.clock.now.getTime() + 60 * 60_000).toISOString() },
      });
      assert.equal((await get(server, '/api/v1/me', key(expiring.key))).status, 200);
      server.clock.advance(2 * 60 * 60_000);
      assert.equal((await get(server, '/api/v1/me', key(expiring.key))).status, 401);
    });

    test('membership added, removed, and the project deleted: each seen by the very next request', async () => {
      const project = await createProject(server);
      const user = await createUser(server, ['tester']);
      const url = `/api/v1/projects/${project.id}`;
      assert.equal((await get(server, url, key(user.key))).status, 404);
      await server.admin.client.call(v1.projects.addMember, { params: { projectId: project.id, email: user.email } });
      assert.equal((await get(server, url, key(user.key))).status, 200, 'member at once');
      await server.admin.client.call(v1.projects.removeMember, { params: { projectId: project.id, email: user.email } });
      assert.equal((await get(server, url, key(user.key))).status, 404, 'removed at once');

      await server.admin.client.call(v1.projects.addMember, { params: { projectId: project.id, email: user.email } });
      assert.equal((await get(server, url, key(user.key))).status, 200);
      await server.admin.client.call(v1.projects.deleteProject, { params: { projectId: project.id } });
      assert.equal((await get(server, url, key(user.key))).status, 404, 'deleted at once');
    });

    test('a project a user creates is theirs on the very next request', async () => {
      const manager = await createUser(server, ['manager']);
      assert.equal((await get(server, '/api/v1/me', key(manager.key))).status, 200);
      const created = await manager.client.call(v1.projects.createProject, {
        body: { key: `C${Date.now().toString(36).toUpperCase()}`, name: 'Mine' },
      });
      assert.equal((await get(server, `/api/v1/projects/${created.id}`, key(manager.key))).status, 200);
    });
  });
}
