import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { text } from 'node:stream/consumers';
import { afterEach, beforeEach, describe, test } from 'node:test';
import type { BlobStore } from '../../src/server/blob/blob-store.ts';
import { sha256 } from './blob-files.ts';
import { delay } from './wait.ts';

export async function* chunks(...parts: (string | Uint8Array)[]): AsyncIterable<Uint8Array> {
  for (const part of parts) yield typeof part === 'string' ? Buffer.from(part) : part;
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
