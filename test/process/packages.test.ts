import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { CI_MARKERS } from '../../packages/playwright-reporter/src/ci.ts';
import { AttestClient, v1 } from '../../src/client/index.ts';
import { generateKey } from '../../src/server/security/api-key.ts';
import { browserAvailable } from '../helpers/browser.ts';
import { tempDir } from '../helpers/data-folders.ts';
import { NO_RETRY } from '../helpers/http.ts';
import { writeBadgeBaseline } from '../helpers/playwright-fixture.ts';

// Issue 27 item 3: both packages install from their `npm pack` tarballs into a project OUTSIDE the
// checkout, on this Node, and work there: the installed server (`attest serve`) runs, a real
// Playwright project reports to it through `@attest-hq/playwright-reporter` (compiled JavaScript: a
// .ts in the tarball failed with ERR_UNKNOWN_FILE_EXTENSION on Node 20), and `npx attest --version`,
// `import` and `export` work from there.
//
// Cost: the scratch project lives in ATTEST_PACK_SCRATCH (default <tmp>/attest-pack-scratch) and is
// kept between runs. Each run installs the fresh tarballs into it with `--prefer-offline` from the
// npm cache, without install scripts: better-sqlite3's addon comes from the checkout's own build
// (seedNativeBuild), so no run compiles it again. The time is printed.

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const REPORTER_DIR = path.join(ROOT, 'packages/playwright-reporter');
const SCRATCH = path.resolve(process.env.ATTEST_PACK_SCRATCH ?? path.join(os.tmpdir(), 'attest-pack-scratch'));
const run = promisify(execFile);

/** This process's environment without npm's own variables (a test started by `npm test` has them) or CI markers. */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (name.toLowerCase().startsWith('npm_') || name.startsWith('ATTEST_') || (CI_MARKERS as readonly string[]).includes(name)) continue;
    env[name] = value;
  }
  return { ...env, PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD: '1', FORCE_COLOR: '0', ...extra };
}

async function exec(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv) {
  return run(command, args, { cwd, env, maxBuffer: 64 * 1024 * 1024 }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, stdout: error.stdout, stderr: error.stderr }),
  );
}

interface Packed {
  filename: string;
  files: { path: string }[];
}

async function pack(dir: string, destination: string, args: string[] = []): Promise<Packed> {
  const result = await exec('npm', ['pack', '--json', '--pack-destination', destination, ...args], dir, cleanEnv());
  assert.equal(result.code, 0, result.stderr);
  return (JSON.parse(result.stdout) as Packed[])[0]!;
}

/**
 * better-sqlite3 is the one production dependency with an install script: it compiles from source
 * here (no prebuilt binary is reachable), about 3-5 minutes on this machine. The scratch project is
 * installed with --ignore-scripts and then given the addon the checkout's own `npm install` built,
 * when both are the same version of better-sqlite3 (the build is the same Node ABI and the same
 * sources); another version is compiled with `npm rebuild`. What this test proves is our tarballs'
 * contents, not better-sqlite3's build.
 */
async function seedNativeBuild(): Promise<void> {
  const module = (root: string) => path.join(root, 'node_modules/better-sqlite3');
  const version = (root: string) => JSON.parse(fs.readFileSync(path.join(module(root), 'package.json'), 'utf8')).version as string;
  const addon = 'build/Release/better_sqlite3.node';
  if (fs.existsSync(path.join(module(SCRATCH), addon))) return;
  if (version(SCRATCH) === version(ROOT) && fs.existsSync(path.join(module(ROOT), addon))) {
    fs.mkdirSync(path.dirname(path.join(module(SCRATCH), addon)), { recursive: true });
    fs.copyFileSync(path.join(module(ROOT), addon), path.join(module(SCRATCH), addon));
    return;
  }
  const rebuild = await exec('npm', ['rebuild', 'better-sqlite3'], SCRATCH, cleanEnv());
  assert.equal(rebuild.code, 0, rebuild.stderr);
}

describe('the npm pack tarballs, installed outside the checkout', { skip: !browserAvailable() }, () => {
  const packDir = tempDir('attest-pack-');
  let reporterPack: Packed;
  let serverPack: Packed;
  let server: ChildProcess | undefined;
  let url: string;
  let admin: AttestClient;
  let tester: { key: string; client: AttestClient };
  let project: { id: string; key: string };

  before(async () => {
    assert.ok(path.relative(ROOT, SCRATCH).startsWith('..'), `${SCRATCH} is outside the checkout`);
    // The reporter's prepack compiles it (tsc: JavaScript and declarations).
    reporterPack = await pack(REPORTER_DIR, packDir);
    // The root package's `prepare` runs `npm run build` on `npm pack`; here the same build goes to a
    // staged copy of the package (package.json, README, bin/), so the checkout's dist/, which other
    // tests run, is never rebuilt under them.
    const stage = tempDir('attest-pack-stage-');
    for (const file of ['package.json', 'README.md']) fs.copyFileSync(path.join(ROOT, file), path.join(stage, file));
    fs.cpSync(path.join(ROOT, 'bin'), path.join(stage, 'bin'), { recursive: true });
    const build = await exec(process.execPath, ['scripts/build.mjs'], ROOT, cleanEnv({ ATTEST_BUILD_DIR: path.join(stage, 'dist') }));
    assert.equal(build.code, 0, build.stderr);
    serverPack = await pack(stage, packDir, ['--ignore-scripts']);
  });
  after(async () => {
    if (server && server.exitCode === null) {
      server.kill('SIGTERM');
      await new Promise((resolve) => server!.once('close', resolve));
    }
  });

  test('the reporter ships compiled JavaScript with type declarations, and no TypeScript source', () => {
    const files = reporterPack.files.map((f) => f.path).sort();
    for (const needed of [
      'dist/index.js',
      'dist/index.d.ts',
      'dist/mapping.js',
      'dist/ci.js',
      'dist/spool.js',
      'README.md',
      'package.json',
    ]) {
      assert.ok(files.includes(needed), `${needed} in ${files.join(', ')}`);
    }
    assert.deepEqual(
      files.filter((f) => /\.ts$/.test(f) && !f.endsWith('.d.ts')),
      [],
    );
    const manifest = JSON.parse(fs.readFileSync(path.join(REPORTER_DIR, 'package.json'), 'utf8'));
    assert.equal(manifest.name, '@attest-hq/playwright-reporter');
    assert.equal(manifest.private, undefined);
    assert.deepEqual(manifest.exports['.'], { types: './dist/index.d.ts', default: './dist/index.js' });
  });

  test('the server and CLI package ships bin/ and the built dist/, not the sources', () => {
    const files = serverPack.files.map((f) => f.path);
    for (const needed of ['bin/attest.js', 'dist/cli/main.js', 'dist/server/main.js', 'dist/web/index.html', 'package.json']) {
      assert.ok(files.includes(needed), needed);
    }
    assert.deepEqual(
      files.filter((f) => f.startsWith('src/') || f.startsWith('test/') || f.startsWith('packages/')),
      [],
    );
    const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
    assert.equal(manifest.name, '@attest-hq/attest');
    assert.equal(manifest.private, undefined);
    assert.deepEqual(manifest.bin, { attest: './bin/attest.js' });
  });

  test('installed together in a scratch project on this Node: the server, a real Playwright run with the reporter, and the CLI work', async (t) => {
    // The scratch project: the two tarballs and @playwright/test at the checkout's version (in the npm cache).
    fs.mkdirSync(path.join(SCRATCH, 'tests'), { recursive: true });
    const playwrightVersion = JSON.parse(fs.readFileSync(path.join(ROOT, 'node_modules/@playwright/test/package.json'), 'utf8')).version;
    for (const tarball of [reporterPack.filename, serverPack.filename])
      fs.copyFileSync(path.join(packDir, tarball), path.join(SCRATCH, tarball));
    // Fresh tarballs under the same names: npm must unpack them again, not trust what an earlier run installed.
    fs.rmSync(path.join(SCRATCH, 'node_modules/@attest-hq'), { recursive: true, force: true });
    fs.rmSync(path.join(SCRATCH, 'package-lock.json'), { force: true });
    fs.writeFileSync(
      path.join(SCRATCH, 'package.json'),
      `${JSON.stringify(
        {
          name: 'attest-pack-scratch',
          private: true,
          type: 'module',
          devDependencies: {
            '@attest-hq/attest': `file:./${serverPack.filename}`,
            '@attest-hq/playwright-reporter': `file:./${reporterPack.filename}`,
            '@playwright/test': playwrightVersion,
          },
        },
        null,
        2,
      )}\n`,
    );
    // The visual fixture (a failing toHaveScreenshot, a pass, a skip): its reporter is the package name.
    fs.copyFileSync(path.join(ROOT, 'test/fixtures/playwright-visual/playwright.config.ts'), path.join(SCRATCH, 'playwright.config.ts'));
    fs.copyFileSync(path.join(ROOT, 'test/fixtures/playwright-visual/tests/visual.spec.ts'), path.join(SCRATCH, 'tests/visual.spec.ts'));

    const started = Date.now();
    const install = await exec('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts'], SCRATCH, cleanEnv());
    assert.equal(install.code, 0, install.stderr);
    await seedNativeBuild();
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    t.diagnostic(`npm install of the two tarballs in ${SCRATCH}: ${seconds} s`);
    const installed = path.join(SCRATCH, 'node_modules/@attest-hq');
    assert.ok(fs.existsSync(path.join(installed, 'playwright-reporter/dist/index.js')));
    assert.ok(!fs.existsSync(path.join(installed, 'playwright-reporter/src')), 'no TypeScript source installed');
    assert.ok(fs.existsSync(path.join(SCRATCH, 'node_modules/.bin/attest')));

    // The installed server.
    const adminKey = generateKey('standard');
    const dataDir = tempDir('attest-pack-data-');
    server = spawn(process.execPath, [path.join(installed, 'attest/bin/attest.js'), 'serve'], {
      cwd: SCRATCH,
      env: cleanEnv({
        PORT: '0',
        HOST: '127.0.0.1',
        ATTEST_DATA_DIR: dataDir,
        ATTEST_ADMIN_EMAIL: 'admin@example.test',
        ATTEST_ADMIN_API_KEY: adminKey,
        ATTEST_LOG_LEVEL: 'warn',
        ATTEST_RATE_LIMIT_PER_MINUTE: '0',
      }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const output: string[] = [];
    server.stderr!.on('data', (chunk: Buffer) => output.push(chunk.toString()));
    url = await new Promise<string>((resolve, reject) => {
      createInterface({ input: server!.stdout! }).on('line', (line) => {
        output.push(line);
        const match = /^attest listening (\S+)$/.exec(line);
        if (match) resolve(match[1]!.replace('0.0.0.0', '127.0.0.1'));
      });
      server!.once('close', (code) => reject(new Error(`the installed server exited (${code}):\n${output.join('\n')}`)));
    });
    admin = new AttestClient({ baseUrl: url, apiKey: adminKey, retry: NO_RETRY });
    project = await admin.call(v1.projects.createProject, { body: { key: 'PACK', name: 'Packed' } });
    const email = 'tester@example.test';
    await admin.call(v1.users.createUser, { body: { email, name: 'Tester', roles: ['tester'] } });
    const key = (await admin.call(v1.users.createApiKey, { params: { email }, body: { name: 'ci' } })).key;
    await admin.call(v1.projects.addMember, { params: { projectId: project.id, email } });
    tester = { key, client: new AttestClient({ baseUrl: url, apiKey: key, retry: NO_RETRY }) };
    const remote = cleanEnv({ ATTEST_URL: url, ATTEST_API_KEY: key, ATTEST_CONFIG_DIR: tempDir('attest-pack-config-') });
    const npx = (args: string[]) => exec('npx', ['--no', '--', ...args], SCRATCH, remote);

    const version = await npx(['attest', '--version']);
    assert.equal(version.code, 0, version.stderr);
    assert.equal(version.stdout.trim(), JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')).version);

    // A real Playwright run in the scratch project, with the installed reporter.
    const out = path.join(SCRATCH, 'out');
    fs.rmSync(out, { recursive: true, force: true });
    await writeBadgeBaseline(out);
    const playwright = await exec(
      'npx',
      ['--no', '--', 'playwright', 'test'],
      SCRATCH,
      cleanEnv({
        ATTEST_URL: url,
        ATTEST_API_KEY: key,
        ATTEST_PROJECT: project.key,
        ATTEST_PW_OUT: out,
        ATTEST_SPOOL_DIR: tempDir('attest-pack-spool-'),
      }),
    );
    const text = playwright.stdout + playwright.stderr;
    assert.equal(playwright.code, 1, text);
    assert.doesNotMatch(text, /ERR_UNKNOWN_FILE_EXTENSION/);
    const summary = /^attest: sent 3 runs, (\d+) steps, 2 attachments to (\S+) \(job ([^)]+)\)$/m.exec(playwright.stderr);
    assert.ok(summary, text);
    const jobId = summary[3]!;
    const job = await tester.client.call(v1.jobs.getJob, { params: { jobId } });
    assert.equal(job.status, 'completed');
    const runs = (await tester.client.call(v1.runs.listRuns, { query: { projectId: project.id, jobId } })).items;
    const badge = runs.find((r) => r.name === 'the badge matches its baseline')!;
    const artifacts = await tester.client.call(v1.artifacts.listArtifacts, {
      params: { projectId: project.id },
      query: { testRunId: badge.id },
    });
    assert.ok(artifacts.items.some((a) => a.kind === 'visual-diff' && a.stepId !== null));

    // `attest import` of the run's output folder, and `attest export` of the live job.
    const imported = await npx(['attest', 'import', out, '--project', project.key, '--json']);
    assert.equal(imported.code, 0, imported.stderr);
    const record = JSON.parse(imported.stdout);
    assert.equal(record.status, 'completed');
    assert.equal(record.counts.runs, 3);
    assert.equal(record.counts.attachmentsMissing, 0, JSON.stringify(record.files));

    const exportDir = tempDir('attest-pack-export-');
    const exported = await npx(['attest', 'export', '--job', jobId, '--out', exportDir, '--json']);
    assert.equal(exported.code, 0, exported.stderr);
    const summaryJson = JSON.parse(exported.stdout) as { runs: { dir: string }[] };
    assert.equal(summaryJson.runs.length, 3);
    for (const r of summaryJson.runs) assert.ok(fs.existsSync(path.join(r.dir, 'manifest.json')), r.dir);
  });
});
