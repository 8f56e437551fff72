import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { generateKey } from '../../src/server/security/api-key.ts';
import { damagedDataDir, tempDir } from '../helpers/data-folders.ts';
import { createStorage, launchServer } from '../helpers/spawned-server.ts';

// The parts of test/db/database.test.ts that need real server processes: one data folder per
// process (the lock), and the start-up integrity check (DUR-9).

describe('[sqlite] createDatabase (server processes)', () => {
  test('a second server on the same data folder exits non-zero while the first keeps serving', async () => {
    const storage = await createStorage('sqlite', tempDir(), generateKey('standard'));
    const first = launchServer(storage);
    try {
      const url = await first.listening;
      const second = launchServer(storage);
      const { code } = await second.exited;
      assert.equal(code, 1);
      assert.match(second.stderr.join('\n'), /Another Attest process is using the data folder/);
      const health = await fetch(`${url}/api/v1/health`);
      assert.equal(health.status, 200);
    } finally {
      first.child.kill('SIGTERM');
      await first.exited;
    }
  });

  test('a server refuses to start on a database that fails quick_check (DUR-9)', async () => {
    const storage = await createStorage('sqlite', await damagedDataDir(), generateKey('standard'));
    const server = launchServer(storage);
    const { code } = await server.exited;
    assert.equal(code, 1);
    assert.match(server.stderr.join('\n'), /attest: SQLite quick_check failed/);
    assert.doesNotMatch(server.stdout.join('\n'), /attest listening/);
  });
});
