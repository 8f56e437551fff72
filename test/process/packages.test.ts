import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import semver from 'semver';
import { CI_MARKERS } from '../../packages/playwright-reporter/src/ci.ts';
import { AttestClient, v1 } from '../../src/client/index.ts';
import { generateKey } from '../../src/server/security/api-key.ts';
import { browserAvailable } from '../helpers/browser.ts';
import { tempDir } from '../helpers/data-folders.ts';
import { NO_RETRY } from '../helpers/http.ts';
import { writeBadgeBaseline } from '../helpers/playwright-fixture.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

// The three packages install from their `npm pack` tarballs into projects OUTSIDE the checkout, on
// this Node, and work there.
//
// - `@attest-hq/cli` with `@attest-hq/playwright-reporter` (PKG-1, PKG-2): a project of their own,
//   made afresh each run, installs them with no warning (no EBADENGINE on Node 20, 22 or 24), no
//   install script and nothing to compile, and `npx @attest-hq/cli` prints its version, imports
//   reports and gates a job against a test server. The install time is printed.
// - `@attest-hq/attest` (the server, with the reporter): the installed server (`attest serve`) runs,
//   a real Playwright project reports to it through the reporter (compiled JavaScript: a .ts in the
//   tarball failed with ERR_UNKNOWN_FILE_EXTENSION on Node 20), and `npx @attest-hq/attest
//   --version`, `import` and `export` work from there. Its scratch project lives in
//   ATTEST_PACK_SCRATCH (default <tmp>/attest-pack-scratch) and is kept between runs: each run
//   installs the fresh tarballs into it with `--prefer-offline` from the npm cache, without install
//   scripts; better-sqlite3's addon comes from the checkout's own build (seedNativeBuild), so no run
//   compiles it again.

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const REPORTER_DIR = path.join(ROOT, 'packages/playwright-reporter');
const CLI_DIR = path.join(ROOT, 'packages/cli');
const SCRATCH = path.resolve(process.env.ATTEST_PACK_SCRATCH ?? path.join(os.tmpdir(), 'attest-pack-scratch'));
const CLI_SCRATCH = path.join(os.tmpdir(), 'attest-cli-scratch');
/** The first release of each Node line `engines` accepts that the packages must install on without EBADENGINE. */
const NODE_LINES = ['20.19.0', '22.0.0', '24.0.0'];
const manifestOf = (dir: string) => JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
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

/** npm's warnings (`npm warn EBADENGINE …`, deprecations, install scripts) in an install's output. */
const npmWarnings = (output: string) => output.split('\n').filter((line) => /^npm warn/i.test(line.trim()));

interface Installed {
  name: string;
  version: string;
  dir: string;
  manifest: { engines?: { node?: string }; scripts?: Record<string, string>; dependencies?: Record<string, string> };
}

/** Every package under `root`/node_modules, nested ones too. */
function installedPackages(root: string): Installed[] {
  const found: Installed[] = [];
  const visit = (modules: string) => {
    if (!fs.existsSync(modules)) return;
    for (const name of fs.readdirSync(modules)) {
      if (name.startsWith('.')) continue;
      const dirs = name.startsWith('@')
        ? fs.readdirSync(path.join(modules, name)).map((n) => path.join(modules, name, n))
        : [path.join(modules, name)];
      for (const dir of dirs) {
        if (!fs.existsSync(path.join(dir, 'package.json'))) continue;
        const manifest = manifestOf(dir);
        found.push({ name: manifest.name, version: manifest.version, dir, manifest });
        visit(path.join(dir, 'node_modules'));
      }
    }
  };
  visit(path.join(root, 'node_modules'));
  return found;
}

/**
 * What npm would warn about or build on some Node line: an `engines.node` range that refuses the
 * first release of a line (npm's EBADENGINE test, `semver.satisfies` with prereleases), an install
 * script, or a `binding.gyp` (which npm builds with node-gyp even without a script).
 */
function installProblems(packages: Installed[]): string[] {
  const problems: string[] = [];
  for (const { name, version, dir, manifest } of packages) {
    const range = manifest.engines?.node;
    for (const node of [...NODE_LINES, process.versions.node]) {
      if (range && !semver.satisfies(node, range, { includePrerelease: true }))
        problems.push(`${name}@${version} refuses Node ${node} (${range})`);
    }
    for (const script of ['preinstall', 'install', 'postinstall']) {
      if (manifest.scripts?.[script]) problems.push(`${name}@${version} has an ${script} script`);
    }
    if (fs.existsSync(path.join(dir, 'binding.gyp'))) problems.push(`${name}@${version} has a binding.gyp`);
  }
  return problems;
}

/** A JUnit report of the suite `Cart` with the given verdicts. */
const junit = (cases: Record<string, 'passed' | 'failed'>) =>
  `<?xml version="1.0" encoding="UTF-8"?>\n<testsuite name="Cart" tests="${Object.keys(cases).length}">\n${Object.entries(cases)
    .map(
      ([name, verdict]) =>
        `  <testcase classname="Cart" name="${name}" time="0.01">${verdict === 'failed' ? '<failure message="expected 3, got 2">AssertionError: expected 3, got 2</failure>' : ''}</testcase>`,
    )
    .join('\n')}\n</testsuite>\n`;

/**
 * What `npm publish --dry-run` would warn about or correct in a package's manifest (a bin path npm
 * rewrites, a missing field), leaving out that nobody is logged in to the registry here.
 */
async function publishWarnings(dir: string): Promise<string[]> {
  const result = await exec('npm', ['publish', '--dry-run', '--ignore-scripts'], dir, cleanEnv());
  assert.equal(result.code, 0, result.stderr);
  return npmWarnings(result.stdout + result.stderr).filter((line) => !/requires you to be logged in/.test(line));
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

const packDir = tempDir('attest-pack-');
let reporterPack: Packed;
let cliPack: Packed;

before(async () => {
  for (const scratch of [SCRATCH, CLI_SCRATCH])
    assert.ok(path.relative(ROOT, scratch).startsWith('..'), `${scratch} is outside the checkout`);
  // The reporter's prepack compiles it (tsc: JavaScript and declarations); the CLI's bundles it (scripts/build-cli.mjs).
  reporterPack = await pack(REPORTER_DIR, packDir);
  cliPack = await pack(CLI_DIR, packDir);
});

describe('@attest-hq/cli and @attest-hq/playwright-reporter, installed without the server (PKG-1, PKG-2)', () => {
  let server: TestServer;
  let key: string;

  before(async () => {
    server = await startTestServer('sqlite');
    const project = await server.admin.client.call(v1.projects.createProject, { body: { key: 'CART', name: 'Cart' } });
    const email = 'ci@example.test';
    await server.admin.client.call(v1.users.createUser, { body: { email, name: 'CI', roles: ['tester'] } });
    key = (await server.admin.client.call(v1.users.createApiKey, { params: { email }, body: { name: 'ci' } })).key;
    await server.admin.client.call(v1.projects.addMember, { params: { projectId: project.id, email } });
  });
  after(() => server?.close());

  test('the CLI ships one bundle with its notices and depends on nothing', () => {
    const files = cliPack.files.map((f) => f.path).sort();
    assert.deepEqual(files, ['README.md', 'bin/attest.js', 'dist/THIRD_PARTY_NOTICES.md', 'dist/attest.js', 'package.json']);
    const manifest = manifestOf(CLI_DIR);
    assert.equal(manifest.name, '@attest-hq/cli');
    assert.equal(manifest.private, undefined);
    assert.deepEqual(manifest.bin, { attest: 'bin/attest.js' });
    for (const field of ['dependencies', 'peerDependencies', 'optionalDependencies', 'bundleDependencies'])
      assert.equal(manifest[field], undefined, field);
    // The same release as the server it talks to.
    assert.equal(manifest.version, manifestOf(ROOT).version);
    const notices = fs.readFileSync(path.join(CLI_DIR, 'dist/THIRD_PARTY_NOTICES.md'), 'utf8');
    for (const bundled of ['commander', 'typebox', 'fflate']) assert.match(notices, new RegExp(`^## ${bundled} `, 'm'));
  });

  test('npm publish --dry-run of the CLI and the reporter has nothing to correct', async () => {
    assert.deepEqual(await publishWarnings(CLI_DIR), []);
    assert.deepEqual(await publishWarnings(REPORTER_DIR), []);
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

  test('a fresh project installs both tarballs with no warning and nothing to build, and the CLI imports and gates against a server', async (t) => {
    fs.rmSync(CLI_SCRATCH, { recursive: true, force: true });
    fs.mkdirSync(CLI_SCRATCH, { recursive: true });
    for (const tarball of [cliPack.filename, reporterPack.filename])
      fs.copyFileSync(path.join(packDir, tarball), path.join(CLI_SCRATCH, tarball));
    const playwrightVersion = manifestOf(path.join(ROOT, 'node_modules/@playwright/test')).version;
    fs.writeFileSync(
      path.join(CLI_SCRATCH, 'package.json'),
      `${JSON.stringify(
        {
          name: 'attest-cli-scratch',
          private: true,
          type: 'module',
          devDependencies: {
            '@attest-hq/cli': `file:./${cliPack.filename}`,
            '@attest-hq/playwright-reporter': `file:./${reporterPack.filename}`,
            '@playwright/test': playwrightVersion,
          },
        },
        null,
        2,
      )}\n`,
    );
    // As a CI job installs: install scripts allowed (there are none to run), dependencies from the npm cache.
    const started = Date.now();
    const install = await exec('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund'], CLI_SCRATCH, cleanEnv());
    t.diagnostic(
      `npm install of @attest-hq/cli, @attest-hq/playwright-reporter and @playwright/test: ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
    assert.equal(install.code, 0, install.stderr);
    assert.deepEqual(npmWarnings(install.stdout + install.stderr), []);
    const packages = installedPackages(CLI_SCRATCH);
    assert.deepEqual(installProblems(packages), []);
    const names = packages.map((p) => p.name);
    for (const server of ['@attest-hq/attest', 'better-sqlite3', 'sharp', 'fastify', 'pg', 'cookie'])
      assert.ok(!names.includes(server), `${server} is installed`);

    const remote = cleanEnv({ ATTEST_URL: server.url, ATTEST_API_KEY: key, ATTEST_CONFIG_DIR: tempDir('attest-cli-config-') });
    const cli = (args: string[]) => exec('npx', ['--no', '--', '@attest-hq/cli', ...args], CLI_SCRATCH, remote);
    const version = await cli(['--version']);
    assert.equal(version.code, 0, version.stderr);
    assert.equal(version.stdout.trim(), manifestOf(CLI_DIR).version);
    const help = await cli(['--help']);
    for (const maintenance of ['serve', 'verify', 'gc', 'backup', 'restore', 'retention', 'migrate', 'admin-key']) {
      assert.doesNotMatch(help.stdout, new RegExp(`^  ${maintenance} `, 'm'), `${maintenance} is a server command`);
    }

    // Two imports on main: the second breaks a test the first passed.
    const reports = tempDir('attest-cli-reports-');
    fs.writeFileSync(path.join(reports, 'base.xml'), junit({ 'adds an item': 'passed', 'computes the total': 'passed' }));
    fs.writeFileSync(path.join(reports, 'head.xml'), junit({ 'adds an item': 'passed', 'computes the total': 'failed' }));
    const jobs: string[] = [];
    for (const report of ['base.xml', 'head.xml']) {
      const imported = await cli(['import', path.join(reports, report), '--project', 'CART', '--branch', 'main', '--json']);
      assert.equal(imported.code, 0, imported.stderr);
      const record = JSON.parse(imported.stdout) as { status: string; jobId: string; counts: { runs: number } };
      assert.equal(record.status, 'completed');
      assert.equal(record.counts.runs, 2);
      jobs.push(record.jobId);
    }
    const [baseJob, headJob] = jobs as [string, string];
    // The verdict as a pipeline reads it: the exit code, and the comparison in --json.
    const gate = async (args: string[]) => {
      const result = await cli(['gate', ...args, '--json']);
      assert.ok(result.stdout, `gate ${args.join(' ')} (exit ${result.code}): ${result.stderr}`);
      const verdict = JSON.parse(result.stdout) as { pass: boolean; comparison: { newFailures: { name: string }[] } };
      return { code: result.code, pass: verdict.pass, newFailures: verdict.comparison.newFailures.map((f) => f.name) };
    };
    assert.deepEqual(await gate(['--job', headJob, '--base', baseJob]), { code: 1, pass: false, newFailures: ['computes the total'] });
    assert.deepEqual(await gate(['--job', baseJob]), { code: 0, pass: true, newFailures: [] });

    // The reporter installed beside it loads as Playwright loads it.
    const reporter = await exec(
      process.execPath,
      ['--input-type=module', '-e', "const m = await import('@attest-hq/playwright-reporter'); process.stdout.write(typeof m.default);"],
      CLI_SCRATCH,
      cleanEnv(),
    );
    assert.equal(reporter.code, 0, reporter.stderr);
    assert.equal(reporter.stdout, 'function');
  });
});

describe('@attest-hq/attest, the server, installed outside the checkout with the reporter', { skip: !browserAvailable() }, () => {
  let serverPack: Packed;
  let stageDir: string;
  let server: ChildProcess | undefined;
  let url: string;
  let admin: AttestClient;
  let tester: { key: string; client: AttestClient };
  let project: { id: string; key: string };

  before(async () => {
    // The root package's `prepare` runs `npm run build` on `npm pack`; here the same build goes to a
    // staged copy of the package (package.json, README, bin/), so the checkout's dist/, which other
    // tests run, is never rebuilt under them.
    const stage = tempDir('attest-pack-stage-');
    for (const file of ['package.json', 'README.md']) fs.copyFileSync(path.join(ROOT, file), path.join(stage, file));
    fs.cpSync(path.join(ROOT, 'bin'), path.join(stage, 'bin'), { recursive: true });
    const build = await exec(process.execPath, ['scripts/build.mjs'], ROOT, cleanEnv({ ATTEST_BUILD_DIR: path.join(stage, 'dist') }));
    assert.equal(build.code, 0, build.stderr);
    serverPack = await pack(stage, packDir, ['--ignore-scripts']);
    stageDir = stage;
  });
  after(async () => {
    if (server && server.exitCode === null) {
      server.kill('SIGTERM');
      await new Promise((resolve) => server!.once('close', resolve));
    }
  });

  test('the server package ships bin/ and the built dist/, not the sources', () => {
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
    assert.deepEqual(manifest.bin, { attest: 'bin/attest.js' });
  });

  test('npm publish --dry-run of the server package has nothing to correct', async () => {
    assert.deepEqual(await publishWarnings(stageDir), []);
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
    // Outside this repository the root's overrides do not apply: the package's own dependencies must
    // keep every transitive package on ranges that accept Node 20 (cookie 2, through a newer
    // light-my-request, wanted Node 22), PKG-2.
    assert.deepEqual(npmWarnings(install.stdout + install.stderr), []);
    const engines = installProblems(installedPackages(SCRATCH)).filter((problem) => /refuses Node/.test(problem));
    assert.deepEqual(engines, []);
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
    const npx = (args: string[]) => exec('npx', ['--no', '--', '@attest-hq/attest', ...args], SCRATCH, remote);

    const version = await npx(['--version']);
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
    const imported = await npx(['import', out, '--project', project.key, '--json']);
    assert.equal(imported.code, 0, imported.stderr);
    const record = JSON.parse(imported.stdout);
    assert.equal(record.status, 'completed');
    assert.equal(record.counts.runs, 3);
    assert.equal(record.counts.attachmentsMissing, 0, JSON.stringify(record.files));

    const exportDir = tempDir('attest-pack-export-');
    const exported = await npx(['export', '--job', jobId, '--out', exportDir, '--json']);
    assert.equal(exported.code, 0, exported.stderr);
    const summaryJson = JSON.parse(exported.stdout) as { runs: { dir: string }[] };
    assert.equal(summaryJson.runs.length, 3);
    for (const r of summaryJson.runs) assert.ok(fs.existsSync(path.join(r.dir, 'manifest.json')), r.dir);
  });
});
