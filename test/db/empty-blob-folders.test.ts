import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { FsBlobStore, nodeBlobFs } from '../../src/server/blob/fs-blob-store.ts';
import { loadConfig } from '../../src/server/config.ts';
import { createDatabase } from '../../src/server/db/database.ts';
import { collectGarbage, verifyStorage } from '../../src/server/services/operations/maintenance.ts';
import { blobFile } from '../helpers/blob-files.ts';
import { chunks } from '../helpers/blob-store-contract.ts';
import { attest } from '../helpers/cli.ts';
import { tempDir } from '../helpers/data-folders.ts';
import { randomPng } from '../helpers/png.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { adminScreenshot } from '../helpers/uploads.ts';

// RET-3: garbage collection also removes the empty shard folders (blobs/aa/bb, blobs/aa) that older
// versions, or a crash between a blob's unlink and its folder's rmdir, left behind; never a folder
// holding a blob, and never one an upload is placing a blob in.

/** Every folder under `blobs/`, relative, sorted. */
function foldersUnder(blobsDir: string): string[] {
  return (fs.readdirSync(blobsDir, { recursive: true }) as string[])
    .filter((name) => fs.statSync(path.join(blobsDir, name)).isDirectory())
    .sort();
}

/** A two-hex-digit shard name that none of `taken` uses. */
function freeShard(taken: Set<string>, from: number): string {
  for (let i = from; ; i = (i + 1) % 256) {
    const name = i.toString(16).padStart(2, '0');
    if (!taken.has(name)) {
      taken.add(name);
      return name;
    }
  }
}

describe('[sqlite] garbage collection removes empty blob folders (RET-3)', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer('sqlite');
  });
  after(() => server.close());

  test('empty shard folders made by hand go, a folder holding a blob stays, other names are left alone; a dry run removes nothing', async () => {
    const ctx = server.app.attest;
    const res = await adminScreenshot(server, 'kept.png', { bytes: await randomPng(64, 48), type: 'image/png' });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const kept = String(res.body.sha256);
    const blobsDir = path.join(server.dataDir, 'blobs');
    const storedBefore = foldersUnder(blobsDir);
    const firstLevels = new Set(storedBefore.filter((name) => !name.includes(path.sep)));
    assert.ok(firstLevels.has(kept.slice(0, 2)));

    // As an older version left them: whole empty trees, an empty `aa`, and an empty `bb` beside the
    // kept blob's own folder (its `aa` must stay). Names that are not shard folders are not ours.
    const a = freeShard(firstLevels, 0x00);
    const b = freeShard(firstLevels, 0x80);
    const c = freeShard(new Set(fs.readdirSync(path.join(blobsDir, kept.slice(0, 2)))), 0xf0);
    const empty = [path.join(a, '00'), path.join(a, '01'), b, path.join(kept.slice(0, 2), c)];
    for (const dir of [...empty, 'lost+found']) fs.mkdirSync(path.join(blobsDir, dir), { recursive: true });
    const withEmpty = foldersUnder(blobsDir);

    const clock = () => new Date(Date.now() + 1000);
    const dry = await collectGarbage({ ...ctx, clock }, { graceMs: 0, dryRun: true });
    assert.equal(dry.removedFolders, 0);
    assert.deepEqual(foldersUnder(blobsDir), withEmpty, 'a dry run removes nothing');

    const gc = await collectGarbage({ ...ctx, clock }, { graceMs: 0 });
    assert.equal(gc.deleted, 0);
    // a/00, a/01, a, b, and the empty sibling of the kept blob's folder.
    assert.equal(gc.removedFolders, 5);
    assert.deepEqual(foldersUnder(blobsDir), [...storedBefore, 'lost+found'].sort());
    assert.ok(fs.existsSync(blobFile(server.dataDir, kept)), 'the blob and its folders stay');

    const verify = await verifyStorage(ctx);
    assert.deepEqual([verify.integrity, verify.missingBlobs, verify.badBlobs, verify.orphanBlobs], [[], [], [], 0]);
    // A later collection finds nothing more to remove.
    assert.equal((await collectGarbage({ ...ctx, clock }, { graceMs: 0 })).removedFolders, 0);
  });
});

describe('[sqlite] attest gc', () => {
  test('says how many empty folders it removed', async () => {
    const dataDir = tempDir();
    await (await createDatabase(loadConfig({ ATTEST_DATA_DIR: dataDir }))).close();
    for (const dir of ['ab/cd', 'ab/ce', 'ef']) fs.mkdirSync(path.join(dataDir, 'blobs', dir), { recursive: true });
    const gc = await attest(['gc', '--grace-minutes', '0'], { ATTEST_DATA_DIR: dataDir });
    assert.equal(gc.code, 0, gc.output);
    assert.match(gc.stdout, /deleted 0 blobs \(0\.0 MiB\) and 4 empty folders;/);
    assert.deepEqual(fs.readdirSync(path.join(dataDir, 'blobs')), []);
    fs.rmSync(dataDir, { recursive: true, force: true });
  });
});

describe('FsBlobStore.removeEmptyFolders beside concurrent puts (RET-3, DUR-6)', () => {
  test('a folder a put is renaming into is left alone, and the rename needs no retry', async () => {
    const root = tempDir('attest-blobs-');
    let renames = 0;
    let removedDuringRename = -1;
    const store: FsBlobStore = new FsBlobStore(root, {
      fs: {
        ...nodeBlobFs,
        rename: async (from, to) => {
          renames++;
          // The put has made (or found) its shard folders, still empty: a sweep comes in right now.
          if (removedDuringRename < 0) removedDuringRename = await store.removeEmptyFolders();
          await nodeBlobFs.rename(from, to);
        },
      },
    });
    await store.recover();
    fs.mkdirSync(path.join(root, 'blobs', 'zz-not-a-shard'));
    const stored = await store.put(chunks(randomBytes(1000)));
    stored.release();
    assert.equal(removedDuringRename, 0, 'the folders being placed into are not removed');
    assert.equal(renames, 1);
    assert.ok(await store.head(stored.sha256));
    fs.rmSync(root, { recursive: true, force: true });
  });

  test('300 puts into fresh folders while deletions empty folders and sweeps run: every put lands, no empty folder is left', async () => {
    const root = tempDir('attest-blobs-');
    const store = new FsBlobStore(root);
    await store.recover();
    let done = false;
    let sweeps = 0;
    let removed = 0;
    const sweeping = (async () => {
      while (!done) {
        removed += await store.removeEmptyFolders();
        sweeps++;
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();
    const puts = await Promise.all(
      Array.from({ length: 300 }, async (_, i) => {
        const stored = await store.put(chunks(randomBytes(200 + i)));
        stored.release();
        // Every third blob is deleted again at once: its folder empties while others are placed.
        if (i % 3 === 0) assert.equal(await store.delete(stored.sha256), true);
        return { sha256: stored.sha256, deleted: i % 3 === 0 };
      }),
    );
    done = true;
    await sweeping;
    removed += await store.removeEmptyFolders();
    assert.ok(sweeps > 1, `the sweep ran alongside (${sweeps} times)`);
    for (const put of puts) {
      assert.equal((await store.head(put.sha256)) === undefined, put.deleted, `blob ${put.sha256} ${put.deleted ? 'deleted' : 'kept'}`);
    }
    const blobsDir = path.join(root, 'blobs');
    const emptyLeft = foldersUnder(blobsDir).filter((dir) => fs.readdirSync(path.join(blobsDir, dir)).length === 0);
    assert.deepEqual(emptyLeft, []);
    assert.ok(removed > 0, 'the deletions emptied folders, and they were counted');
    fs.rmSync(root, { recursive: true, force: true });
  });
});
