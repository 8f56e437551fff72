import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { v1 } from '../../src/client/index.ts';
import { generateKey } from '../../src/server/security/api-key.ts';
import { acceptedImport, junitReport, runsPerName } from '../helpers/crash-imports.ts';
import { DIALECTS } from '../helpers/dialects.ts';
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
        const { projectId, importId } = await acceptedImport(crashing, storage.adminKey, junitReport(CASES, 'Resume'));
        const death = await crashing.exited;
        assert.equal(death.signal, 'SIGKILL', crashing.output.slice(-5).join('\n'));

        const restarted = await spawnServer(storage, { ATTEST_TASK_LEASE_SECONDS: '3' });
        try {
          const read = () => restarted.admin.call(v1.imports.getImport, { params: { projectId, importId } });
          await waitFor(async () => (await read()).status === 'completed', { timeoutMs: 60_000 });
          const record = await read();
          assert.equal(record.counts?.runs, CASES);
          const names = await runsPerName(restarted.admin, projectId, record.jobId as string);
          assert.equal(names.size, CASES, 'every case has its run');
          assert.deepEqual(
            [...names].filter(([, count]) => count !== 1),
            [],
            'no case written twice',
          );
          const jobs = await restarted.admin.call(v1.jobs.listJobs, { query: { projectId } });
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
