import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { v1 } from '../../src/client/index.ts';
import { attest as attestCommand } from '../helpers/cli.ts';
import { createProject } from '../helpers/factories.ts';
import { randomPng } from '../helpers/png.ts';
import { startRun } from '../helpers/records.ts';
import { startTestServer } from '../helpers/server.ts';
import { adminScreenshot, adminUpload } from '../helpers/uploads.ts';

const attest = (args: string[], env: Record<string, string>) =>
  attestCommand(args, env).then(({ code, output }) => ({ code, stdout: output }));

describe('attest verify / gc / backup (sqlite)', () => {
  test('verify passes on a sound data folder, fails on a missing blob; gc and backup report what they did', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'attest-cli-'));
    const dataDir = path.join(dir, 'data');
    const server = await startTestServer('sqlite', { ATTEST_DATA_DIR: dataDir });
    const res = await adminScreenshot(server, 'a.png', { bytes: await randomPng() });
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

/** Every file under `dir`, recursively. */
const filesUnder = (dir: string) =>
  (fs.readdirSync(dir, { recursive: true }) as string[]).map((f) => path.join(dir, f)).filter((f) => fs.statSync(f).isFile());

describe('attest maintenance commands refuse what they cannot do, and say what to do (sqlite)', () => {
  test('retention --dry-run counts what a project policy expires and deletes nothing; retention then deletes it (RET-2)', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'attest-cli-'));
    const dataDir = path.join(dir, 'data');
    const server = await startTestServer('sqlite', { ATTEST_DATA_DIR: dataDir, ATTEST_RETENTION_INTERVAL_MINUTES: '0' });
    const project = await createProject(server);
    await server.admin.client.call(v1.projects.updateProject, { params: { projectId: project.id }, body: { retention: { days: 30 } } });
    const finished = (days: number) =>
      server.admin.client.call(v1.runs.createRun, {
        body: {
          projectId: project.id,
          name: `${days} days old`,
          verdict: 'passed',
          startedAt: new Date(Date.now() - days * 86_400_000 - 1000).toISOString(),
          finishedAt: new Date(Date.now() - days * 86_400_000).toISOString(),
        },
      });
    await finished(60);
    await finished(45);
    await finished(5);
    await server.close();

    const dry = await attest(['retention', '--dry-run'], { ATTEST_DATA_DIR: dataDir });
    assert.equal(dry.code, 0, dry.stdout);
    assert.match(dry.stdout, new RegExp(`${project.key}: 2 runs would be deleted \\(project: days 30\\)`));
    const again = await attest(['retention', '--dry-run', '--json'], { ATTEST_DATA_DIR: dataDir });
    assert.equal(
      (JSON.parse(again.stdout) as { projects: { key: string; expired: number }[] }).projects.find((p) => p.key === project.key)?.expired,
      2,
    );
    const real = await attestCommand(['retention'], { ATTEST_DATA_DIR: dataDir });
    assert.match(real.stdout, /deleted 2 runs in all/);
    // Not a terminal: its progress as plain lines on stderr, from the runs counted first.
    assert.match(real.stderr, /^deleting: 0\/2 runs$/m);
    assert.match(real.stderr, /^deleting: 2\/2 runs$/m);
    const after = await attest(['retention', '--dry-run'], { ATTEST_DATA_DIR: dataDir });
    assert.match(after.stdout, new RegExp(`${project.key}: 0 runs would be deleted`));
  });

  test('verify, gc, backup and admin-key refuse a data folder that does not exist or holds no database, and create nothing', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'attest-cli-'));
    const missing = path.join(dir, 'missing');
    for (const args of [['verify'], ['gc'], ['backup', path.join(dir, 'out')]]) {
      const absent = await attestCommand(args, { ATTEST_DATA_DIR: missing });
      assert.notEqual(absent.code, 0, absent.output);
      assert.match(absent.stderr, /the data folder .*missing does not exist; set ATTEST_DATA_DIR/, `${args[0]}: ${absent.output}`);
      assert.equal(fs.existsSync(missing), false, `${args[0]} created the missing folder`);
      const empty = await attestCommand(args, { ATTEST_DATA_DIR: dir });
      assert.notEqual(empty.code, 0, empty.output);
      assert.match(empty.stderr, /holds no Attest database \(no attest\.db\)/, `${args[0]}: ${empty.output}`);
      assert.deepEqual(fs.readdirSync(dir), [], `${args[0]} wrote into the empty folder`);
    }
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('options are checked and named; --version; --json on migrate and gc', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'attest-cli-'));
    const migrate = await attestCommand(['migrate', '--json'], { ATTEST_DATA_DIR: dataDir });
    assert.equal(migrate.code, 0, migrate.output);
    assert.deepEqual(JSON.parse(migrate.stdout), { upToDate: true, dialect: 'sqlite' });
    for (const value of ['abc', '-5', '1.5']) {
      const refused = await attestCommand(['gc', `--grace-minutes=${value}`], { ATTEST_DATA_DIR: dataDir });
      assert.notEqual(refused.code, 0, refused.output);
      assert.match(refused.stderr, /option '--grace-minutes <minutes>' argument .* is invalid\. expected a whole number, 0 or more/);
      assert.doesNotMatch(refused.output, /Invalid time value/);
    }
    const gc = await attestCommand(['gc', '--grace-minutes', '0', '--json'], { ATTEST_DATA_DIR: dataDir });
    assert.equal(gc.code, 0, gc.output);
    assert.deepEqual(Object.keys(JSON.parse(gc.stdout)).sort(), [
      'deleted',
      'deletedBytes',
      'dryRun',
      'keptFresh',
      'reclaimed',
      'referenced',
      'removedFolders',
      'scanned',
      'unusedImages',
    ]);
    const version = await attestCommand(['--version'], {});
    assert.equal(version.code, 0);
    const pkg = JSON.parse(fs.readFileSync('package.json', 'utf8')) as { version: string };
    assert.equal(version.stdout.trim(), pkg.version);
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  test('while the server runs, offline commands say to stop it or use the online one; restore checks every blob before moving anything', async (t) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'attest-cli-'));
    const dataDir = path.join(dir, 'data');
    const server = await startTestServer('sqlite', { ATTEST_DATA_DIR: dataDir });
    // A failed assertion must not leave the server listening (the test process would never end).
    t.after(() => server.close().catch(() => {}));
    const project = await createProject(server);
    const testRun = await startRun(server.admin.client, project.id);
    for (const name of ['a.png', 'b.png']) {
      const res = await adminUpload(server, project.id, { testRunId: testRun.id, kind: 'screenshot', name }, { bytes: await randomPng() });
      assert.equal(res.status, 201);
    }
    for (const [args, advice] of [
      [['verify'], /stop the server first, then run attest verify again/],
      [['gc'], /stop the server first, or leave it to the server, which collects garbage every hour/],
      [['migrate'], /The running server has already migrated it/],
    ] as const) {
      const busy = await attestCommand([...args], { ATTEST_DATA_DIR: dataDir });
      assert.notEqual(busy.code, 0);
      assert.match(busy.stderr, advice, busy.output);
    }
    const backupDir = path.join(dir, 'backup');
    const backup = await attestCommand(['backup', backupDir, '--json'], { ATTEST_DATA_DIR: dataDir });
    assert.equal(backup.code, 0, backup.output);
    const made = JSON.parse(backup.stdout);
    assert.ok(made.blobs >= 2, backup.stdout);
    await server.close();

    const restored = await attestCommand(['restore', backupDir, '--json'], { ATTEST_DATA_DIR: path.join(dir, 'restored') });
    assert.equal(restored.code, 0, restored.output);
    assert.equal(JSON.parse(restored.stdout).blobs, made.blobs);

    // One bit flipped in one blob of a copy of the backup: refused, and the data folder stays empty.
    const flipped = path.join(dir, 'flipped');
    fs.cpSync(backupDir, flipped, { recursive: true });
    const victim = filesUnder(path.join(flipped, 'blobs'))[0] as string;
    const bytes = fs.readFileSync(victim);
    const middle = Math.floor(bytes.length / 2);
    bytes[middle] = (bytes[middle] as number) ^ 0x01;
    fs.writeFileSync(victim, bytes);
    const target = path.join(dir, 'target');
    const damaged = await attestCommand(['restore', flipped], { ATTEST_DATA_DIR: target });
    assert.notEqual(damaged.code, 0, damaged.output);
    assert.match(damaged.stderr, new RegExp(`is damaged: blob ${path.basename(victim)} does not match its SHA-256`));
    assert.deepEqual(fs.existsSync(target) ? fs.readdirSync(target) : [], [], 'nothing was moved into the data folder');

    // A blob missing from the backup: a clear message, not a raw ENOENT.
    fs.copyFileSync(filesUnder(path.join(backupDir, 'blobs')).find((f) => path.basename(f) === path.basename(victim)) as string, victim);
    fs.unlinkSync(filesUnder(path.join(flipped, 'blobs'))[1] as string);
    const lacking = await attestCommand(['restore', flipped], { ATTEST_DATA_DIR: target });
    assert.notEqual(lacking.code, 0, lacking.output);
    assert.match(lacking.stderr, /is damaged: blob [0-9a-f]{64}, which its database references, is missing/);
    assert.doesNotMatch(lacking.output, /ENOENT/);
    assert.deepEqual(fs.existsSync(target) ? fs.readdirSync(target) : [], []);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
