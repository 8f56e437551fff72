import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { v1 } from '../../src/client/index.ts';
import { generateKey } from '../../src/server/security/api-key.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { randomPng } from '../helpers/png.ts';
import { createStorage, type ServerStorage, type SpawnedServer, spawnServer } from '../helpers/spawned-server.ts';

// The README's quickstart, run exactly as written: the fenced `sh` blocks between
// `<!-- quickstart:start -->` and `<!-- quickstart:end -->` are read from README.md at test time
// and run by bash (with `set -euo pipefail`, as a careful user would notice any failure) against a
// real server, with the key in KEY and the server's address in ATTEST_URL, as the README says.

const README = fileURLToPath(new URL('../../README.md', import.meta.url));

/** The shell lines of the quickstart, in order. */
function quickstartLines(markdown: string): string {
  const section = /<!-- quickstart:start -->\n([\s\S]*?)<!-- quickstart:end -->/.exec(markdown)?.[1];
  assert.ok(section !== undefined, 'README.md has the quickstart markers');
  const blocks = [...section.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((match) => match[1] as string);
  assert.ok(blocks.length > 0, 'the quickstart holds sh blocks');
  return blocks.join('\n');
}

/** Runs a bash script in `cwd` with exactly this environment; never rejects. */
function bash(script: string, cwd: string, env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile('bash', ['-c', script], { cwd, env, timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
    });
  });
}

test("the README's first screen is the two commands", () => {
  const first = /```sh\n([\s\S]*?)```/.exec(fs.readFileSync(README, 'utf8'))?.[1] ?? '';
  assert.deepEqual(
    first
      .trim()
      .split('\n')
      .map((line) => line.replace(/\s+#.*$/, '')),
    ['npm install && npm start', 'npm test'],
  );
});

for (const dialect of DIALECTS) {
  describe(`[${dialect}] the README quickstart`, () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'attest-quickstart-'));
    let storage: ServerStorage | undefined;
    let server: SpawnedServer | undefined;
    after(async () => {
      await server?.stop();
      await storage?.drop();
      fs.rmSync(dir, { recursive: true, force: true });
    });

    test('runs as written: the run has its step, and the screenshot comes back byte for byte', async () => {
      const key = generateKey('standard');
      storage = await createStorage(dialect, path.join(dir, 'data'), key);
      server = await spawnServer(storage);
      const shell = path.join(dir, 'shell');
      fs.mkdirSync(shell);
      const png = await randomPng(64, 48);
      fs.writeFileSync(path.join(shell, 'login.png'), png);

      const script = quickstartLines(fs.readFileSync(README, 'utf8'));
      const result = await bash(`set -euo pipefail\n${script}`, shell, {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        HOME: shell,
        KEY: key,
        ATTEST_URL: server.url,
      });
      assert.equal(result.code, 0, `the quickstart failed:\n${result.stderr}\n${result.stdout}`);
      assert.match(result.stdout, /the screenshot came back byte for byte/);
      assert.ok(fs.readFileSync(path.join(shell, 'login-back.png')).equals(png), 'the downloaded image is the uploaded PNG');

      // The end state, checked through the API rather than the script's own output.
      const project = (await server.admin.call(v1.projects.getProject, { params: { projectId: 'DEMO' } })).id;
      const runs = await server.admin.call(v1.runs.listRuns, { query: { projectId: project } });
      assert.equal(runs.items.length, 1);
      const run = runs.items[0] as (typeof runs.items)[number];
      assert.equal(run.status, 'completed');
      assert.equal(run.verdict, 'passed');
      const results = await server.admin.call(v1.results.getResults, { params: { testRunId: run.id } });
      assert.deepEqual(
        results.steps.map((step) => [step.key, step.title, step.status]),
        [['open', 'Open the login page', 'passed']],
      );
      assert.match(result.stdout, /"key": "open"/, 'the results were printed');
    });
  });
}
