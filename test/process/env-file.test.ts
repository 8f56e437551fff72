import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { generateKey } from '../../src/server/security/api-key.ts';
import { builtEntry } from '../helpers/built.ts';
import { createStorage, type LaunchedServer, launchServer, spawnServer } from '../helpers/spawned-server.ts';

// `.env` in the working folder is read by the server and the CLI, as .env.example says; a variable
// the real environment sets wins; a malformed or unreadable .env stops the start with a message
// naming it. Independent of the database, so SQLite only.

const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));

async function freePort(): Promise<number> {
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as net.AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** How a start that must be refused ended; one that listens instead is stopped and fails the test. */
async function refusedStart(started: LaunchedServer): Promise<{ code: number | null; stderr: string }> {
  const listened = await Promise.race([
    started.listening.then(
      () => true,
      () => false,
    ),
    started.exited.then(() => false),
  ]);
  if (listened) {
    started.child.kill('SIGTERM');
    await started.exited;
    assert.fail(`the server started despite the .env:\n${started.output.join('\n')}`);
  }
  const { code } = await started.exited;
  return { code, stderr: started.stderr.join('\n') };
}

describe('.env in the working folder', () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'attest-dotenv-'));
  after(() => fs.rmSync(root, { recursive: true, force: true }));

  /** A fresh working folder holding this `.env` text, with its own data folder. */
  function folder(name: string, envText: string | undefined) {
    const cwd = path.join(root, name);
    fs.mkdirSync(cwd);
    if (envText !== undefined) fs.writeFileSync(path.join(cwd, '.env'), envText);
    return { cwd, dataDir: path.join(cwd, 'data') };
  }

  test('PORT in .env sets the port when the environment has none', async () => {
    const port = await freePort();
    const { cwd, dataDir } = folder('port', `# from .env\nexport PORT=${port}\nATTEST_PUBLIC_URL="http://from-dotenv.example"\n`);
    const server = await spawnServer(await createStorage('sqlite', dataDir, generateKey('standard')), {}, { cwd, unset: ['PORT'] });
    try {
      assert.equal(new URL(server.url).port, String(port), server.output.join('\n'));
      // Any request works: the key from the environment and .env's settings together.
      const response = await fetch(`${server.url}/api`);
      assert.equal(response.status, 200);
    } finally {
      await server.stop();
    }
  });

  test('a variable the real environment sets wins over .env, even the shipped .env.example copied as it is', async () => {
    // PORT=1 would be refused (a privileged port); the environment's PORT=0 must win.
    const { cwd, dataDir } = folder(
      'env-wins',
      `${fs.readFileSync(path.join(REPO_ROOT, '.env.example'), 'utf8')}\nPORT=1\nHOST=256.0.0.1\n`,
    );
    const server = await spawnServer(await createStorage('sqlite', dataDir, generateKey('standard')), {}, { cwd });
    try {
      const port = Number(new URL(server.url).port);
      assert.ok(port > 1024, `listens on the environment's port 0 (a free one), not .env's: ${server.url}`);
      assert.equal(new URL(server.url).hostname, '127.0.0.1');
    } finally {
      await server.stop();
    }
  });

  test('a malformed .env stops the start with a message naming the file and line, no stack trace', async () => {
    const { cwd, dataDir } = folder('malformed', 'PORT=0\nthis line is no setting\n');
    const started = launchServer(await createStorage('sqlite', dataDir, generateKey('standard')), {}, { cwd });
    const { code, stderr: text } = await refusedStart(started);
    assert.notEqual(code, 0);
    assert.match(text, /\.env line 2: expected NAME=value/, text);
    assert.doesNotMatch(text, /\n\s+at /, 'no stack trace');
    assert.ok(!fs.existsSync(dataDir), 'nothing was created');
  });

  test('an unclosed quote or an unreadable .env is refused the same way', async () => {
    for (const [name, make] of [
      ['unclosed', (cwd: string) => fs.writeFileSync(path.join(cwd, '.env'), 'ATTEST_PUBLIC_URL="http://x\n')],
      ['unreadable', (cwd: string) => fs.mkdirSync(path.join(cwd, '.env'))],
    ] as const) {
      const { cwd, dataDir } = folder(name, undefined);
      make(cwd);
      const started = launchServer(await createStorage('sqlite', dataDir, generateKey('standard')), {}, { cwd });
      const { code, stderr: text } = await refusedStart(started);
      assert.notEqual(code, 0, name);
      assert.match(text, name === 'unclosed' ? /\.env line 1: the value's " quote is never closed/ : /cannot read .*\.env: EISDIR/, text);
    }
  });

  test('the CLI reads .env too: `attest migrate` creates the database where .env says', async () => {
    const { cwd } = folder('cli', 'ATTEST_DATA_DIR=./from-dotenv\n');
    const environment = { ...process.env };
    delete environment.ATTEST_DATA_DIR;
    delete environment.ATTEST_DATABASE_URL;
    await promisify(execFile)(process.execPath, [builtEntry('cli/main'), 'migrate'], {
      cwd,
      env: environment,
    });
    assert.ok(fs.existsSync(path.join(cwd, 'from-dotenv', 'attest.db')), 'the database is in the folder .env names');
  });
});
