import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buffer, text } from 'node:stream/consumers';
import { afterEach, beforeEach, describe, test } from 'node:test';
import type { BlobStore } from '../../src/server/blob/blob-store.ts';
import { loadConfig } from '../../src/server/config.ts';
import { createDatabase } from '../../src/server/db/database.ts';
import { collectGarbage, verifyStorage } from '../../src/server/services/operations/maintenance.ts';
import { sha256 } from './blob-files.ts';
import { delay } from './wait.ts';

export async function* chunks(...parts: (string | Uint8Array)[]): AsyncIterable<Uint8Array> {
  for (const part of parts) yield typeof part === 'string' ? Buffer.from(part) : part;
}

/** More bytes than any store buffers before it streams (the data folder 512 KiB, a bucket 5 MiB). */
const PAST_BUFFERING = 6 * 1024 * 1024 + 12_345;

/** `bytes` in chunks of 64 KiB, as an upload arrives. */
async function* streamed(bytes: Buffer): AsyncIterable<Uint8Array> {
  for (let at = 0; at < bytes.length; at += 65_536) yield bytes.subarray(at, at + 65_536);
}

/** An empty embedded database, for garbage collection and verification with no row referencing anything. */
async function emptyDatabase() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'attest-contract-db-'));
  const database = await createDatabase(loadConfig({ ATTEST_DATA_DIR: dir }));
  return {
    database,
    dispose: async () => {
      await database.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function listed(store: BlobStore): Promise<string[]> {
  const keys: string[] = [];
  for await (const entry of store.list()) keys.push(entry.sha256);
  return keys.sort();
}

/**
 * What every BlobStore must do, whatever holds the bytes (blob-store.ts states the contract): the
 * local folder runs it now, an S3 store runs the same suite. `open` gives a fresh, empty store
 * that has run its start-up recovery; `dispose` removes it.
 */
export function blobStoreContract(name: string, open: () => Promise<{ store: BlobStore; dispose: () => Promise<void> }>): void {
  describe(`${name} keeps the BlobStore contract`, () => {
    let store: BlobStore;
    let dispose: () => Promise<void>;
    beforeEach(async () => {
      ({ store, dispose } = await open());
    });
    afterEach(() => dispose());

    test('a put is keyed by the SHA-256 of the streamed bytes and reads back whole, by range and by head', async () => {
      const bytes = randomBytes(200_000);
      const info = await store.put(chunks(bytes.subarray(0, 70_000), bytes.subarray(70_000)));
      info.release();
      assert.deepEqual([info.sha256, info.size, info.created], [sha256(bytes), bytes.length, true]);
      const whole = await store.get(info.sha256);
      assert.ok(whole);
      const read: Buffer[] = [];
      for await (const chunk of whole) read.push(chunk as Buffer);
      assert.deepEqual(Buffer.concat(read), bytes);
      const digits = await store.put(chunks('0123456789'));
      assert.equal(await text((await store.get(digits.sha256, { start: 2, end: 4 })) as NodeJS.ReadableStream), '234');
      assert.equal((await store.head(digits.sha256))?.size, 10);
      assert.equal(await store.get('0'.repeat(64)), undefined);
      assert.equal(await store.head('0'.repeat(64)), undefined);
    });

    test('identical bytes are stored once and the second put says it found them', async () => {
      const first = await store.put(chunks('same bytes'));
      const second = await store.put(chunks('same ', 'bytes'));
      assert.equal(second.sha256, first.sha256);
      assert.equal(second.created, false);
      assert.deepEqual(await listed(store), [first.sha256]);
    });

    test('a failing source rejects with its own error and stores nothing', async () => {
      const refusal = new Error('the type is not allowed');
      async function* failing() {
        yield Buffer.from('partial data');
        throw refusal;
      }
      await assert.rejects(store.put(failing()), (error) => error === refusal);
      assert.deepEqual(await listed(store), []);
    });

    test('a large blob streams in whole, and ranges read its first byte, its last, a span across chunks and all of it', async () => {
      const bytes = randomBytes(PAST_BUFFERING);
      const info = await store.put(streamed(bytes));
      info.release();
      assert.deepEqual([info.sha256, info.size, info.created], [sha256(bytes), bytes.length, true]);
      const read = async (start: number, end: number) => buffer((await store.get(info.sha256, { start, end })) as NodeJS.ReadableStream);
      assert.deepEqual(await read(0, 0), bytes.subarray(0, 1));
      assert.deepEqual(await read(bytes.length - 1, bytes.length - 1), bytes.subarray(-1));
      assert.deepEqual(await read(65_000, 5_300_000), bytes.subarray(65_000, 5_300_001));
      assert.deepEqual(await read(0, bytes.length - 1), bytes);
      assert.deepEqual(await buffer((await store.get(info.sha256)) as NodeJS.ReadableStream), bytes);
      const again = await store.put(streamed(bytes));
      again.release();
      assert.equal(again.created, false, 'identical large bytes are stored once too');
      assert.deepEqual(await listed(store), [info.sha256]);
    });

    test('a source that fails after more bytes than the store buffers rejects with its own error and stores nothing', async () => {
      const refusal = new Error('over the limit');
      const bytes = randomBytes(PAST_BUFFERING);
      async function* failing() {
        yield* streamed(bytes);
        throw refusal;
      }
      await assert.rejects(store.put(failing()), (error) => error === refusal);
      assert.deepEqual(await listed(store), []);
      const next = await store.put(chunks('the store is still usable'));
      next.release();
      assert.deepEqual(await listed(store), [next.sha256]);
    });

    test('list gives each blob once with its size and the time it was written, which garbage collection compares with its grace', async () => {
      // Object stores keep whole seconds.
      const before = Date.now() - 1000;
      const stored = [];
      for (const part of ['one', 'two two', 'three three three']) {
        const info = await store.put(chunks(part));
        info.release();
        stored.push(info);
      }
      const after = Date.now() + 1000;
      const entries = [];
      for await (const entry of store.list()) entries.push(entry);
      entries.sort((a, b) => a.size - b.size);
      assert.deepEqual(
        entries.map((e) => [e.sha256, e.size]),
        stored.map((s) => [s.sha256, s.size]),
      );
      for (const entry of entries) {
        assert.ok(
          entry.modifiedAt.getTime() >= before && entry.modifiedAt.getTime() <= after,
          `${entry.modifiedAt.toISOString()} is the write's time`,
        );
        assert.equal((await store.head(entry.sha256))?.size, entry.size);
      }
    });

    test('garbage collection keeps unreferenced blobs younger than its grace period and deletes them past it; verify re-hashes what remains', async () => {
      const { database, dispose: close } = await emptyDatabase();
      try {
        const kept = await store.put(chunks('an orphan, but a fresh one'));
        kept.release();
        const deps = { db: database.db, blobs: store, database };
        const fresh = await collectGarbage({ ...deps, clock: () => new Date() }, { graceMs: 3600_000 });
        assert.deepEqual([fresh.scanned, fresh.keptFresh, fresh.deleted], [1, 1, 0]);
        assert.deepEqual(await listed(store), [kept.sha256]);
        const verified = await verifyStorage(deps);
        assert.deepEqual([verified.orphanBlobs, verified.missingBlobs, verified.badBlobs], [1, [], []]);
        const later = await collectGarbage({ ...deps, clock: () => new Date(Date.now() + 2 * 3600_000) }, { graceMs: 3600_000 });
        assert.deepEqual([later.deleted, later.deletedBytes], [1, kept.size]);
        assert.deepEqual(await listed(store), []);
      } finally {
        await close();
      }
    });

    test('every stored blob re-hashes to its key, as attest verify checks it', async () => {
      for (const part of [randomBytes(10), randomBytes(300_000)]) (await store.put(chunks(part))).release();
      for await (const entry of store.list()) {
        assert.equal(sha256(await buffer((await store.get(entry.sha256)) as NodeJS.ReadableStream)), entry.sha256);
      }
    });

    test('ping answers while the store is reachable', async () => {
      await store.ping();
    });

    test('keys that are not SHA-256 digests are refused', async () => {
      await assert.rejects(store.get('../../etc/passwd'), /not a blob key/);
      await assert.rejects(store.head('A'.repeat(64)), /not a blob key/);
    });

    test('deletes a released blob once; a held one stays until released', async () => {
      const info = await store.put(chunks('to delete'));
      assert.equal(await store.delete(info.sha256), false, 'held by its upload');
      assert.ok(await store.head(info.sha256));
      info.release();
      info.release(); // harmless
      assert.equal(await store.delete(info.sha256), true);
      assert.equal(await store.delete(info.sha256), false);
      assert.equal(await store.head(info.sha256), undefined);
    });

    test('a deletion asks whether the blob is still garbage, and keeps it when not', async () => {
      const info = await store.put(chunks('referenced meanwhile'));
      info.release();
      assert.equal(await store.delete(info.sha256, async () => false), false);
      assert.ok(await store.head(info.sha256));
    });

    test('an upload of the same bytes during a deletion waits for it, then stores them again', async () => {
      const bytes = randomBytes(5000);
      const first = await store.put(chunks(bytes));
      first.release();
      let confirm: (garbage: boolean) => void = () => {};
      let asked: () => void = () => {};
      const wasAsked = new Promise<void>((resolve) => {
        asked = resolve;
      });
      const deletion = store.delete(first.sha256, () => {
        asked();
        return new Promise<boolean>((resolve) => {
          confirm = resolve;
        });
      });
      await wasAsked;
      // The deletion is fenced in: an upload of the same bytes must not find the doomed blob.
      let uploaded = false;
      const upload = store.put(chunks(bytes)).then((stored) => {
        uploaded = true;
        return stored;
      });
      // Deliberate: a window in which the upload must NOT finish; there is no event for "still waiting".
      await delay(50);
      assert.equal(uploaded, false, 'the upload waits for the deletion');
      confirm(true);
      assert.equal(await deletion, true);
      const second = await upload;
      assert.equal(second.created, true, 'the bytes were stored anew');
      assert.equal((await store.head(second.sha256))?.size, bytes.length);
      // Held until its row would commit: garbage collection cannot take it now.
      assert.equal(await store.delete(second.sha256), false);
      second.release();
    });
  });
}
