import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { generateKey } from '../../src/server/security/api-key.ts';
import { attest } from '../helpers/cli.ts';
import { damageDatabase, tempDir } from '../helpers/data-folders.ts';
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

  test('after an unclean stop, a server refuses to start on a database that fails quick_check (DUR-9)', async () => {
    const dir = tempDir();
    const storage = await createStorage('sqlite', dir, generateKey('standard'));
    const killed = launchServer(storage);
    await killed.listening;
    killed.child.kill('SIGKILL');
    await killed.exited;
    damageDatabase(dir);
    const server = launchServer(storage);
    const { code } = await server.exited;
    assert.equal(code, 1);
    assert.match(server.stderr.join('\n'), /attest: SQLite quick_check failed/);
    assert.doesNotMatch(server.stdout.join('\n'), /attest listening/);
  });

  test('after a clean stop, start-up skips the whole-file check; attest verify still finds the damage (DUR-9)', async () => {
    const dir = tempDir();
    const storage = await createStorage('sqlite', dir, generateKey('standard'));
    const first = launchServer(storage, { ATTEST_LOG_LEVEL: 'info' });
    await first.listening;
    assert.ok(fs.existsSync(path.join(dir, 'attest.open')), 'the open marker is written before the server listens');
    first.child.kill('SIGTERM');
    await first.exited;
    assert.equal(fs.existsSync(path.join(dir, 'attest.open')), false, 'a clean stop removes the marker');

    damageDatabase(dir);
    const second = launchServer(storage, { ATTEST_LOG_LEVEL: 'info' });
    try {
      await second.listening;
      assert.match(second.output.join('\n'), /no unclean stop on record: start-up integrity check skipped/);
    } finally {
      second.child.kill('SIGTERM');
      await second.exited;
    }
    const verify = await attest(['verify'], { ATTEST_DATA_DIR: dir });
    assert.notEqual(verify.code, 0);
  });
});
