import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { readServerLines } from '../helpers/spawned-server.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
  scripts: Record<string, string>;
  bin: Record<string, string>;
  dependencies: Record<string, string>;
};

/** The processes `pid` started (tsx runs esbuild as a child service; compiled JavaScript needs none). */
function childrenOf(pid: number): string[] {
  const tasks = fs.readdirSync(`/proc/${pid}/task`);
  return tasks.flatMap((task) => fs.readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim().split(/\s+/).filter(Boolean));
}

describe('npm start (production)', () => {
  test('runs the compiled JavaScript in dist/, without tsx: tsx is a development dependency only', () => {
    assert.equal(pkg.scripts.start, 'node dist/server/main.js');
    assert.equal(pkg.scripts.prepare, 'npm run build', 'npm install builds dist/');
    assert.equal(pkg.dependencies.tsx, undefined);
    assert.match(fs.readFileSync(path.join(ROOT, pkg.bin.attest as string), 'utf8'), /dist\/cli\/main\.js/);
  });

  test('dist/server/main.js serves /api/v1/health on the embedded default and spawns no compiler', {
    skip: process.platform !== 'linux',
  }, async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'attest-start-'));
    const [command, ...args] = (pkg.scripts.start as string).split(' ');
    assert.equal(command, 'node');
    const child = spawn(process.execPath, args, {
      cwd: ROOT,
      env: { ...process.env, PORT: '0', HOST: '127.0.0.1', ATTEST_DATA_DIR: dataDir, ATTEST_LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      const { output, listening } = readServerLines(child);
      const url = await listening;
      const response = await fetch(`${url}/api/v1/health`, { headers: { accept: 'application/json' } });
      assert.equal(response.status, 200);
      assert.equal(((await response.json()) as { status: string }).status, 'ok');
      // The generated first admin key is announced once on a fresh data folder.
      assert.ok(output.some((line) => line.includes('service.api-token: atk_')));
      assert.deepEqual(childrenOf(child.pid as number), []);
      assert.doesNotMatch(fs.readFileSync(`/proc/${child.pid}/cmdline`, 'utf8'), /tsx/);
    } finally {
      child.kill('SIGTERM');
      await once(child, 'exit');
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
