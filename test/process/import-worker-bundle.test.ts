import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { strToU8, zipSync } from 'fflate';
import { AttestClient, v1 } from '../../src/client/index.ts';
import { generateKey } from '../../src/server/security/api-key.ts';
import { NO_RETRY, rawRequest } from '../helpers/http.ts';
import { readServerLines } from '../helpers/spawned-server.ts';
import { waitFor } from '../helpers/wait.ts';

// IMP-7: the production build (`npm start`, dist/ from scripts/build.mjs; `npm test` builds it
// first) reads imports in its worker thread, the bundle's own entry point
// dist/server/import-worker.js, found from wherever the bundler put the code that starts it.

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

test('the bundled server reads a JUnit body and a ZIP in dist/server/import-worker.js', {
  skip: process.platform !== 'linux',
}, async () => {
  assert.ok(fs.existsSync(path.join(ROOT, 'dist/server/import-worker.js')), 'dist/server/import-worker.js is built (npm run build)');
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'attest-bundle-import-'));
  const key = generateKey('standard');
  const child = spawn(process.execPath, ['dist/server/main.js'], {
    cwd: ROOT,
    env: {
      ...process.env,
      PORT: '0',
      HOST: '127.0.0.1',
      ATTEST_DATA_DIR: dataDir,
      ATTEST_ADMIN_EMAIL: 'admin@example.test',
      ATTEST_ADMIN_API_KEY: key,
      ATTEST_LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  try {
    const { output, listening } = readServerLines(child);
    const url = await listening;
    const admin = new AttestClient({ baseUrl: url, apiKey: key, retry: NO_RETRY });
    const project = await admin.call(v1.projects.createProject, { body: { key: 'BUNDLE', name: 'Bundle' } });
    const junit = Buffer.from(
      '<testsuite name="bundle"><testcase name="one"/><testcase name="two"><failure message="no"/></testcase></testsuite>',
    );
    const zip = Buffer.from(zipSync({ 'reports/TEST-b.xml': junit, 'notes.txt': strToU8('hello') }));
    for (const [body, type] of [
      [junit, 'application/xml'],
      [zip, 'application/zip'],
    ] as const) {
      const answer = await rawRequest(`${url}/api/v1/projects/${project.id}/imports`, {
        method: 'POST',
        headers: { 'service.api-token': key, accept: 'application/json', 'content-type': type, 'content-length': body.length },
        body,
      });
      assert.equal(answer.status, 202, answer.text);
      const record = await waitFor(
        async () => {
          const found = await admin.call(v1.imports.getImport, { params: { projectId: project.id, importId: answer.json.id as string } });
          return found.status === 'completed' || found.status === 'failed' ? found : undefined;
        },
        { timeoutMs: 60_000, message: 'the import settles' },
      );
      assert.equal(record.status, 'completed', `${record.error}\n${output.join('\n')}`);
      assert.equal(record.counts?.runs, 2);
      assert.equal(record.counts?.failed, 1);
    }
    // A broken report is still a 400 naming the problem, read in the worker.
    const broken = Buffer.from('<testsuite name="x"><testcase name="y">');
    const refused = await rawRequest(`${url}/api/v1/projects/${project.id}/imports`, {
      method: 'POST',
      headers: { 'service.api-token': key, accept: 'application/json', 'content-type': 'application/xml', 'content-length': broken.length },
      body: broken,
    });
    assert.equal(refused.status, 400, refused.text);
    assert.match(String(refused.json.detail), /not well-formed XML/);
  } finally {
    child.kill('SIGTERM');
    if (child.exitCode === null) await once(child, 'exit');
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});
