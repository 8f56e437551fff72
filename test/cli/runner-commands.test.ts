import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { v1 } from '../../src/client/index.ts';
import { attest } from '../helpers/cli.ts';
import { createProject, createUser, type TestUser, unique } from '../helpers/factories.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

// SCALE-6: `attest runner claim` takes the oldest queued run a runner can serve under a lease, and
// `attest runner heartbeat` keeps the lease, for runners written as shell scripts.

describe('attest runner claim and heartbeat (sqlite)', () => {
  let server: TestServer;
  let tester: TestUser;
  let project: { id: string; key: string };
  let env: Record<string, string>;
  let deviceId: string;

  before(async () => {
    server = await startTestServer('sqlite');
    project = await createProject(server, 'Lab');
    tester = await createUser(server, ['tester'], { projects: [project.id] });
    deviceId = unique('pixel-');
    await server.admin.client.call(v1.devices.registerDevice, {
      body: { id: deviceId, name: 'Pixel 7', platform: 'android', labels: ['android', 'phone'] },
    });
    env = {
      ATTEST_CONFIG_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'attest-config-')),
      ATTEST_URL: server.url,
      ATTEST_API_KEY: tester.key,
    };
  });
  after(() => server.close());

  const queueRun = async () => {
    const test = await tester.client.call(v1.tests.createTest, {
      body: { projectId: project.id, name: unique('Checkout '), steps: [{ action: 'pay', expected: 'paid' }] },
    });
    await tester.client.call(v1.jobs.createJob, { body: { projectId: project.id, testIds: [test.id], deviceIds: [deviceId] } });
    return test.name;
  };

  test('claim takes a queued run on a device it serves under a lease, heartbeat keeps the lease, and nothing left is no error', async () => {
    const name = await queueRun();
    const args = ['runner', 'claim', '--runner', 'lab-runner', '--label', 'android,phone', '--project', project.key, '--lease', '60'];
    const claimed = await attest([...args, '--json'], env);
    assert.equal(claimed.code, 0, claimed.output);
    const run = JSON.parse(claimed.stdout) as { id: string; name: string; status: string; runner: string; deviceId: string };
    assert.deepEqual([run.name, run.status, run.runner, run.deviceId], [name, 'running', 'lab-runner', deviceId]);

    const beat = await attest(['runner', 'heartbeat', run.id, '--runner', 'lab-runner', '--lease', '120'], env);
    assert.equal(beat.code, 0, beat.output);
    assert.match(beat.stdout, new RegExp(`^lease of lab-runner on ${run.id} extended until \\S+Z\\n$`));
    const other = await attest(['runner', 'heartbeat', run.id, '--runner', 'someone-else'], env);
    assert.equal(other.code, 1);
    assert.match(other.stderr, /Another runner holds the lease .*\(409 STATE_CONFLICT\)/);

    const none = await attest(args, env);
    assert.equal(none.code, 0, none.output);
    assert.equal(none.stdout, 'nothing to claim: no queued run matches\n');
    assert.equal((await attest([...args, '--json'], env)).stdout, 'null\n');
  });

  test('claim prints the run, its device and how to keep the lease; the runner is named after the host unless told', async () => {
    const name = await queueRun();
    const claimed = await attest(['runner', 'claim', '--device', deviceId], env);
    assert.equal(claimed.code, 0, claimed.output);
    const runner = os
      .hostname()
      .slice(0, 128)
      .replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    assert.match(claimed.stdout, new RegExp(`^claimed \\S+: ${name}\\n`));
    assert.match(claimed.stdout, new RegExp(`device ${deviceId}`));
    assert.match(claimed.stdout, new RegExp(`leased to ${runner} until \\S+Z: attest runner heartbeat \\S+ --runner "${runner}" keeps it`));
  });

  test('a viewer is refused with the problem and exit status 1', async () => {
    const viewer = await createUser(server, ['viewer'], { projects: [project.id] });
    const refused = await attest(['runner', 'claim', '--key', viewer.key], env);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /\(403 FORBIDDEN\)/);
  });

  test('--help is there for both commands', async () => {
    for (const args of [
      ['runner', 'claim'],
      ['runner', 'heartbeat'],
    ]) {
      const help = await attest([...args, '--help'], {});
      assert.equal(help.code, 0, args.join(' '));
      assert.match(help.stdout, /^Usage: attest runner /);
      assert.match(help.stdout, /--runner <name>/);
    }
  });
});
