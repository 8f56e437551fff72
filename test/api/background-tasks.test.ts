import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { v1 } from '../../src/client/index.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createProject, unique } from '../helpers/factories.ts';
import { blobEnv } from '../helpers/s3.ts';
import { startPeerServer, startTestServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

// SCALE-5 across instances in one process: two instances on one PostgreSQL database and one
// bucket, both polling only once a minute. An import accepted by an instance whose runner is
// stopped is written by the other, which the notification of the new task woke: well before its
// next poll.

const MINUTE_POLL = { ATTEST_TASK_POLL_MS: '60000' };

if (DIALECTS.includes('postgres')) {
  describe('[postgres] background tasks between instances (SCALE-5)', () => {
    let first: TestServer;
    let second: TestServer;

    before(async () => {
      const blobs = await blobEnv('postgres');
      first = await startTestServer('postgres', { ...blobs, ...MINUTE_POLL });
      second = await startPeerServer(first, { ...blobs, ...MINUTE_POLL });
    });
    after(async () => {
      await second?.close();
      await first?.close();
    });

    test('an import accepted where no runner runs is written by the other instance, woken by the notification', async () => {
      await first.app.attest.background.stop();
      const projectId = (await createProject(first, 'Tasks between instances')).id;
      const xml = `<testsuite name="${unique('s')}"><testcase classname="a" name="one"/><testcase classname="a" name="two"/></testsuite>`;
      const accepted = await first.admin.client.importReport(projectId, { name: 'r.xml', bytes: Buffer.from(xml) });
      const read = () => second.admin.client.call(v1.imports.getImport, { params: { projectId, importId: String(accepted.id) } });
      // Deliberately shorter than the minute between two polls: only the notification explains it.
      const record = await waitFor(async () => ((await read()).status === 'completed' ? read() : undefined), { timeoutMs: 30_000 });
      assert.equal(record.counts?.runs, 2);
    });
  });
}
