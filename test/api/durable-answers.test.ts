import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { v1 } from '../../src/client/index.ts';
import { createProject, unique } from '../helpers/factories.ts';
import { databaseSettled, startTestServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

// SQLite only: on PostgreSQL the barrier is a no-op, each COMMIT waits for its own flush (DUR-14).
describe('[sqlite] answers to writes wait for a shared sync of what they committed (DUR-14)', () => {
  let server: TestServer;
  const stats = () => server.app.attest.database.stats;
  before(async () => {
    server = await startTestServer('sqlite');
    // The admin key's first use records it off the answer's path (AUTH-8), a commit no answer
    // acknowledges; made here, once (the test clock never moves on to the next recording).
    await server.admin.client.call(v1.projects.listProjects, { query: {} });
    await databaseSettled(server);
  });
  after(() => server?.close());

  test('the first admin is on disk before start-up reports it', () => {
    assert.ok(stats().syncs >= 1);
  });

  test('a write is answered only after a sync that began after its commit', async () => {
    await databaseSettled(server);
    const before = { ...stats() };
    await createProject(server);
    const now = stats();
    assert.ok(now.commits > before.commits, 'the request committed');
    // syncedThrough is the commit count when the covering sync began: it began after every one of them.
    assert.equal(now.syncedThrough, now.commits);
    assert.ok(now.syncs > before.syncs);
  });

  test('concurrent writes share syncs', async () => {
    await databaseSettled(server);
    const before = { ...stats() };
    const writes = 30;
    // Every request is on the server's sockets before it reads any, so they commit while the first
    // sync runs (a sync completes on a later turn of the event loop) and then share the next one.
    const { port } = new URL(server.url);
    const sockets = await Promise.all(
      Array.from(
        { length: writes },
        () =>
          new Promise<net.Socket>((resolve) => {
            const socket = net.connect(Number(port), '127.0.0.1', () => resolve(socket));
          }),
      ),
    );
    await waitFor(() => new Promise<boolean>((resolve) => server.app.server.getConnections((_e, count) => resolve(count >= writes))), {
      message: () => 'the server accepted every connection',
    });
    const answers = sockets.map(
      (socket) =>
        new Promise<string>((resolve) => {
          let text = '';
          socket.on('data', (chunk: Buffer) => {
            text += chunk.toString('latin1');
          });
          socket.on('end', () => resolve(text));
        }),
    );
    for (const socket of sockets) {
      const body = JSON.stringify({ key: unique('G').toUpperCase().slice(0, 12), name: 'Grouped' });
      socket.write(
        `POST /api/v1/projects HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\nservice.api-token: ${server.admin.key}\r\n` +
          `content-type: application/json\r\naccept: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
    }
    for (const answer of await Promise.all(answers)) assert.match(answer, /^HTTP\/1\.1 201 /);
    const now = stats();
    assert.ok(now.commits - before.commits >= writes);
    assert.ok(now.syncs - before.syncs < writes, `${now.syncs - before.syncs} syncs for ${writes} writes`);
    assert.equal(now.syncedThrough, now.commits);
  });

  test('reads never wait for a sync, even with commits pending', async () => {
    const project = await createProject(server);
    await databaseSettled(server);
    // A commit no answer has waited for yet (a temporary table, so the schema stays as it is).
    await sql`CREATE TEMP TABLE IF NOT EXISTS pending_commit (x)`.execute(server.app.attest.db);
    const before = { ...stats() };
    assert.ok(before.commits > before.syncedThrough);
    for (let i = 0; i < 10; i++) await server.admin.client.call(v1.projects.getProject, { params: { projectId: project.id } });
    await databaseSettled(server);
    assert.equal(stats().syncs, before.syncs);
    await server.admin.client.call(v1.projects.updateProject, { params: { projectId: project.id }, body: { name: 'Renamed' } });
    assert.equal(stats().syncs, before.syncs + 1);
    assert.equal(stats().syncedThrough, stats().commits);
  });
});
