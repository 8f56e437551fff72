import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { v1 } from '../../src/client/index.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createProject, createUser, type TestUser, unique } from '../helpers/factories.ts';
import { refusalOf, rejectsWith } from '../helpers/problems.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

// Projects, members and visibility (SPEC-2.1, SPEC-2.2; SEC-1a, ERR-3).

const projectKey = () => `K${unique().toUpperCase()}`.slice(0, 16);

for (const dialect of DIALECTS) {
  describe(`[${dialect}] projects`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer(dialect);
    });
    after(() => server.close());

    describe('POST /projects', () => {
      test('a manager creates a project and becomes its member', async () => {
        const manager = await createUser(server, ['manager']);
        const key = projectKey();
        const project = await manager.client.call(v1.projects.createProject, {
          body: { key, name: 'Web shop', description: 'The storefront' },
        });
        assert.equal(project.key, key);
        assert.equal(project.description, 'The storefront');
        assert.equal(project.createdAt, project.updatedAt);
        const members = await manager.client.call(v1.projects.listMembers, { params: { projectId: project.id } });
        assert.deepEqual(
          members.items.map((m) => m.email),
          [manager.email],
        );
        assert.ok((await manager.client.call(v1.meta.getMe)).projectIds.includes(project.id));
      });

      test('a key already taken answers 409 and creates nothing', async () => {
        const key = projectKey();
        await server.admin.client.call(v1.projects.createProject, { body: { key, name: 'first' } });
        await assert.rejects(
          server.admin.client.call(v1.projects.createProject, { body: { key, name: 'second' } }),
          rejectsWith(409, 'ALREADY_EXISTS'),
        );
        const all = await server.admin.client.call(v1.projects.listProjects, { query: { limit: 200 } });
        assert.deepEqual(
          all.items.filter((p) => p.key === key).map((p) => p.name),
          ['first'],
        );
      });

      test('a tester is refused with 403; a malformed key with 400', async () => {
        const tester = await createUser(server, ['tester']);
        await assert.rejects(tester.client.call(v1.projects.createProject, { body: { key: projectKey(), name: 'no' } }), rejectsWith(403));
        for (const key of ['web', 'W', '1WEB', 'WEB-SHOP', 'A'.repeat(17)]) {
          await assert.rejects(server.admin.client.call(v1.projects.createProject, { body: { key, name: 'x' } }), rejectsWith(400), key);
        }
      });
    });

    describe('GET, PATCH and DELETE /projects/{projectId}', () => {
      test('a member reads it; a manager member changes its name and description', async () => {
        const project = await createProject(server, 'Before');
        const manager = await createUser(server, ['manager'], { projects: [project.id] });
        const viewer = await createUser(server, ['viewer'], { projects: [project.id] });
        assert.deepEqual(await viewer.client.call(v1.projects.getProject, { params: { projectId: project.id } }), project);
        server.clock.advance(5000);
        const updated = await manager.client.call(v1.projects.updateProject, {
          params: { projectId: project.id },
          body: { name: 'After', description: 'new' },
        });
        assert.equal(updated.name, 'After');
        assert.equal(updated.description, 'new');
        assert.equal(updated.key, project.key, 'the key is fixed');
        assert.ok(updated.updatedAt > project.updatedAt);
        assert.deepEqual(await viewer.client.call(v1.projects.getProject, { params: { projectId: project.id } }), updated);
      });

      test('a viewer or tester member may read but not change or delete it (403)', async () => {
        const project = await createProject(server);
        for (const role of ['viewer', 'tester'] as const) {
          const member = await createUser(server, [role], { projects: [project.id] });
          await assert.rejects(
            member.client.call(v1.projects.updateProject, { params: { projectId: project.id }, body: { name: 'x' } }),
            rejectsWith(403),
          );
          await assert.rejects(member.client.call(v1.projects.deleteProject, { params: { projectId: project.id } }), rejectsWith(403));
        }
        assert.equal((await server.admin.client.call(v1.projects.getProject, { params: { projectId: project.id } })).name, project.name);
      });

      test('a change of key or an empty change is refused with 400', async () => {
        const project = await createProject(server);
        await assert.rejects(
          server.admin.client.call(v1.projects.updateProject, { params: { projectId: project.id }, body: { key: 'NEW' } as never }),
          rejectsWith(400),
        );
        await assert.rejects(
          server.admin.client.call(v1.projects.updateProject, { params: { projectId: project.id }, body: {} }),
          rejectsWith(400),
        );
      });

      test('deleting a project removes it and its memberships; deleting again answers 404', async () => {
        const project = await createProject(server);
        const manager = await createUser(server, ['manager'], { projects: [project.id] });
        await manager.client.call(v1.projects.deleteProject, { params: { projectId: project.id } });
        await assert.rejects(manager.client.call(v1.projects.getProject, { params: { projectId: project.id } }), rejectsWith(404));
        await assert.rejects(server.admin.client.call(v1.projects.deleteProject, { params: { projectId: project.id } }), rejectsWith(404));
        assert.ok(!(await manager.client.call(v1.meta.getMe)).projectIds.includes(project.id));
        const audit = await server.admin.client.call(v1.users.listAuditLog, { query: { action: 'project.delete', targetId: project.id } });
        assert.equal(audit.items.length, 1);
      });

      test('a path id that is not a UUID names no project: 404, checked before the body (ERR-3)', async () => {
        for (const projectId of ['not-a-uuid', "' OR 1=1 --", 'x'.repeat(400)]) {
          await assert.rejects(server.admin.client.call(v1.projects.getProject, { params: { projectId } }), rejectsWith(404));
          await assert.rejects(server.admin.client.call(v1.projects.updateProject, { params: { projectId }, body: {} }), rejectsWith(404));
        }
      });
    });

    describe('members: GET, PUT and DELETE /projects/{projectId}/members/{email}', () => {
      test('a manager adds a user (twice is a no-op), lists and removes them; the user sees the project only while a member', async () => {
        const project = await createProject(server);
        const manager = await createUser(server, ['manager'], { projects: [project.id] });
        const user = await createUser(server, ['tester']);
        await assert.rejects(user.client.call(v1.projects.getProject, { params: { projectId: project.id } }), rejectsWith(404));
        const added = await manager.client.call(v1.projects.addMember, {
          params: { projectId: project.id, email: user.email.toUpperCase() },
        });
        assert.equal(added.email, user.email);
        const again = await manager.client.call(v1.projects.addMember, { params: { projectId: project.id, email: user.email } });
        assert.deepEqual(again, added);
        const members = await manager.client.call(v1.projects.listMembers, { params: { projectId: project.id } });
        assert.deepEqual(
          members.items.map((m) => m.email).sort(),
          [server.admin.email, manager.email, user.email].sort(),
          'the creating admin is a member too',
        );
        const asMember = await user.client.call(v1.projects.listMembers, { params: { projectId: project.id } });
        assert.deepEqual(
          asMember.items.map((m) => m.userId).sort(),
          members.items.map((m) => m.userId).sort(),
          'a member sees who else is in',
        );
        assert.equal((await user.client.call(v1.projects.getProject, { params: { projectId: project.id } })).id, project.id);
        await manager.client.call(v1.projects.removeMember, { params: { projectId: project.id, email: user.email } });
        await assert.rejects(user.client.call(v1.projects.getProject, { params: { projectId: project.id } }), rejectsWith(404));
        await assert.rejects(
          manager.client.call(v1.projects.removeMember, { params: { projectId: project.id, email: user.email } }),
          rejectsWith(404),
        );
      });

      test("members' e-mails are shown to managers and admins only; others see names and ids, in pages and cursors alike (ERR-4)", async () => {
        const project = await createProject(server);
        // The factory's display names quote the e-mail; real people are named, so these are too.
        const member = async (role: 'manager' | 'tester' | 'viewer') => {
          const email = `${unique(`${role}-`)}@example.test`;
          await server.admin.client.call(v1.users.createUser, { body: { email, name: `A ${role}`, roles: [role] } });
          await server.admin.client.call(v1.projects.addMember, { params: { projectId: project.id, email } });
          const { key } = await server.admin.client.call(v1.users.createApiKey, { params: { email }, body: { name: 'test' } });
          return { email, client: server.client(key) };
        };
        const manager = await member('manager');
        const tester = await member('tester');
        const viewer = await member('viewer');
        const readOnly = await manager.client.call(v1.users.createApiKey, {
          params: { email: manager.email },
          body: { name: 'read-only', scope: 'read' },
        });
        const emails = [server.admin.email, manager.email, tester.email, viewer.email];

        /** Every page of the member list, read one member at a time, with the cursors that chained them. */
        const allPages = async (client: typeof manager.client) => {
          const items: { userId: string; email?: string; name: string }[] = [];
          const cursors: string[] = [];
          let cursor: string | undefined;
          do {
            const page = await client.call(v1.projects.listMembers, { params: { projectId: project.id }, query: { limit: 1, cursor } });
            items.push(...page.items);
            cursor = page.nextCursor ?? undefined;
            if (cursor) cursors.push(cursor);
          } while (cursor);
          return { items, cursors };
        };

        for (const client of [server.admin.client, manager.client]) {
          const { items } = await allPages(client);
          assert.deepEqual(items.map((m) => m.email).sort(), [...emails].sort());
        }
        const expected = (await allPages(server.admin.client)).items.map(({ email: _email, ...rest }) => rest);
        for (const [who, client] of [
          ['tester', tester.client],
          ['viewer', viewer.client],
          ['manager with a read-only key', server.client(readOnly.key)],
        ] as const) {
          const { items, cursors } = await allPages(client);
          assert.deepEqual(items, expected, `${who}: the same members, without e-mails`);
          for (const item of items) assert.ok(!('email' in item), `${who} was shown an e-mail`);
          const cursorText = cursors.map((c) => Buffer.from(c, 'base64url').toString('utf8')).join(' ');
          for (const email of emails) assert.ok(!cursorText.includes(email), `${who}: a cursor carries ${email}`);
        }
      });

      test('adding an unknown e-mail answers 404; a tester member may not add members (403)', async () => {
        const project = await createProject(server);
        const tester = await createUser(server, ['tester'], { projects: [project.id] });
        const other = await createUser(server, ['viewer']);
        await assert.rejects(
          server.admin.client.call(v1.projects.addMember, { params: { projectId: project.id, email: `${unique('ghost-')}@example.test` } }),
          rejectsWith(404),
        );
        await assert.rejects(
          tester.client.call(v1.projects.addMember, { params: { projectId: project.id, email: other.email } }),
          rejectsWith(403),
        );
        const members = await server.admin.client.call(v1.projects.listMembers, { params: { projectId: project.id } });
        assert.ok(!members.items.some((m) => m.email === other.email));
      });
    });

    describe('visibility', () => {
      let member: TestUser;
      let outsider: TestUser;
      let hidden: { id: string };
      let shown: { id: string };
      before(async () => {
        shown = await createProject(server, 'Shown');
        hidden = await createProject(server, 'Hidden');
        member = await createUser(server, ['viewer'], { projects: [shown.id] });
        // A manager of another project: enough role for every operation, but no membership.
        outsider = await createUser(server, ['manager'], { projects: [shown.id] });
      });

      test('a non-member gets, on every project route, the 404 a random UUID gets, and nothing changes', async () => {
        const victim = await createUser(server, ['viewer'], { projects: [hidden.id] });
        const calls: [string, (projectId: string) => Promise<unknown>][] = [
          ['GET', (projectId) => outsider.client.call(v1.projects.getProject, { params: { projectId } })],
          ['PATCH', (projectId) => outsider.client.call(v1.projects.updateProject, { params: { projectId }, body: { name: 'pwned' } })],
          [
            'PATCH invalid body',
            (projectId) => outsider.client.call(v1.projects.updateProject, { params: { projectId }, body: { name: '' } }),
          ],
          ['DELETE', (projectId) => outsider.client.call(v1.projects.deleteProject, { params: { projectId } })],
          ['GET members', (projectId) => outsider.client.call(v1.projects.listMembers, { params: { projectId } })],
          ['PUT member', (projectId) => outsider.client.call(v1.projects.addMember, { params: { projectId, email: outsider.email } })],
          ['DELETE member', (projectId) => outsider.client.call(v1.projects.removeMember, { params: { projectId, email: victim.email } })],
        ];
        for (const [name, call] of calls) {
          const hiddenAnswer = await refusalOf(call(hidden.id));
          const randomAnswer = await refusalOf(call(randomUUID()));
          assert.equal(hiddenAnswer.status, 404, name);
          assert.deepEqual(hiddenAnswer, randomAnswer, `${name}: a hidden project answers differently from a missing one`);
        }
        const after = await server.admin.client.call(v1.projects.getProject, { params: { projectId: hidden.id } });
        assert.equal(after.name, 'Hidden');
        const members = await server.admin.client.call(v1.projects.listMembers, { params: { projectId: hidden.id } });
        assert.deepEqual(members.items.map((m) => m.email).sort(), [server.admin.email, victim.email].sort());
      });

      test('the list shows only the projects the caller is a member of; an admin sees all', async () => {
        const own = await member.client.call(v1.projects.listProjects, { query: { limit: 200 } });
        assert.deepEqual(
          own.items.map((p) => p.id),
          [shown.id],
        );
        const loner = await createUser(server, ['manager']);
        assert.deepEqual((await loner.client.call(v1.projects.listProjects)).items, []);
        const all = await server.admin.client.call(v1.projects.listProjects, { query: { limit: 200 } });
        const ids = all.items.map((p) => p.id);
        assert.ok(ids.includes(shown.id) && ids.includes(hidden.id));
        const adminMember = await createUser(server, ['admin']);
        const asAdmin = await adminMember.client.call(v1.projects.getProject, { params: { projectId: hidden.id } });
        assert.equal(asAdmin.id, hidden.id, 'an admin who is no member still sees every project');
      });

      test('the list pages with a cursor in key order', async () => {
        const tag = `P${unique().toUpperCase()}`.slice(0, 8);
        const pager = await createUser(server, ['manager']);
        for (let i = 0; i < 5; i++) await pager.client.call(v1.projects.createProject, { body: { key: `${tag}${i}`, name: `p${i}` } });
        const first = await pager.client.call(v1.projects.listProjects, { query: { limit: 2 } });
        const second = await pager.client.call(v1.projects.listProjects, { query: { limit: 2, cursor: first.nextCursor ?? undefined } });
        const third = await pager.client.call(v1.projects.listProjects, { query: { limit: 2, cursor: second.nextCursor ?? undefined } });
        assert.deepEqual(
          [...first.items, ...second.items, ...third.items].map((p) => p.key),
          [0, 1, 2, 3, 4].map((i) => `${tag}${i}`),
        );
        assert.equal(third.nextCursor, null);
        await assert.rejects(
          pager.client.call(v1.projects.listProjects, { query: { cursor: 'garbage!' } }),
          rejectsWith(400, 'INVALID_CURSOR'),
        );
      });
    });
  });
}
