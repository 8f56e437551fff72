import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { v1 } from '../../src/client/index.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createUser, type TestUser } from '../helpers/factories.ts';
import { randomPng } from '../helpers/png.ts';
import { refusalOf } from '../helpers/problems.ts';
import { startRun } from '../helpers/records.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { upload } from '../helpers/uploads.ts';

// A project's short key works wherever a path takes {projectId}, in any case, and GET /projects?key=
// finds a project by key (SPEC-2.1); a key never tells a non-member that a project exists (SEC-1a).

const newKey = () => `K${randomBytes(5).toString('hex').toUpperCase()}`;

for (const dialect of DIALECTS) {
  describe(`[${dialect}] projects addressed by their short key`, () => {
    let server: TestServer;
    let manager: TestUser;
    let project: { id: string; key: string };
    before(async () => {
      server = await startTestServer(dialect);
      manager = await createUser(server, ['manager']);
      project = await manager.client.call(v1.projects.createProject, { body: { key: newKey(), name: 'Keyed' } });
    });
    after(() => server.close());

    test('GET, PATCH and the members routes take the key, upper- or lower-case', async () => {
      const byId = await manager.client.call(v1.projects.getProject, { params: { projectId: project.id } });
      for (const ref of [project.key, project.key.toLowerCase()]) {
        assert.deepEqual(await manager.client.call(v1.projects.getProject, { params: { projectId: ref } }), byId, ref);
      }
      const renamed = await manager.client.call(v1.projects.updateProject, {
        params: { projectId: project.key.toLowerCase() },
        body: { name: 'Renamed by key' },
      });
      assert.equal(renamed.id, project.id);
      assert.equal(renamed.name, 'Renamed by key');
      const colleague = await createUser(server, ['viewer']);
      const added = await manager.client.call(v1.projects.addMember, { params: { projectId: project.key, email: colleague.email } });
      assert.equal(added.userId, (await colleague.client.call(v1.meta.getMe)).id);
      const members = await manager.client.call(v1.projects.listMembers, { params: { projectId: project.key.toLowerCase() } });
      assert.deepEqual(members.items.map((m) => m.email).sort(), [manager.email, colleague.email].sort());
      // The colleague, now a member, reads it by key too.
      assert.equal((await colleague.client.call(v1.projects.getProject, { params: { projectId: project.key } })).id, project.id);
    });

    test('an artifact is uploaded and listed through the key', async () => {
      const run = await startRun(manager.client, project.id);
      const png = await randomPng();
      const uploaded = await upload(
        server.url,
        manager.key,
        project.key.toLowerCase(),
        { testRunId: run.id, kind: 'screenshot', name: 'by-key.png' },
        { file: { bytes: png, type: 'image/png', filename: 'by-key.png' } },
      );
      assert.equal(uploaded.status, 201, JSON.stringify(uploaded.body));
      assert.equal(uploaded.body.projectId, project.id, 'the artifact belongs to the project the key names');
      const listed = await manager.client.call(v1.artifacts.listArtifacts, {
        params: { projectId: project.key },
        query: { testRunId: run.id },
      });
      assert.deepEqual(
        listed.items.map((a) => a.id),
        [uploaded.body.id],
      );
    });

    test('a non-member asking by key gets exactly the 404 of an unknown key or id, and nothing changes', async () => {
      const outsider = await createUser(server, ['manager']);
      const calls: [string, (projectId: string) => Promise<unknown>][] = [
        ['GET', (projectId) => outsider.client.call(v1.projects.getProject, { params: { projectId } })],
        ['PATCH', (projectId) => outsider.client.call(v1.projects.updateProject, { params: { projectId }, body: { name: 'pwned' } })],
        ['PATCH invalid', (projectId) => outsider.client.call(v1.projects.updateProject, { params: { projectId }, body: { name: '' } })],
        ['GET members', (projectId) => outsider.client.call(v1.projects.listMembers, { params: { projectId } })],
        ['PUT member', (projectId) => outsider.client.call(v1.projects.addMember, { params: { projectId, email: outsider.email } })],
        [
          'GET artifacts',
          (projectId) => outsider.client.call(v1.artifacts.listArtifacts, { params: { projectId }, query: { testRunId: randomUUID() } }),
        ],
      ];
      for (const [name, call] of calls) {
        const unknownId = await refusalOf(call(randomUUID()));
        assert.equal(unknownId.status, 404, name);
        for (const ref of [project.key, project.key.toLowerCase(), newKey()]) {
          assert.deepEqual(await refusalOf(call(ref)), unknownId, `${name} ${ref}: answers differently from an unknown id`);
        }
      }
      const unchanged = await manager.client.call(v1.projects.getProject, { params: { projectId: project.id } });
      assert.notEqual(unchanged.name, 'pwned');
    });

    test('GET /projects?key= lists the visible project with that key, in any case, and nothing else', async () => {
      const other = await manager.client.call(v1.projects.createProject, { body: { key: newKey(), name: 'Other' } });
      for (const key of [project.key, project.key.toLowerCase()]) {
        const page = await manager.client.call(v1.projects.listProjects, { query: { key } });
        assert.deepEqual(
          page.items.map((p) => p.id),
          [project.id],
          key,
        );
        assert.equal(page.nextCursor, null);
      }
      assert.deepEqual((await manager.client.call(v1.projects.listProjects, { query: { key: newKey() } })).items, []);
      const outsider = await createUser(server, ['viewer']);
      assert.deepEqual((await outsider.client.call(v1.projects.listProjects, { query: { key: other.key } })).items, [], 'not visible');
      await assert.rejects(
        manager.client.call(v1.projects.listProjects, { query: { key: 'WEB-SHOP' } }),
        (e: { status: number }) => e.status === 400,
      );
    });
  });
}
