import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { v1 } from '../../src/client/index.ts';
import { generateKey } from '../../src/server/security/api-key.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { jsonHeaders, rawRequest } from '../helpers/http.ts';
import { createStorage, type SpawnedServer, spawnServer } from '../helpers/spawned-server.ts';
import { waitFor } from '../helpers/wait.ts';

// IMP-4: an import acknowledged with 202 is not lost when the process dies while writing its job.
// The server is killed right after the first batch of runs commits (crash point
// import-after-batch:1); the restarted server resumes the import from its kept upload and writes
// the remaining cases once each: every case exactly once, in one job.

const CASES = 600; // three batches of 250

const tempDirs: string[] = [];
after(() => {
  for (const dir of tempDirs) fs.rmSync(dir, { recursive: true, force: true });
});

function report(): Buffer {
  const cases = Array.from(
    { length: CASES },
    (_, i) =>
      `<testcase classname="com.example.Resume" name="case ${i}" time="0.01">${i % 7 === 0 ? '<failure message="no">at X</failure>' : ''}</testcase>`,
  );
  return Buffer.from(
    `<?xml version="1.0"?><testsuites name="resume"><testsuite name="com.example.Resume">${cases.join('')}</testsuite></testsuites>`,
  );
}

for (const dialect of DIALECTS) {
  describe(`[${dialect}] an import interrupted by a crash (IMP-4)`, () => {
    test('killed after its first batch, the restarted server completes it with every case exactly once', { timeout: 180_000 }, async () => {
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'attest-import-crash-'));
      tempDirs.push(dataDir);
      const storage = await createStorage(dialect, dataDir, generateKey('standard'));
      let crashing: SpawnedServer | undefined;
      try {
        // A short lease: on PostgreSQL the restarted server takes the import over once the dead one's lease ran out (SCALE-5).
        crashing = await spawnServer(storage, { ATTEST_CRASH_AT: 'import-after-batch:1', ATTEST_TASK_LEASE_SECONDS: '3' });
        const project = await crashing.admin.call(v1.projects.createProject, {
          body: { key: `I${randomBytes(3).toString('hex').toUpperCase()}`, name: 'Crash import' },
        });
        const body = report();
        const accepted = await rawRequest(`${crashing.url}/api/v1/projects/${project.id}/imports`, {
          method: 'POST',
          headers: { ...jsonHeaders(storage.adminKey), 'content-type': 'application/xml', 'content-length': body.length },
          body,
        });
        assert.equal(accepted.status, 202, accepted.text);
        const death = await crashing.exited;
        assert.equal(death.signal, 'SIGKILL', crashing.output.slice(-5).join('\n'));

        const restarted = await spawnServer(storage, { ATTEST_TASK_LEASE_SECONDS: '3' });
        try {
          const importId = String(accepted.json.id);
          const read = () => restarted.admin.call(v1.imports.getImport, { params: { projectId: project.id, importId } });
          await waitFor(async () => (await read()).status === 'completed', { timeoutMs: 60_000 });
          const record = await read();
          assert.equal(record.counts?.runs, CASES);
          const runs: { name: string }[] = [];
          let cursor: string | undefined;
          do {
            const page = await restarted.admin.call(v1.runs.listRuns, {
              query: { projectId: project.id, jobId: record.jobId as string, limit: 200, ...(cursor ? { cursor } : {}) },
            });
            runs.push(...page.items);
            cursor = page.nextCursor ?? undefined;
          } while (cursor);
          assert.equal(runs.length, CASES, 'every case once: none lost, none written twice');
          assert.equal(new Set(runs.map((r) => r.name)).size, CASES);
          const jobs = await restarted.admin.call(v1.jobs.listJobs, { query: { projectId: project.id } });
          assert.equal(jobs.items.length, 1, 'the resumed import kept its job');
        } finally {
          await restarted.stop();
        }
      } finally {
        await crashing?.stop();
        await storage.drop();
      }
    });
  });
}
