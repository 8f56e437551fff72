import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { v1 } from '../../src/client/index.ts';
import { generateKey } from '../../src/server/security/api-key.ts';
import { acceptedImport, junitReport, runsPerName } from '../helpers/crash-imports.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { sharedS3 } from '../helpers/s3.ts';
import { createStorage, type SpawnedServer, spawnServer } from '../helpers/spawned-server.ts';
import { waitFor } from '../helpers/wait.ts';

// SCALE-5 (IMP-4 across instances): two server processes on one PostgreSQL database and one
// bucket, each with its own data folder. An import of 3000 cases (twelve batches of 250) is
// accepted; whichever instance claims its task is SIGKILLed right after its eighth batch commits
// (both run with ATTEST_CRASH_AT=import-after-batch:8, so it does not matter which claims it, and
// the survivor, with four batches left, never reaches its own eighth). The survivor claims the
// task once the dead instance's three-second lease runs out and finishes the import: every case
// exactly once, in one job, the import completed.

const CASES = 3000;
const LEASE_SECONDS = '3';

const tempDirs: string[] = [];
after(() => {
  for (const dir of tempDirs) fs.rmSync(dir, { recursive: true, force: true });
});

if (DIALECTS.includes('postgres')) {
  describe('[postgres] an import whose instance is killed is finished by another (SCALE-5)', () => {
    test('the instance writing it is SIGKILLed mid-way; the other finishes it with every case exactly once', {
      timeout: 240_000,
    }, async () => {
      const s3 = await sharedS3();
      const bucket = await s3.createBucket();
      const dirs = [0, 1].map(() => fs.mkdtempSync(path.join(os.tmpdir(), 'attest-import-instances-')));
      tempDirs.push(...dirs);
      const storage = await createStorage('postgres', dirs[0] as string, generateKey('standard'));
      const env = { ...s3.env(bucket, 'attest'), ATTEST_TASK_LEASE_SECONDS: LEASE_SECONDS, ATTEST_CRASH_AT: 'import-after-batch:8' };
      const servers: SpawnedServer[] = [];
      try {
        servers.push(await spawnServer(storage, env));
        servers.push(await spawnServer({ ...storage, dataDir: dirs[1] as string }, env));
        const [first] = servers as [SpawnedServer, SpawnedServer];
        const { projectId, importId } = await acceptedImport(first, storage.adminKey, junitReport(CASES, 'Instances'));

        // Whichever claimed the task dies after its eighth batch; the other lives on.
        const killed = await Promise.race(servers.map(async (server) => ({ server, death: await server.exited })));
        assert.equal(killed.death.signal, 'SIGKILL', killed.server.output.slice(-5).join('\n'));
        const survivor = servers.find((server) => server !== killed.server) as SpawnedServer;

        const read = () => survivor.admin.call(v1.imports.getImport, { params: { projectId, importId } });
        const midway = await read();
        assert.notEqual(midway.status, 'completed', 'killed in the middle of the import');
        await waitFor(async () => (await read()).status === 'completed', {
          timeoutMs: 120_000,
          message: () => `the survivor completed the import:\n${survivor.output.slice(-10).join('\n')}`,
        });
        assert.equal(survivor.child.exitCode, null, 'the survivor never reached its own crash point');
        const record = await read();
        assert.equal(record.counts?.runs, CASES);

        const names = await runsPerName(survivor.admin, projectId, record.jobId as string);
        assert.equal(names.size, CASES, 'every case has its run');
        assert.deepEqual(
          [...names].filter(([, count]) => count !== 1),
          [],
          'no case written twice',
        );
        const jobs = await survivor.admin.call(v1.jobs.listJobs, { query: { projectId } });
        assert.equal(jobs.items.length, 1, 'the survivor went on with the job the killed instance made');
      } finally {
        await Promise.all(servers.map((server) => server.stop()));
        await storage.drop();
      }
    });
  });
}
