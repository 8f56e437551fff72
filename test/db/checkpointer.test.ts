import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import SQLite from 'better-sqlite3';
import { sql } from 'kysely';
import { loadConfig } from '../../src/server/config.ts';
import { WalCheckpointer } from '../../src/server/db/checkpointer.ts';
import { createDatabase } from '../../src/server/db/database.ts';
import { tempDir } from '../helpers/data-folders.ts';
import { waitFor } from '../helpers/wait.ts';

/**
 * The WAL's frame count and how many of its frames are already copied into the database file,
 * from the wal-index header in `-shm` (SQLite's WalIndexHdr.mxFrame at byte 16 and
 * WalCkptInfo.nBackfill at byte 96, in the machine's byte order).
 */
function walIndex(dir: string): { frames: number; backfilled: number } {
  const shm = fs.readFileSync(path.join(dir, 'attest.db-shm'));
  return { frames: shm.readUInt32LE(16), backfilled: shm.readUInt32LE(96) };
}

/** A fresh SQLite data folder, opened, with its checkpointer idle (start-up's own commits checkpointed or not asked for). */
async function openFresh() {
  const dir = tempDir();
  const handle = await createDatabase(loadConfig({ ATTEST_DATA_DIR: dir }));
  const checkpointer = handle.checkpointer;
  assert.ok(checkpointer);
  await checkpointer.idle();
  return { dir, handle, checkpointer };
}

describe('[sqlite] WAL checkpoints beside the server (checkpointer.ts)', () => {
  test('commits past 1,000 WAL pages checkpoint nothing themselves; the worker copies every frame into the file', async () => {
    const { dir, handle, checkpointer } = await openFresh();
    try {
      await sql`CREATE TABLE scratch (id INTEGER PRIMARY KEY, body TEXT NOT NULL)`.execute(handle.db);
      // About 8 MB in 40 commits: twice SQLite's own automatic checkpoint interval.
      for (let i = 0; i < 40; i++) {
        await handle.db.transaction().execute(async (trx) => {
          for (let j = 0; j < 50; j++) await sql`INSERT INTO scratch (body) VALUES (${'x'.repeat(4000)})`.execute(trx);
        });
      }
      const before = walIndex(dir);
      assert.ok(before.frames > 1000, `${before.frames} frames`);
      assert.ok(before.backfilled < before.frames - 1000, `the commits checkpointed by themselves: ${JSON.stringify(before)}`);

      const completed = checkpointer.completed;
      checkpointer.tick();
      await checkpointer.idle();
      assert.equal(checkpointer.completed, completed + 1);
      const after = walIndex(dir);
      assert.equal(after.backfilled, after.frames, 'every frame is in the database file');

      // Closed in order (the worker's connection first), nothing is left in a WAL: the file holds it all.
      await handle.close();
      assert.equal(fs.existsSync(path.join(dir, 'attest.db-wal')), false, 'the last connection to close removed the WAL');
      const reader = new SQLite(path.join(dir, 'attest.db'), { readonly: true });
      try {
        assert.equal((reader.prepare('SELECT count(*) AS n FROM scratch').get() as { n: number }).n, 2000);
      } finally {
        reader.close();
      }
    } finally {
      await handle.close().catch(() => {});
    }
  });

  test('a checkpoint is asked for only when something was committed since the last one', async () => {
    const { handle, checkpointer } = await openFresh();
    try {
      const completed = checkpointer.completed;
      checkpointer.tick();
      await checkpointer.idle();
      assert.equal(checkpointer.completed, completed, 'no commit, no checkpoint');
      await sql`CREATE TABLE scratch (id INTEGER PRIMARY KEY)`.execute(handle.db);
      checkpointer.tick();
      await checkpointer.idle();
      assert.equal(checkpointer.completed, completed + 1);
    } finally {
      await handle.close();
    }
  });

  test('a worker that fails is reported once and not asked again, and closing after it does not wait for it', async () => {
    let commits = 0;
    const failures: Error[] = [];
    const checkpointer = new WalCheckpointer(
      path.join(tempDir(), 'missing.db'),
      () => commits,
      (error) => failures.push(error),
    );
    commits++;
    checkpointer.tick();
    await waitFor(() => failures.length === 1);
    assert.ok(failures[0] instanceof Error);
    assert.match(failures[0].message, /missing\.db|unable to open|does not exist/i);
    commits++;
    checkpointer.tick();
    await checkpointer.idle();
    assert.equal(failures.length, 1);
    assert.equal(checkpointer.completed, 0);
    await checkpointer.close();
  });
});
