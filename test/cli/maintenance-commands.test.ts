import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { promisify } from 'node:util';
import { createProject } from '../helpers/factories.ts';
import { randomPng } from '../helpers/png.ts';
import { startRun } from '../helpers/records.ts';
import { startTestServer } from '../helpers/server.ts';
import { upload } from '../helpers/uploads.ts';

const run = promisify(execFile);
const attest = (args: string[], env: Record<string, string>) =>
  run(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], { env: { ...process.env, ...env } }).then(
    ({ stdout }) => ({ code: 0, stdout }),
    (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, stdout: error.stdout + error.stderr }),
  );

describe('attest verify / gc / backup (sqlite)', () => {
  test('verify passes on a sound data folder, fails on a missing blob; gc and backup report what they did', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'attest-cli-'));
    const dataDir = path.join(dir, 'data');
    const server = await startTestServer('sqlite', { ATTEST_DATA_DIR: dataDir });
    const project = await createProject(server);
    const testRun = await startRun(server.admin.client, project.id);
    const res = await upload(
      server.url,
      server.admin.key,
      project.id,
      { testRunId: testRun.id, kind: 'screenshot', name: 'a.png' },
      { file: { bytes: await randomPng() } },
    );
    assert.equal(res.status, 201);

    const backup = await attest(['backup', path.join(dir, 'backup')], { ATTEST_DATA_DIR: dataDir });
    assert.equal(backup.code, 0, backup.stdout);
    assert.match(backup.stdout, /backed up .* and 1 blobs/);
    await server.close();

    const sound = await attest(['verify', '--json'], { ATTEST_DATA_DIR: dataDir });
    assert.equal(sound.code, 0, sound.stdout);
    assert.equal(JSON.parse(sound.stdout).sound, true);

    const gc = await attest(['gc', '--dry-run'], { ATTEST_DATA_DIR: dataDir });
    assert.equal(gc.code, 0, gc.stdout);
    assert.match(gc.stdout, /would delete 0 blobs/);

    const blobs = path.join(dataDir, 'blobs');
    const file = (fs.readdirSync(blobs, { recursive: true }) as string[])
      .map((f) => path.join(blobs, f))
      .find((f) => fs.statSync(f).isFile());
    assert.ok(file);
    fs.unlinkSync(file);
    const broken = await attest(['verify', '--json'], { ATTEST_DATA_DIR: dataDir });
    assert.equal(broken.code, 1);
    assert.equal(JSON.parse(broken.stdout).missingBlobs.length, 1);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
