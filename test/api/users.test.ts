import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { v1Endpoints } from '../../src/api/v1/index.ts';
import { type ApiError, type AttestClient, v1 } from '../../src/client/index.ts';
import { LEGACY_KEY_PATTERN, SECRET_SCANNING_REGEX } from '../../src/server/security/api-key.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createUser, unique } from '../helpers/factories.ts';
import { refusalOf, rejectsWith } from '../helpers/problems.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

// Users, roles and API keys (SPEC-1.4, SPEC-2.1, SPEC-2.2; SEC-5, AUTH-5, AUTH-6, AUTH-9, ERR-4).

/** Sends a JSON call and returns the response with its X-Request-Id (for audit checks). */
async function rawCall(client: AttestClient, method: string, path: string, body?: unknown): Promise<{ status: number; requestId: string }> {
  const response = await client.fetchRaw(method, path, { body: body === undefined ? undefined : JSON.stringify(body) });
  await response.text();
  return { status: response.status, requestId: response.headers.get('x-request-id') as string };
}

const newEmail = () => `${unique('person-')}@example.test`;

test('e-mails are immutable: only creating a user and signing in take an e-mail in the body (docs/api-keys.md)', () => {
  // Old-format keys are paired with the digest of their owner's e-mail, which is sound only as
  // long as no operation can change an e-mail (AUTH-12).
  const taking = v1Endpoints.filter((e) => JSON.stringify(e.body ?? {}).includes('"email"')).map((e) => e.operationId);
  // putIssueTracker's `email` is the Jira account the tracker signs in as (FORGE-5), no user of Attest.
  assert.deepEqual(taking.sort(), ['createUser', 'login', 'putIssueTracker']);
});

for (const dialect of DIALECTS) {
  describe(`[${dialect}] users`, () => {
    let server: TestServer;
    let adminId: string;
    before(async () => {
      server = await startTestServer(dialect);
      adminId = (await server.admin.client.call(v1.meta.getMe)).id;
    });
    after(() => server.close());

    describe('POST /users', () => {
      test('an admin creates a user: e-mail normalised to lower case, roles default to viewer, no password', async () => {
        const email = newEmail();
        const user = await server.admin.client.call(v1.users.createUser, { body: { email: email.toUpperCase(), name: 'Ada' } });
        assert.equal(user.email, email);
        assert.deepEqual(user.roles, ['viewer']);
        assert.equal(user.hasPassword, false);
        assert.deepEqual(await server.admin.client.call(v1.users.getUser, { params: { email } }), user);
      });

      test('an e-mail already in use, in any letter case, answers 409', async () => {
        const email = newEmail();
        await server.admin.client.call(v1.users.createUser, { body: { email, name: 'First' } });
        await assert.rejects(
          server.admin.client.call(v1.users.createUser, { body: { email: email.replace('person', 'PERSON'), name: 'Second' } }),
          rejectsWith(409, 'ALREADY_EXISTS'),
        );
      });

      test('a manager is refused with 403 and no user is created', async () => {
        const manager = await createUser(server, ['manager']);
        const email = newEmail();
        await assert.rejects(
          manager.client.call(v1.users.createUser, { body: { email, name: 'Nope', roles: ['admin'] } }),
          rejectsWith(403, 'FORBIDDEN'),
        );
        await assert.rejects(server.admin.client.call(v1.users.getUser, { params: { email } }), rejectsWith(404));
      });

      test('a body with a field the contract does not have is refused with 400 naming it', async () => {
        const email = newEmail();
        await assert.rejects(
          server.admin.client.call(v1.users.createUser, { body: { email, name: 'X', isAdmin: true } as never }),
          (e: ApiError) => {
            assert.equal(e.status, 400);
            assert.ok((e.problem.errors as { pointer: string }[]).some((f) => f.pointer === '/body/isAdmin'));
            return true;
          },
        );
      });
    });

    describe('GET /users and GET /users/{email}', () => {
      test('an admin lists users, filtered by role and e-mail substring', async () => {
        const tag = unique('tag');
        const a = await server.admin.client.call(v1.users.createUser, {
          body: { email: `${tag}-a@example.test`, name: 'A', roles: ['manager'] },
        });
        await server.admin.client.call(v1.users.createUser, { body: { email: `${tag}-b@example.test`, name: 'B', roles: ['viewer'] } });
        const all = await server.admin.client.call(v1.users.listUsers, { query: { email: tag } });
        assert.deepEqual(all.items.map((u) => u.email).sort(), [`${tag}-a@example.test`, `${tag}-b@example.test`]);
        const managers = await server.admin.client.call(v1.users.listUsers, { query: { email: tag, role: 'manager' } });
        assert.deepEqual(managers.items, [a]);
      });

      test('anyone but an admin is refused the list with 403', async () => {
        for (const role of ['viewer', 'tester', 'manager'] as const) {
          const user = await createUser(server, [role]);
          await assert.rejects(user.client.call(v1.users.listUsers), rejectsWith(403));
        }
      });

      test('a user reads themself; another user answers 404 exactly like an unknown e-mail', async () => {
        const viewer = await createUser(server, ['viewer']);
        const other = await createUser(server, ['viewer']);
        assert.equal((await viewer.client.call(v1.users.getUser, { params: { email: viewer.email.toUpperCase() } })).email, viewer.email);
        const existing = await refusalOf(viewer.client.call(v1.users.getUser, { params: { email: other.email } }));
        const missing = await refusalOf(viewer.client.call(v1.users.getUser, { params: { email: newEmail() } }));
        assert.equal(existing.status, 404);
        assert.deepEqual(existing, missing);
      });
    });

    describe('PUT /users/{email}/roles', () => {
      test("an admin replaces a user's roles, and the next request of that user has the new role", async () => {
        const user = await createUser(server, ['viewer']);
        const updated = await server.admin.client.call(v1.users.setUserRoles, {
          params: { email: user.email },
          body: { roles: ['manager', 'tester'] },
        });
        assert.deepEqual(updated.roles, ['tester', 'manager']);
        assert.equal((await user.client.call(v1.meta.getMe)).role, 'manager');
        await user.client.call(v1.projects.createProject, {
          body: { key: `M${unique().toUpperCase()}`.slice(0, 16), name: 'now allowed' },
        });
      });

      test('a non-admin raising their own roles is refused with 403 and keeps their roles', async () => {
        const manager = await createUser(server, ['manager']);
        await assert.rejects(
          manager.client.call(v1.users.setUserRoles, { params: { email: manager.email }, body: { roles: ['admin'] } }),
          rejectsWith(403, 'FORBIDDEN'),
        );
        // An invalid body changes nothing in the order of checks: the role is refused first (ERR-3).
        await assert.rejects(
          manager.client.call(v1.users.setUserRoles, { params: { email: manager.email }, body: { roles: ['emperor'] } as never }),
          rejectsWith(403),
        );
        const me = await manager.client.call(v1.meta.getMe);
        assert.deepEqual(me.roles, ['manager']);
        assert.equal(me.role, 'manager');
      });

      test('the roles body cannot carry a new e-mail: 400, and the user keeps theirs', async () => {
        const user = await createUser(server, ['viewer']);
        const renamed = newEmail();
        await assert.rejects(
          server.admin.client.call(v1.users.setUserRoles, {
            params: { email: user.email },
            body: { roles: ['tester'], email: renamed } as never,
          }),
          (e: ApiError) => e.status === 400 && (e.problem.errors as { pointer: string }[]).some((f) => f.pointer === '/body/email'),
        );
        assert.equal((await user.client.call(v1.meta.getMe)).email, user.email);
        await assert.rejects(server.admin.client.call(v1.users.getUser, { params: { email: renamed } }), rejectsWith(404));
      });

      test('unknown roles, no roles, and an unknown user are refused', async () => {
        const user = await createUser(server, ['viewer']);
        await assert.rejects(
          server.admin.client.call(v1.users.setUserRoles, { params: { email: user.email }, body: { roles: ['root'] } as never }),
          rejectsWith(400),
        );
        await assert.rejects(
          server.admin.client.call(v1.users.setUserRoles, { params: { email: user.email }, body: { roles: [] } }),
          rejectsWith(400),
        );
        await assert.rejects(
          server.admin.client.call(v1.users.setUserRoles, { params: { email: newEmail() }, body: { roles: ['viewer'] } }),
          rejectsWith(404),
        );
      });
    });

    describe('DELETE /users/{email}', () => {
      test('deleting a user revokes every key of theirs at once; a second delete answers 404', async () => {
        const user = await createUser(server, ['tester']);
        const legacy = await server.admin.client.call(v1.users.createApiKey, {
          params: { email: user.email },
          body: { name: 'old', format: 'legacy' },
        });
        const oldClient = server.client(legacy.key, user.email);
        await oldClient.call(v1.meta.getMe);
        await user.client.call(v1.meta.getMe);
        await server.admin.client.call(v1.users.deleteUser, { params: { email: user.email } });
        await assert.rejects(user.client.call(v1.meta.getMe), rejectsWith(401));
        await assert.rejects(oldClient.call(v1.meta.getMe), rejectsWith(401));
        await assert.rejects(server.admin.client.call(v1.users.deleteUser, { params: { email: user.email } }), rejectsWith(404));
        await assert.rejects(server.admin.client.call(v1.users.getUser, { params: { email: user.email } }), rejectsWith(404));
        const keys = await server.app.attest.db
          .selectFrom('api_keys as k')
          .innerJoin('users as u', 'u.id', 'k.user_id')
          .select('k.revoked_at')
          .where('u.email', '=', user.email)
          .execute();
        assert.equal(keys.length, 2);
        assert.ok(
          keys.every((k) => k.revoked_at !== null),
          'the keys are revoked in the database, not only refused',
        );
      });

      test('records the user created stay; the user leaves the member lists; the e-mail can be used again', async () => {
        const manager = await createUser(server, ['manager']);
        const project = await manager.client.call(v1.projects.createProject, {
          body: { key: `D${unique().toUpperCase()}`.slice(0, 16), name: 'kept' },
        });
        await server.admin.client.call(v1.users.deleteUser, { params: { email: manager.email } });
        const kept = await server.admin.client.call(v1.projects.getProject, { params: { projectId: project.id } });
        assert.equal(kept.name, 'kept');
        const members = await server.admin.client.call(v1.projects.listMembers, { params: { projectId: project.id } });
        assert.ok(!members.items.some((m) => m.email === manager.email));
        const again = await server.admin.client.call(v1.users.createUser, { body: { email: manager.email, name: 'Returning' } });
        assert.deepEqual(again.roles, ['viewer']);
      });

      test('only an admin deletes users: others are refused with 403 and the user stays', async () => {
        const target = await createUser(server, ['viewer']);
        const manager = await createUser(server, ['manager']);
        await assert.rejects(manager.client.call(v1.users.deleteUser, { params: { email: target.email } }), rejectsWith(403));
        await assert.rejects(target.client.call(v1.users.deleteUser, { params: { email: target.email } }), rejectsWith(403));
        await target.client.call(v1.meta.getMe);
      });
    });

    describe('the e-mail in the path (SPEC-1.4)', () => {
      // The typed client always sends `%40`; these calls go out raw, so the literal `@` form is tested too.
      const forms: [string, (email: string) => string][] = [
        ['canonical', (email) => email],
        ['upper-case', (email) => email.toUpperCase()],
        ['%40-encoded', (email) => email.replace('@', '%40')],
        ['upper-case, %40-encoded', (email) => email.toUpperCase().replace('@', '%40')],
      ];

      for (const [name, form] of forms) {
        test(`PUT /users/{email}/roles and DELETE /users/{email} with the ${name} e-mail act on that user`, async () => {
          const user = await createUser(server, ['viewer']);
          const bystander = await createUser(server, ['viewer']);
          const path = `/users/${form(user.email)}`;
          assert.ok(path.includes(name.includes('%40') ? '%40' : '@'), `the path is sent as written: ${path}`);

          const put = await server.admin.client.fetchRaw('PUT', `${path}/roles`, {
            body: JSON.stringify({ roles: ['manager', 'tester'] }),
          });
          const updated = (await put.json()) as { email: string; roles: string[] };
          assert.equal(put.status, 200, JSON.stringify(updated));
          assert.equal(updated.email, user.email, 'the answer names the stored (canonical) e-mail');
          assert.deepEqual(updated.roles, ['tester', 'manager']);
          assert.equal((await user.client.call(v1.meta.getMe)).role, 'manager', 'the user has the new role');
          assert.deepEqual((await bystander.client.call(v1.meta.getMe)).roles, ['viewer'], 'nobody else changed');

          const deletion = await server.admin.client.fetchRaw('DELETE', path);
          assert.equal(deletion.status, 204, await deletion.text());
          await assert.rejects(user.client.call(v1.meta.getMe), rejectsWith(401));
          await assert.rejects(server.admin.client.call(v1.users.getUser, { params: { email: user.email } }), rejectsWith(404));
          const again = await server.admin.client.fetchRaw('DELETE', path);
          assert.equal(again.status, 404, 'the same form addresses the deleted user: gone');
          await again.text();
          await bystander.client.call(v1.meta.getMe);
        });
      }

      test('an unknown e-mail answers 404 in every form', async () => {
        const ghost = newEmail();
        for (const [name, form] of forms) {
          const put = await server.admin.client.fetchRaw('PUT', `/users/${form(ghost)}/roles`, {
            body: JSON.stringify({ roles: ['viewer'] }),
          });
          assert.equal(put.status, 404, `${name}: ${await put.text()}`);
          const deletion = await server.admin.client.fetchRaw('DELETE', `/users/${form(ghost)}`);
          assert.equal(deletion.status, 404, `${name}: ${await deletion.text()}`);
        }
      });
    });

    describe('POST /users/{email}/apikeys', () => {
      test('creates a standard key whose secret is in the answer only', async () => {
        const user = await createUser(server, ['viewer']);
        const created = await user.client.call(v1.users.createApiKey, { params: { email: user.email }, body: { name: 'ci' } });
        assert.match(created.key, new RegExp(`^${SECRET_SCANNING_REGEX.replace(/\\b/g, '')}$`));
        assert.equal(created.format, 'standard');
        assert.equal(created.scope, 'full');
        const days = (Date.parse(created.expiresAt as string) - server.clock.now.getTime()) / 86_400_000;
        assert.ok(days > 89.9 && days <= 90, `default lifetime is 90 days (got ${days})`);
        assert.ok(
          created.key.startsWith(created.hint.slice(0, 8)) && created.key.endsWith(created.hint.slice(-4)),
          'the hint shows the ends',
        );
        const listed = (await user.client.call(v1.users.listApiKeys, { params: { email: user.email } })).items.find(
          (k) => k.id === created.id,
        );
        assert.ok(listed);
        assert.ok(!('key' in listed), 'the list has no secret field');
        const { key: _secret, ...rest } = created;
        assert.deepEqual(listed, rest);
        await server.client(created.key).call(v1.meta.getMe);
      });

      test('an admin creates an old-format key, which then authenticates with its owner\u2019s e-mail', async () => {
        const user = await createUser(server, ['tester']);
        const created = await server.admin.client.call(v1.users.createApiKey, {
          params: { email: user.email },
          body: { name: 'legacy', format: 'legacy' },
        });
        assert.match(created.key, LEGACY_KEY_PATTERN);
        assert.equal(created.format, 'legacy');
        const me = await server.client(created.key, user.email).call(v1.meta.getMe);
        assert.equal(me.email, user.email);
        assert.equal(me.key.id, created.id);
      });

      test('an admin imports an existing old-format value; it authenticates with that owner\u2019s e-mail only, and cannot be imported twice', async () => {
        const owner = await createUser(server, ['tester']);
        const other = await createUser(server, ['tester']);
        const value = randomUUID().toUpperCase();
        const imported = await server.admin.client.call(v1.users.createApiKey, {
          params: { email: owner.email },
          body: { name: 'migrated', format: 'legacy', value },
        });
        assert.equal(imported.key.toLowerCase(), value.toLowerCase());
        assert.equal((await server.client(value.toLowerCase(), owner.email).call(v1.meta.getMe)).email, owner.email);
        await assert.rejects(server.client(value, other.email).call(v1.meta.getMe), rejectsWith(401));
        await assert.rejects(
          server.admin.client.call(v1.users.createApiKey, {
            params: { email: other.email },
            body: { name: 'again', format: 'legacy', value: value.toLowerCase() },
          }),
          rejectsWith(409),
        );
        const audit = await server.admin.client.call(v1.users.listAuditLog, { query: { targetId: imported.id } });
        assert.equal(audit.items[0]?.action, 'apikey.import');
      });

      test('a non-admin may not create or import an old-format key, even for themself (403)', async () => {
        const manager = await createUser(server, ['manager']);
        await assert.rejects(
          manager.client.call(v1.users.createApiKey, { params: { email: manager.email }, body: { name: 'x', format: 'legacy' } }),
          rejectsWith(403),
        );
        await assert.rejects(
          manager.client.call(v1.users.createApiKey, {
            params: { email: manager.email },
            body: { name: 'x', format: 'legacy', value: randomUUID() },
          }),
          rejectsWith(403),
        );
        const keys = await manager.client.call(v1.users.listApiKeys, { params: { email: manager.email } });
        assert.deepEqual(
          keys.items.map((k) => k.format),
          ['standard'],
        );
      });

      test('an expiry beyond the configured maximum, or in the past, is refused with 400 naming expiresAt', async () => {
        const user = await createUser(server, ['viewer']);
        const day = 86_400_000;
        const now = server.clock.now.getTime();
        for (const at of [now + (server.config.keyMaxDays + 1) * day, now - day]) {
          await assert.rejects(
            user.client.call(v1.users.createApiKey, {
              params: { email: user.email },
              body: { name: 'x', expiresAt: new Date(at).toISOString() },
            }),
            (e: ApiError) => e.status === 400 && (e.problem.errors as { pointer: string }[])[0]?.pointer === '/body/expiresAt',
          );
        }
        await assert.rejects(
          user.client.call(v1.users.createApiKey, { params: { email: user.email }, body: { name: 'never', expiresAt: null } }),
          rejectsWith(400),
          'keys must expire unless the instance allows otherwise',
        );
        const within = await user.client.call(v1.users.createApiKey, {
          params: { email: user.email },
          body: { name: 'max', expiresAt: new Date(now + server.config.keyMaxDays * day - 60_000).toISOString() },
        });
        assert.ok(within.expiresAt);
      });

      test('a read-only key is capped at viewer: reads work, writes answer 403', async () => {
        const manager = await createUser(server, ['manager']);
        const readOnly = await manager.client.call(v1.users.createApiKey, {
          params: { email: manager.email },
          body: { name: 'dashboard', scope: 'read' },
        });
        const client = server.client(readOnly.key);
        const me = await client.call(v1.meta.getMe);
        assert.equal(me.role, 'viewer');
        assert.equal(me.key.scope, 'read');
        await client.call(v1.projects.listProjects);
        const key = `R${unique().toUpperCase()}`.slice(0, 16);
        await assert.rejects(client.call(v1.projects.createProject, { body: { key, name: 'no' } }), rejectsWith(403));
        await assert.rejects(
          client.call(v1.devices.registerDevice, { body: { id: unique('d'), name: 'no', platform: 'web' } }),
          rejectsWith(403),
        );
        const listed = await manager.client.call(v1.projects.listProjects);
        assert.ok(!listed.items.some((p) => p.key === key), 'nothing was created');
        await manager.client.call(v1.projects.createProject, { body: { key, name: 'yes' } });
      });
    });

    describe("another user's keys", () => {
      test("a non-admin addressing another user's keys gets 404, identical to an unknown e-mail, for list, create and revoke", async () => {
        const caller = await createUser(server, ['manager']);
        const victim = await createUser(server, ['viewer']);
        const ghost = newEmail();
        const pairs: [string, (email: string, keyId: string) => Promise<unknown>][] = [
          ['list', (email) => caller.client.call(v1.users.listApiKeys, { params: { email } })],
          ['create', (email) => caller.client.call(v1.users.createApiKey, { params: { email }, body: { name: 'sneaky' } })],
          ['revoke', (email, keyId) => caller.client.call(v1.users.revokeApiKey, { params: { email, keyId } })],
          [
            'password',
            (email) => caller.client.call(v1.users.setUserPassword, { params: { email }, body: { password: 'a long enough password' } }),
          ],
        ];
        for (const [name, call] of pairs) {
          const existing = await refusalOf(call(victim.email, victim.keyId));
          const missing = await refusalOf(call(ghost, randomUUID()));
          assert.equal(existing.status, 404, name);
          assert.deepEqual(existing, missing, `${name}: the answer tells whether the e-mail exists`);
        }
        await victim.client.call(v1.meta.getMe);
        const keys = await server.admin.client.call(v1.users.listApiKeys, { params: { email: victim.email } });
        assert.equal(keys.items.length, 1, 'no key was added to the victim');
      });

      test("a key id of another user under one's own e-mail answers 404 and stays valid", async () => {
        const caller = await createUser(server, ['tester']);
        const victim = await createUser(server, ['tester']);
        await assert.rejects(
          caller.client.call(v1.users.revokeApiKey, { params: { email: caller.email, keyId: victim.keyId } }),
          rejectsWith(404),
        );
        await victim.client.call(v1.meta.getMe);
      });

      test("an admin revokes another user's key; revoking it again answers 404", async () => {
        const user = await createUser(server, ['viewer']);
        await server.admin.client.call(v1.users.revokeApiKey, { params: { email: user.email, keyId: user.keyId } });
        await assert.rejects(user.client.call(v1.meta.getMe), rejectsWith(401));
        await assert.rejects(
          server.admin.client.call(v1.users.revokeApiKey, { params: { email: user.email, keyId: user.keyId } }),
          rejectsWith(404),
        );
        const withRevoked = await server.admin.client.call(v1.users.listApiKeys, {
          params: { email: user.email },
          query: { includeRevoked: true },
        });
        assert.ok(withRevoked.items[0]?.revokedAt);
        assert.equal((await server.admin.client.call(v1.users.listApiKeys, { params: { email: user.email } })).items.length, 0);
      });
    });

    describe('GET /audit', () => {
      test('records role changes, deletions and key creation and revocation with the actor and the request id', async () => {
        const user = await createUser(server, ['viewer']);
        const userId = (await user.client.call(v1.meta.getMe)).id;
        const path = `/users/${encodeURIComponent(user.email)}`;
        // The test clock stands still unless moved; move it so "newest first" has an order to show.
        server.clock.advance(1000);
        const roles = await rawCall(server.admin.client, 'PUT', `${path}/roles`, { roles: ['tester'] });
        server.clock.advance(1000);
        assert.equal(roles.status, 200);
        const createdResponse = await server.admin.client.fetchRaw('POST', `${path}/apikeys`, {
          body: JSON.stringify({ name: 'audited' }),
        });
        const created = (await createdResponse.json()) as { id: string };
        const createRequestId = createdResponse.headers.get('x-request-id');
        server.clock.advance(1000);
        const revoke = await rawCall(user.client, 'DELETE', `${path}/apikeys/${created.id}`);
        assert.equal(revoke.status, 204);
        server.clock.advance(1000);
        const deletion = await rawCall(server.admin.client, 'DELETE', path);
        assert.equal(deletion.status, 204);

        const log = await server.admin.client.call(v1.users.listAuditLog, { query: { limit: 200 } });
        const find = (action: string, targetId: string) => log.items.find((e) => e.action === action && e.targetId === targetId);
        const roleEntry = find('user.roles', userId);
        assert.ok(roleEntry, 'role change recorded');
        assert.equal(roleEntry.actorUserId, adminId);
        assert.equal(roleEntry.requestId, roles.requestId);
        assert.deepEqual(roleEntry.details, { from: ['viewer'], to: ['tester'] });
        const createEntry = find('apikey.create', created.id);
        assert.equal(createEntry?.actorUserId, adminId);
        assert.equal(createEntry?.requestId, createRequestId);
        const revokeEntry = find('apikey.revoke', created.id);
        assert.equal(revokeEntry?.actorUserId, userId, 'the user revoked their own key');
        assert.equal(revokeEntry?.requestId, revoke.requestId);
        const deleteEntry = find('user.delete', userId);
        assert.equal(deleteEntry?.actorUserId, adminId);
        assert.equal(deleteEntry?.requestId, deletion.requestId);
        assert.ok(log.items.indexOf(deleteEntry as never) < log.items.indexOf(roleEntry), 'newest first');
        const filtered = await server.admin.client.call(v1.users.listAuditLog, { query: { action: 'user.delete', targetId: userId } });
        assert.deepEqual(filtered.items, [deleteEntry]);
        assert.doesNotMatch(JSON.stringify(log), new RegExp(SECRET_SCANNING_REGEX), 'no secret in the audit log');
      });

      test('only admins read the audit log', async () => {
        const manager = await createUser(server, ['manager']);
        await assert.rejects(manager.client.call(v1.users.listAuditLog), rejectsWith(403));
      });
    });
  });

  describe(`[${dialect}] the admin invariant`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer(dialect);
    });
    after(() => server.close());

    const countAdmins = async () => {
      const row = await server.app.attest.db
        .selectFrom('users')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('deleted_at', 'is', null)
        .where(sql<boolean>`roles LIKE '%"admin"%'`)
        .executeTakeFirstOrThrow();
      return Number(row.n);
    };

    test('the last admin can be neither demoted nor deleted (409), and stays admin', async () => {
      assert.equal(await countAdmins(), 1);
      const email = server.admin.email;
      await assert.rejects(
        server.admin.client.call(v1.users.setUserRoles, { params: { email }, body: { roles: ['manager'] } }),
        rejectsWith(409, 'LAST_ADMIN'),
      );
      await assert.rejects(server.admin.client.call(v1.users.deleteUser, { params: { email } }), rejectsWith(409, 'LAST_ADMIN'));
      const me = await server.admin.client.call(v1.meta.getMe);
      assert.deepEqual(me.roles, ['admin']);
      const log = await server.admin.client.call(v1.users.listAuditLog, { query: { action: 'user.roles' } });
      assert.equal(log.items.length, 0, 'a refused change leaves no audit entry');
      // Keeping the admin role while adding others is no demotion.
      await server.admin.client.call(v1.users.setUserRoles, { params: { email }, body: { roles: ['admin', 'tester'] } });
    });

    test('two admins demoting each other at the same time never leave zero admins (30 fresh pairs)', async () => {
      let survivor: { email: string; client: AttestClient } = server.admin;
      for (let round = 0; round < 30; round++) {
        const a = await createAdmin(server, survivor.client);
        const b = await createAdmin(server, survivor.client);
        // Leave a and b as the only admins, then race them against each other.
        await a.client.call(v1.users.setUserRoles, { params: { email: survivor.email }, body: { roles: ['viewer'] } });
        assert.equal(await countAdmins(), 2);
        const results = await Promise.allSettled([
          a.client.call(v1.users.setUserRoles, { params: { email: b.email }, body: { roles: ['viewer'] } }),
          b.client.call(v1.users.setUserRoles, { params: { email: a.email }, body: { roles: ['viewer'] } }),
        ]);
        const statuses = results.map((r) => (r.status === 'fulfilled' ? 200 : (r.reason as ApiError).status));
        assert.equal(await countAdmins(), 1, `round ${round}: ${statuses.join(', ')}`);
        assert.equal(statuses.filter((s) => s === 200).length, 1, `round ${round}: exactly one demotion succeeds (${statuses.join(', ')})`);
        for (const r of results) {
          if (r.status === 'rejected') assert.ok([409, 403].includes((r.reason as ApiError).status), String(r.reason));
        }
        survivor = results[0].status === 'fulfilled' ? a : b;
        assert.equal((await survivor.client.call(v1.meta.getMe)).role, 'admin');
      }
    });
  });
  describe(`[${dialect}] web sessions and passwords (SEC-2e, SEC-2f)`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer(dialect);
    });
    after(() => server.close());

    async function userWithPassword(roles: ('viewer' | 'tester')[] = ['viewer']) {
      const user = await createUser(server, roles);
      const password = `pw-${unique()}-long-enough`;
      await server.admin.client.call(v1.users.setUserPassword, { params: { email: user.email }, body: { password } });
      return { ...user, password };
    }
    const signIn = async (email: string, password: string) => {
      const session = await server.client().call(v1.meta.login, { body: { email, password } });
      return { ...session, client: server.client(session.key) };
    };
    const keysOf = async (email: string) => (await server.admin.client.call(v1.users.listApiKeys, { params: { email } })).items;

    test("a password change ends the account's other web sessions at once; the session that made it and the API keys stay", async () => {
      const user = await userWithPassword();
      const changer = await signIn(user.email, user.password);
      const other = await signIn(user.email, user.password);
      const third = await signIn(user.email, user.password);
      // Used once each, so the credentials cache knows them all before the change.
      for (const session of [changer, other, third]) assert.equal((await session.client.call(v1.meta.getMe)).email, user.email);

      const newPassword = `pw-${unique()}-changed`;
      await changer.client.call(v1.users.setUserPassword, {
        params: { email: user.email },
        body: { password: newPassword, currentPassword: user.password },
      });
      for (const session of [other, third]) await assert.rejects(session.client.call(v1.meta.getMe), rejectsWith(401, 'UNAUTHENTICATED'));
      assert.equal((await changer.client.call(v1.meta.getMe)).email, user.email, 'the session that made the change stays');
      assert.equal((await user.client.call(v1.meta.getMe)).email, user.email, 'API keys are not sessions: they stay');
      await assert.rejects(signIn(user.email, user.password), rejectsWith(401), 'the old password is gone');
      await signIn(user.email, newPassword);

      const entries = await server.admin.client.call(v1.users.listAuditLog, {
        query: { action: 'user.password', targetId: (await user.client.call(v1.meta.getMe)).id },
      });
      // The clock stands still here, so both entries (the admin's first password, then the change) share a time.
      assert.deepEqual(
        entries.items.map((entry) => entry.details.endedSessions).sort(),
        [0, 2],
        'the change names the two sessions it ended',
      );
    });

    test('a password set by an admin, or through an API key, ends every web session of the user', async () => {
      const user = await userWithPassword();
      const sessions = [await signIn(user.email, user.password), await signIn(user.email, user.password)];
      for (const session of sessions) await session.client.call(v1.meta.getMe);
      await server.admin.client.call(v1.users.setUserPassword, {
        params: { email: user.email },
        body: { password: `pw-${unique()}-by-admin` },
      });
      for (const session of sessions) await assert.rejects(session.client.call(v1.meta.getMe), rejectsWith(401));

      const password = `pw-${unique()}-by-own-key`;
      const again = await (async () => {
        await server.admin.client.call(v1.users.setUserPassword, { params: { email: user.email }, body: { password } });
        return signIn(user.email, password);
      })();
      await user.client.call(v1.users.setUserPassword, { params: { email: user.email }, body: { password: `pw-${unique()}-new` } });
      await assert.rejects(again.client.call(v1.meta.getMe), rejectsWith(401), 'a change through an API key keeps no session');
    });

    test('a session alone cannot take over its account: a password change through it needs the current password (SEC-2g)', async () => {
      const user = await userWithPassword();
      const stolen = await signIn(user.email, user.password);
      const setOwn = (body: { password: string; currentPassword?: string }) =>
        stolen.client.call(v1.users.setUserPassword, { params: { email: user.email }, body });
      // The attack: set a password of one's own, then pass the key's re-authentication with it.
      const attackers = 'the attacker chose this one';
      await assert.rejects(setOwn({ password: attackers }), rejectsWith(403, 'REAUTHENTICATION_REQUIRED'));
      await assert.rejects(
        setOwn({ password: attackers, currentPassword: 'a guess at the password' }),
        rejectsWith(403, 'REAUTHENTICATION_REQUIRED'),
      );
      await assert.rejects(
        stolen.client.call(v1.users.createApiKey, { params: { email: user.email }, body: { name: 'loot', password: attackers } }),
        rejectsWith(403, 'REAUTHENTICATION_REQUIRED'),
      );
      assert.deepEqual(
        (await keysOf(user.email)).filter((key) => key.name === 'loot'),
        [],
        'the attack sequence ends with no key',
      );
      await signIn(user.email, user.password); // the owner's password still works
      await assert.rejects(signIn(user.email, attackers), rejectsWith(401));

      // The owner, with the current password: 204, and every other session of the user ends.
      const other = await signIn(user.email, user.password);
      await other.client.call(v1.meta.getMe);
      const newPassword = `pw-${unique()}-confirmed`;
      await setOwn({ password: newPassword, currentPassword: user.password });
      await assert.rejects(other.client.call(v1.meta.getMe), rejectsWith(401, 'UNAUTHENTICATED'));
      await signIn(user.email, newPassword);
      const entries = await server.admin.client.call(v1.users.listAuditLog, {
        query: { action: 'user.password', targetId: (await user.client.call(v1.meta.getMe)).id },
      });
      assert.ok(entries.items.some((entry) => entry.details.confirmedBy === 'password'));
      // An admin's session resetting another user's password confirms with the admin's own password too.
      const adminPassword = `pw-${unique()}-admin`;
      const admin = await createUser(server, ['admin']);
      await server.admin.client.call(v1.users.setUserPassword, { params: { email: admin.email }, body: { password: adminPassword } });
      const adminSession = await signIn(admin.email, adminPassword);
      await assert.rejects(
        adminSession.client.call(v1.users.setUserPassword, {
          params: { email: user.email },
          body: { password: 'reset by a stolen session' },
        }),
        rejectsWith(403, 'REAUTHENTICATION_REQUIRED'),
      );
      await adminSession.client.call(v1.users.setUserPassword, {
        params: { email: user.email },
        body: { password: `pw-${unique()}-reset`, currentPassword: adminPassword },
      });
    });

    test('a web session creates a key only with its own password (sudo mode); an API key needs none', async () => {
      const user = await userWithPassword();
      const other = await userWithPassword();
      const session = await signIn(user.email, user.password);
      const create = (body: { name: string; password?: string }) =>
        session.client.call(v1.users.createApiKey, { params: { email: user.email }, body });
      const before = (await keysOf(user.email)).length;
      await assert.rejects(create({ name: 'no password' }), rejectsWith(403, 'REAUTHENTICATION_REQUIRED'));
      await assert.rejects(create({ name: 'wrong', password: 'not my password at all' }), rejectsWith(403, 'REAUTHENTICATION_REQUIRED'));
      await assert.rejects(create({ name: 'theirs', password: other.password }), rejectsWith(403, 'REAUTHENTICATION_REQUIRED'));
      assert.equal((await keysOf(user.email)).length, before, 'no key was created');

      const created = await create({ name: 'confirmed', password: user.password });
      assert.equal((await server.client(created.key).call(v1.meta.getMe)).email, user.email);
      const byKey = await user.client.call(v1.users.createApiKey, { params: { email: user.email }, body: { name: 'by key' } });
      assert.equal(byKey.format, 'standard', 'an API key creates keys without a password');
    });

    test('wrong passwords a session confirms with count as failed logins, so a stolen session cannot guess the password', async () => {
      const user = await userWithPassword();
      const session = await signIn(user.email, user.password);
      const create = (password: string) =>
        session.client.call(v1.users.createApiKey, { params: { email: user.email }, body: { name: 'guess', password } });
      // The session signed in from this address, so the address's pass allows a few failures first (SEC-2d).
      for (let i = 0; i < 5; i++) await assert.rejects(create(`guess number ${i}`), rejectsWith(403, 'REAUTHENTICATION_REQUIRED'));
      await assert.rejects(create('guess number 5'), rejectsWith(429, 'RATE_LIMITED'));
      await assert.rejects(create(user.password), rejectsWith(429, 'RATE_LIMITED'), 'throttled before the password is checked');
      await assert.rejects(signIn(user.email, user.password), rejectsWith(429, 'RATE_LIMITED'), 'and so are the logins');
    });
  });
}

async function createAdmin(server: TestServer, by: AttestClient): Promise<{ email: string; client: AttestClient }> {
  const email = newEmail();
  await by.call(v1.users.createUser, { body: { email, name: 'Admin', roles: ['admin'] } });
  const key = await by.call(v1.users.createApiKey, { params: { email }, body: { name: 'race' } });
  return { email, client: server.client(key.key) };
}
