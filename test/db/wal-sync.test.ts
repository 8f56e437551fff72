import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { sql } from 'kysely';
import { loadConfig } from '../../src/server/config.ts';
import { createDatabase, type DatabaseHandle } from '../../src/server/db/database.ts';
import { inDeferredTransaction, inTransaction } from '../../src/server/db/repositories/transaction.ts';
import type { Executor } from '../../src/server/db/types.ts';
import { tempDir } from '../helpers/data-folders.ts';
import { createPostgresDatabase, DIALECTS } from '../helpers/dialects.ts';

/** One autocommit write, through Kysely as the repositories send theirs. */
const write = (handle: DatabaseHandle, value: string) =>
  sql`INSERT INTO attest_migrations_lock (id, is_locked) VALUES (${value}, 0)`.execute(handle.db);

async function withDatabase(env: Record<string, string>, body: (handle: DatabaseHandle, dir: string) => Promise<void>) {
  const dir = tempDir();
  const handle = await createDatabase(loadConfig({ ATTEST_DATA_DIR: dir, ...env }));
  try {
    await body(handle, dir);
  } finally {
    await handle.close();
  }
}

describe('[sqlite] durable(): group commit of the write-ahead log (DUR-14)', () => {
  test('syncs the WAL once after a commit, and not at all when nothing was committed since', async () => {
    await withDatabase({}, async (handle, dir) => {
      assert.ok(fs.existsSync(path.join(dir, 'attest.db-wal')));
      await handle.durable();
      const { syncs } = handle.stats;
      await handle.durable();
      await handle.db.selectFrom('users').select('id').execute();
      await handle.durable();
      assert.equal(handle.stats.syncs, syncs, 'nothing committed, nothing synced');
      await write(handle, 'a');
      assert.ok(handle.stats.commits > handle.stats.syncedThrough, 'the commit is counted and not yet synced');
      await handle.durable();
      assert.equal(handle.stats.syncs, syncs + 1);
      assert.equal(handle.stats.syncedThrough, handle.stats.commits);
    });
  });

  test('callers share a running sync that covers them, and those who committed after it began share the next', async () => {
    await withDatabase({}, async (handle) => {
      await handle.durable();
      const start = handle.stats.syncs;
      await write(handle, 'a');
      const first = [handle.durable(), handle.durable(), handle.durable()];
      // Committed while the first sync runs (it completes on a later turn of the event loop): not covered by it.
      await write(handle, 'b');
      const afterB = handle.stats.commits;
      const second = [handle.durable(), handle.durable()];
      await write(handle, 'c');
      const third = handle.durable();
      await Promise.all(first);
      assert.ok(handle.stats.syncedThrough < afterB, 'the first sync began before b committed, so it does not cover b');
      await Promise.all([...second, third]);
      assert.equal(handle.stats.syncs, start + 2, 'six callers, two syncs');
      assert.equal(handle.stats.syncedThrough, handle.stats.commits);
    });
  });

  test('close() syncs what was committed before it', async () => {
    const dir = tempDir();
    const handle = await createDatabase(loadConfig({ ATTEST_DATA_DIR: dir }));
    await write(handle, 'a');
    const syncs = handle.stats.syncs;
    await handle.close();
    assert.equal(handle.stats.syncs, syncs + 1);
    assert.equal(handle.stats.syncedThrough, handle.stats.commits);
  });

  test('ATTEST_SQLITE_SYNCHRONOUS=NORMAL acknowledges without syncing (process crashes only)', async () => {
    await withDatabase({ ATTEST_SQLITE_SYNCHRONOUS: 'NORMAL' }, async (handle) => {
      await write(handle, 'a');
      await handle.durable();
      assert.ok(handle.stats.commits > 0);
      assert.equal(handle.stats.syncs, 0);
    });
  });
});

if (DIALECTS.includes('postgres')) {
  describe('[postgres] durable()', () => {
    test('resolves at once: each COMMIT already waited for its own log flush', async () => {
      const pg = await createPostgresDatabase();
      const handle = await createDatabase(loadConfig({ ATTEST_DATABASE_URL: pg.url, ATTEST_DATA_DIR: tempDir() }));
      try {
        await write(handle, 'a');
        await handle.durable();
        assert.equal(handle.stats.syncs, 0);
      } finally {
        await handle.close();
        await pg.drop();
      }
    });

    test("an import's deferred transaction commits without waiting for the flush; the transactions around it still wait", async () => {
      const pg = await createPostgresDatabase();
      const handle = await createDatabase(loadConfig({ ATTEST_DATABASE_URL: pg.url, ATTEST_DATA_DIR: tempDir() }));
      const setting = async (executor: Executor) =>
        (await sql<{ synchronous_commit: string }>`SHOW synchronous_commit`.execute(executor)).rows[0]?.synchronous_commit;
      try {
        assert.equal(await inTransaction(handle.db, setting), 'on');
        const inside = await inDeferredTransaction(handle.db, async (trx) => {
          await sql`INSERT INTO attest_migrations_lock (id, is_locked) VALUES ('deferred', 0)`.execute(trx);
          return setting(trx);
        });
        assert.equal(inside, 'off');
        // SET LOCAL: the pooled connection is back to the server's setting for whatever runs next on it.
        for (let i = 0; i < 3; i++) assert.equal(await inTransaction(handle.db, setting), 'on');
        assert.equal(await setting(handle.db), 'on');
        const rows = await sql`SELECT id FROM attest_migrations_lock WHERE id = 'deferred'`.execute(handle.db);
        assert.equal(rows.rows.length, 1, 'the deferred commit is there');
        // Inside the caller's transaction it is part of it, and the caller's commit waits as before.
        const nested = await inTransaction(handle.db, (trx) => inDeferredTransaction(trx, setting));
        assert.equal(nested, 'on');
      } finally {
        await handle.close();
        await pg.drop();
      }
    });
  });
}
