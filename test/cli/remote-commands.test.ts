import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { v1 } from '../../src/client/index.ts';
import { builtEntry } from '../helpers/built.ts';
import { attest } from '../helpers/cli.ts';
import { createProject } from '../helpers/factories.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

// EXP-4 and SPEC-2.4: `attest login` stores the instance and key for the user alone;
// `keys`, `runs` and `projects` work through the API; failures exit non-zero with the problem.

const configDir = () => fs.mkdtempSync(path.join(os.tmpdir(), 'attest-config-'));

/** `attest` with `input` on stdin (execFile's promise form cannot write stdin). */
function attestWithInput(args: string[], env: Record<string, string>, input: string) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    const child = execFile(
      process.execPath,
      [builtEntry('cli/main'), ...args],
      { env: { ...process.env, ...env } },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code) : 0, stdout, stderr }),
    );
    child.stdin?.end(input);
  });
}

describe('attest login, keys, runs and projects (sqlite)', () => {
  let server: TestServer;
  let project: { id: string; key: string };
  before(async () => {
    server = await startTestServer('sqlite');
    project = await createProject(server, 'Shop');
    const run = await server.admin.client.call(v1.runs.createRun, { body: { projectId: project.id, name: 'Smoke' } });
    await server.admin.client.call(v1.runs.updateRun, { params: { testRunId: run.id }, body: { status: 'completed', verdict: 'passed' } });
  });
  after(() => server.close());

  test('login checks the key, stores URL, key and e-mail readable by the user alone, and the other commands use them', async () => {
    const dir = configDir();
    const env = { ATTEST_CONFIG_DIR: dir, ATTEST_URL: '', ATTEST_API_KEY: '' };
    const login = await attest(['login', '--url', server.url, '--key', server.admin.key], env);
    assert.equal(login.code, 0, login.output);
    assert.match(login.stdout, /logged in to .* as admin@example\.test \(admin\)/);
    const file = path.join(dir, 'config.json');
    assert.equal(fs.statSync(file).mode & 0o777, 0o600);
    assert.deepEqual(JSON.parse(fs.readFileSync(file, 'utf8')), { url: server.url, apiKey: server.admin.key, email: 'admin@example.test' });

    const projects = await attest(['projects', 'list', '--json'], env);
    assert.equal(projects.code, 0, projects.output);
    assert.ok((JSON.parse(projects.stdout) as { key: string }[]).some((p) => p.key === project.key));
    const runs = await attest(['runs', 'list', '--project', project.key], env);
    assert.match(runs.stdout, /completed\s+passed\s+\S+\s+Smoke/);
  });

  test('password sets the web sign-in password from stdin, and the login exchange then accepts it', async () => {
    const env = { ATTEST_CONFIG_DIR: configDir(), ATTEST_URL: server.url, ATTEST_API_KEY: server.admin.key };
    const set = await attestWithInput(['password'], env, 'a long enough web password\n');
    assert.equal(set.code, 0, set.stderr);
    assert.match(set.stdout, new RegExp(`password set for admin@example\\.test: sign in at ${server.url}/login`));
    const session = await server
      .client()
      .call(v1.meta.login, { body: { email: 'admin@example.test', password: 'a long enough web password' } });
    assert.ok(session.key);
    const empty = await attestWithInput(['password'], env, '');
    assert.notEqual(empty.code, 0);
    assert.match(empty.stderr, /no password on stdin/);
  });

  test('a wrong key is refused at login and nothing is stored', async () => {
    const dir = configDir();
    const wrong = await attest(['login', '--url', server.url, '--key', 'atk_wrong'], { ATTEST_CONFIG_DIR: dir });
    assert.equal(wrong.code, 1);
    assert.match(wrong.stderr, /\(401 UNAUTHENTICATED\)/);
    assert.equal(fs.existsSync(path.join(dir, 'config.json')), false);
  });

  test('an old-format key without an e-mail is refused before any call', async () => {
    const result = await attest(['projects', 'list', '--url', 'http://127.0.0.1:9', '--key', '5c0e1f3a-8d0b-4b59-9e3c-2a7f4d1e6b90'], {
      ATTEST_CONFIG_DIR: configDir(),
    });
    assert.equal(result.code, 1);
    assert.match(result.stderr, /old-format .* e-mail/);
  });

  test('login with a password creates a standard key for this machine and stores it', async () => {
    await server.admin.client.call(v1.users.createUser, { body: { email: 'pat@example.test', name: 'Pat', roles: ['viewer'] } });
    await server.admin.client.call(v1.users.setUserPassword, {
      params: { email: 'pat@example.test' },
      body: { password: 'correct horse battery staple' },
    });
    const dir = configDir();
    const login = await attestWithInput(
      ['login', '--url', server.url, '--email', 'pat@example.test', '--password-stdin'],
      { ATTEST_CONFIG_DIR: dir },
      'correct horse battery staple\n',
    );
    assert.equal(login.code, 0, login.stderr);
    const stored = JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8')) as { apiKey: string; email: string };
    assert.match(stored.apiKey, /^atk_/);
    assert.equal(stored.email, 'pat@example.test');
    const keys = await attest(['keys', 'list', '--json'], { ATTEST_CONFIG_DIR: dir });
    assert.ok(
      (JSON.parse(keys.stdout) as { name: string; format: string }[]).some(
        (k) => k.format === 'standard' && k.name.startsWith('attest CLI on '),
      ),
    );
  });

  test('keys create, list and revoke: the secret is printed once and the revoked key stops working', async () => {
    const env = { ATTEST_URL: server.url, ATTEST_API_KEY: server.admin.key, ATTEST_CONFIG_DIR: configDir() };
    const created = await attest(['keys', 'create', '--name', 'CI on main', '--read-only', '--json'], env);
    assert.equal(created.code, 0, created.output);
    const key = JSON.parse(created.stdout) as { id: string; key: string; scope: string };
    assert.equal(key.scope, 'read');
    const listed = await attest(['keys', 'list'], env);
    assert.match(listed.stdout, new RegExp(`${key.id}\\s+CI on main\\s+standard\\s+read`));
    assert.ok(!listed.stdout.includes(key.key), 'the list never shows a secret');
    const asNew = { ...env, ATTEST_API_KEY: key.key };
    assert.equal((await attest(['projects', 'list'], asNew)).code, 0);
    assert.equal((await attest(['keys', 'revoke', key.id], env)).code, 0);
    const refused = await attest(['projects', 'list'], asNew);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /401 UNAUTHENTICATED/);
  });

  test('runs show summarises a run; an unknown one exits 1 with the problem', async () => {
    const env = { ATTEST_URL: server.url, ATTEST_API_KEY: server.admin.key, ATTEST_CONFIG_DIR: configDir() };
    const list = JSON.parse((await attest(['runs', 'list', '--project', project.key, '--json'], env)).stdout) as { id: string }[];
    const shown = await attest(['runs', 'show', list[0]!.id], env);
    assert.match(shown.stdout, /^Smoke\n {2}id /);
    assert.match(shown.stdout, /completed · passed/);
    const unknown = await attest(['runs', 'show', '00000000-0000-4000-8000-000000000000'], env);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /\(404 NOT_FOUND\)/);
  });

  test('--help is there for every command', async () => {
    for (const args of [
      ['login'],
      ['keys', 'create'],
      ['keys', 'list'],
      ['keys', 'revoke'],
      ['runs', 'list'],
      ['runs', 'show'],
      ['projects', 'list'],
      ['export'],
    ]) {
      const help = await attest([...args, '--help'], {});
      assert.equal(help.code, 0, args.join(' '));
      assert.match(help.stdout, /^Usage: attest /, args.join(' '));
    }
  });
});
