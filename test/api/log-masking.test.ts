import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { v1 } from '../../src/client/index.ts';
import { refreshLegacyKeyDigests } from '../../src/server/context.ts';
import { emailDigest, keyDigest, SECRET_SCANNING_REGEX } from '../../src/server/security/api-key.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createProject, createUser } from '../helpers/factories.ts';
import { rawRequest } from '../helpers/http.ts';
import { logEntries, waitForRequestLogs } from '../helpers/logs.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

// The audit's finding: a key placed in a URL path or a `cursor=` parameter was logged verbatim. Real
// keys of both formats go into every position of a URL a client might put them in, and the
// server's own log (captured whole) holds neither, while the resource ids in the same kind of
// positions stay readable (AUTH-9, SEC-2a).

for (const dialect of DIALECTS) {
  describe(`[${dialect}] keys in URLs never reach the request log (AUTH-9, SEC-2a)`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer(dialect);
    });
    after(() => server.close());

    test('a standard or old-format key in any path or query position is masked; ids in id positions are kept', async () => {
      const user = await createUser(server, ['tester']);
      const standard = user.key;
      const legacy = (
        await server.admin.client.call(v1.users.createApiKey, { params: { email: user.email }, body: { name: 'old', format: 'legacy' } })
      ).key;
      const project = await createProject(server);
      const percentEncoded = (text: string) => [...text].map((c) => `%${c.charCodeAt(0).toString(16).padStart(2, '0')}`).join('');
      const paths = [
        `/api/v1/${standard}`,
        `/api/v1/${legacy}`,
        `/api/v1/${legacy.toUpperCase()}/me`,
        `/api/v1/testmgmt/testruns/${standard}`,
        `/api/v1/users/${legacy}/apikeys`,
        `/api/v1/projects/${project.id}/${legacy}`,
        `/api/v1/${percentEncoded(standard)}`,
        `/api/v1/${percentEncoded(legacy)}`,
        `/api/v1/projects?cursor=${legacy}`,
        `/api/v1/projects?cursor=${standard}`,
        `/api/v1/projects?limit=5&name=${legacy}`,
        `/api/v1/projects?${standard}`,
        `/api/v1/testmgmt/testruns?projectId=${project.id}&jobId=key-${legacy}`,
        `/api/v1/me?api_key=${standard}`,
        // An old-format key in an id's place: shaped like an id, but a stored key.
        `/api/v1/testmgmt/testruns/${legacy}/results`,
        `/api/v1/projects/${legacy.toUpperCase()}`,
        `/api/v1/testmgmt/testruns?projectId=${project.id}&jobId=${legacy}`,
      ];
      const requestIds: string[] = [];
      for (const path of paths) {
        const answer = await rawRequest(
          { base: server.url, path },
          { headers: { 'service.api-token': server.admin.key, accept: 'application/json' } },
        );
        assert.ok(answer.status > 0, path);
        requestIds.push(String(answer.headers['x-request-id']));
      }
      const kept = [`/api/v1/projects/${project.id}`, `/api/v1/testmgmt/testruns?projectId=${project.id}`];
      for (const path of kept) {
        const answer = await rawRequest(
          { base: server.url, path },
          { headers: { 'service.api-token': server.admin.key, accept: 'application/json' } },
        );
        assert.equal(answer.status, 200, `${path}: ${answer.text}`);
        requestIds.push(String(answer.headers['x-request-id']));
      }
      await waitForRequestLogs(server, requestIds);

      const logs = server.logs.join('');
      for (const secret of [standard, standard.slice(4), legacy, legacy.toUpperCase(), percentEncoded(standard), percentEncoded(legacy)]) {
        assert.ok(!logs.includes(secret), `${secret.slice(0, 12)}… reached the log`);
      }
      assert.ok(!logs.toLowerCase().includes(legacy.replaceAll('-', '')), 'not even without its dashes');
      assert.doesNotMatch(logs, new RegExp(SECRET_SCANNING_REGEX));

      // Every one of those requests was logged, with its URL masked, not left out.
      const urls = new Map(
        logEntries(server)
          .filter((entry) => entry.msg === 'incoming request')
          .map((entry) => [String(entry.reqId), String((entry.req as { url: string }).url)]),
      );
      for (const [i, path] of paths.entries()) {
        const logged = urls.get(requestIds[i] as string);
        assert.ok(logged?.includes('redacted'), `${path} was logged as ${logged}`);
      }
      assert.equal(urls.get(requestIds[paths.length] as string), kept[0], 'a project id in its place stays readable');
      assert.equal(urls.get(requestIds[paths.length + 1] as string), kept[1], 'an id query parameter stays readable');
      const loggedAs = (path: string) => urls.get(requestIds[paths.indexOf(path)] as string);
      assert.equal(
        loggedAs(`/api/v1/testmgmt/testruns?projectId=${project.id}&jobId=key-${legacy}`),
        `/api/v1/testmgmt/testruns?projectId=${project.id}&jobId=%5Bredacted%5D`,
        'beside an id, only the key is masked',
      );
      // A path no route matches declares no id: every UUID in it is masked, the project's id too.
      assert.equal(loggedAs(`/api/v1/projects/${project.id}/${legacy}`), '/api/v1/projects/[redacted]/[redacted]');
      assert.equal(loggedAs(`/api/v1/testmgmt/testruns/${legacy}/results`), '/api/v1/testmgmt/testruns/[redacted]/results');
      assert.equal(
        loggedAs(`/api/v1/testmgmt/testruns?projectId=${project.id}&jobId=${legacy}`),
        `/api/v1/testmgmt/testruns?projectId=${project.id}&jobId=%5Bredacted%5D`,
        'an id query parameter holding a stored key',
      );
    });

    test('an old-format key another instance stored is masked in an id position once the digests are read again', async () => {
      const user = await createUser(server, ['tester']);
      const elsewhere = randomUUID();
      const db = server.app.attest.db;
      const owner = await db.selectFrom('users').select('id').where('email', '=', user.email).executeTakeFirstOrThrow();
      // What another instance (or `attest admin-key` beside a running server) writes: a row this process never saw.
      await db
        .insertInto('api_keys')
        .values({
          id: randomUUID(),
          user_id: owner.id,
          name: 'stored elsewhere',
          format: 'legacy',
          scope: 'full',
          key_digest: keyDigest(elsewhere, 'legacy'),
          email_digest: emailDigest(user.email),
          display_hint: 'elsewhere',
          created_at: new Date().toISOString(),
          created_by: null,
          expires_at: null,
          last_used_at: null,
          revoked_at: null,
        })
        .execute();
      const path = `/api/v1/testmgmt/testruns/${elsewhere}/results`;
      const logged = async () => {
        const answer = await rawRequest({ base: server.url, path }, { headers: { 'service.api-token': server.admin.key } });
        const requestId = String(answer.headers['x-request-id']);
        await waitForRequestLogs(server, [requestId]);
        const entry = logEntries(server).find((e) => e.msg === 'incoming request' && e.reqId === requestId);
        return (entry?.req as { url: string } | undefined)?.url;
      };
      assert.equal(await logged(), path, 'not yet known here: logged as the id it looks like');
      await refreshLegacyKeyDigests(server.app.attest);
      assert.equal(await logged(), '/api/v1/testmgmt/testruns/[redacted]/results');
    });
  });
}
