import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { text } from 'node:stream/consumers';
import { afterEach, beforeEach, describe, test } from 'node:test';
import { BlobStorageError } from '../../src/server/blob/blob-store.ts';
import { type BlobFs, FsBlobStore, nodeBlobFs } from '../../src/server/blob/fs-blob-store.ts';

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

async function* chunks(...parts: (string | Uint8Array)[]): AsyncIterable<Uint8Array> {
  for (const part of parts) yield typeof part === 'string' ? Buffer.from(part) : part;
}

const errno = (code: string) => Object.assign(new Error(`${code}: injected`), { code });

describe('FsBlobStore', () => {
  let root: string;
  beforeEach(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'attest-blobs-'));
  });
  afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

  const tmpFiles = () => fs.readdirSync(path.join(root, 'tmp'));

  async function ready(options: ConstructorParameters<typeof FsBlobStore>[1] = {}) {
    const store = new FsBlobStore(root, options);
    await store.recover();
    return store;
  }

  test('streams a put into blobs/aa/bb/<sha256> and leaves no temp file', async () => {
    const store = await ready();
    const bytes = randomBytes(200_000);
    const info = await store.put(chunks(bytes.subarray(0, 70_000), bytes.subarray(70_000)));
    assert.deepEqual(info, { sha256: sha256(bytes), size: bytes.length, created: true });
    const file = path.join(root, 'blobs', info.sha256.slice(0, 2), info.sha256.slice(2, 4), info.sha256);
    assert.deepEqual(fs.readFileSync(file), bytes);
    assert.equal(fs.statSync(file).mode & 0o777, 0o600);
    assert.deepEqual(tmpFiles(), []);
  });

  test('stores identical bytes once and says the second put found them', async () => {
    const store = await ready();
    const first = await store.put(chunks('same bytes'));
    const second = await store.put(chunks('same ', 'bytes'));
    assert.equal(second.sha256, first.sha256);
    assert.equal(second.created, false);
    const entries = [];
    for await (const entry of store.list()) entries.push(entry);
    assert.deepEqual(
      entries.map((e) => e.sha256),
      [first.sha256],
    );
    assert.deepEqual(tmpFiles(), []);
  });

  test('makes each step durable in order: file fsync, rename, then the directories up to blobs/', async () => {
    const calls: string[] = [];
    const opened = new Map<number, string>();
    const rel = (file: string) => path.relative(root, file).replace(/[0-9a-f-]{36}\.part$/, '<uuid>.part');
    const recording: BlobFs = {
      ...nodeBlobFs,
      open: async (file, flags, mode) => {
        const fd = await nodeBlobFs.open(file, flags, mode);
        opened.set(fd, rel(file));
        return fd;
      },
      fsync: async (fd) => {
        calls.push(`fsync ${opened.get(fd)}`);
        await nodeBlobFs.fsync(fd);
      },
      rename: async (from, to) => {
        calls.push(`rename ${rel(from)} -> ${rel(to)}`);
        await nodeBlobFs.rename(from, to);
      },
    };
    const steps: string[] = [];
    const store = await ready({ fs: recording, onDurabilityStep: (step) => steps.push(step) });
    calls.length = 0;
    const info = await store.put(chunks('durable'));
    const bb = path.join('blobs', info.sha256.slice(0, 2), info.sha256.slice(2, 4));
    assert.deepEqual(calls, [
      'fsync tmp/<uuid>.part',
      `rename tmp/<uuid>.part -> ${bb}/${info.sha256}`,
      `fsync ${bb}`,
      `fsync ${path.dirname(bb)}`,
      'fsync blobs',
    ]);
    assert.deepEqual(steps, ['after-fsync-file', 'after-rename', 'after-dir-fsync']);
    calls.length = 0;
    const sibling = await store.put(chunks('durable too'));
    assert.equal(calls.filter((c) => c.startsWith('fsync')).length >= 2, true, 'file and its directory, at least');
    assert.ok(calls.includes(`fsync ${path.join('blobs', sibling.sha256.slice(0, 2), sibling.sha256.slice(2, 4))}`));
  });

  test('reads a blob whole or by inclusive byte range, and knows its size', async () => {
    const store = await ready();
    const info = await store.put(chunks('0123456789'));
    assert.equal(await text((await store.get(info.sha256)) as NodeJS.ReadableStream), '0123456789');
    assert.equal(await text((await store.get(info.sha256, { start: 2, end: 4 })) as NodeJS.ReadableStream), '234');
    assert.equal((await store.head(info.sha256))?.size, 10);
    assert.equal(await store.get('0'.repeat(64)), undefined);
    assert.equal(await store.head('0'.repeat(64)), undefined);
  });

  test('deletes a blob once and refuses keys that are not SHA-256 digests', async () => {
    const store = await ready();
    const info = await store.put(chunks('to delete'));
    assert.equal(await store.delete(info.sha256), true);
    assert.equal(await store.delete(info.sha256), false);
    await assert.rejects(store.get('../../etc/passwd'), /not a blob key/);
    assert.throws(() => store.blobPath(`${'a'.repeat(63)}/`), /not a blob key/);
  });

  test('a failing source rejects with its own error and leaves nothing behind', async () => {
    const store = await ready();
    const refusal = new Error('the type is not allowed');
    async function* failing() {
      yield Buffer.from('partial data');
      throw refusal;
    }
    await assert.rejects(store.put(failing()), (error) => error === refusal);
    assert.deepEqual(tmpFiles(), []);
    assert.deepEqual(fs.readdirSync(path.join(root, 'blobs')), []);
  });

  for (const { step, inject, reason } of [
    { step: 'write', inject: { write: async () => Promise.reject(errno('ENOSPC')) }, reason: 'full' },
    { step: 'file fsync', inject: { fsync: async () => Promise.reject(errno('EIO')) }, reason: 'io' },
    { step: 'rename', inject: { rename: async () => Promise.reject(errno('EIO')) }, reason: 'io' },
    { step: 'quota', inject: { write: async () => Promise.reject(errno('EDQUOT')) }, reason: 'full' },
  ] as { step: string; inject: Partial<BlobFs>; reason: 'full' | 'io' }[]) {
    test(`an injected ${step} failure rejects as "${reason}", removes the temp file, and the next put works`, async () => {
      const healthy = await ready();
      const store = new FsBlobStore(root, { fs: { ...nodeBlobFs, ...inject } });
      await assert.rejects(store.put(chunks(randomBytes(1000))), (error) => error instanceof BlobStorageError && error.reason === reason);
      assert.deepEqual(tmpFiles(), []);
      const bytes = randomBytes(1000);
      assert.equal((await healthy.put(chunks(bytes))).sha256, sha256(bytes));
    });
  }

  test('a failing directory fsync is reported, never taken for durability', async () => {
    let armed = false;
    let fsyncs = 0;
    // Once armed, the first fsync of a put is the temp file's and the second its directory's.
    const faulty: BlobFs = {
      ...nodeBlobFs,
      fsync: async (fd) => (armed && ++fsyncs === 2 ? Promise.reject(errno('EIO')) : nodeBlobFs.fsync(fd)),
    };
    const steps: string[] = [];
    const store = await ready({ fs: faulty, onDurabilityStep: (step) => steps.push(step) });
    armed = true;
    await assert.rejects(store.put(chunks('dir fsync fails')), (error) => error instanceof BlobStorageError && error.reason === 'io');
    assert.deepEqual(steps, ['after-fsync-file', 'after-rename']);
    assert.deepEqual(tmpFiles(), []);
  });

  test('start-up recovery removes every leftover .part file and counts them', async () => {
    fs.mkdirSync(path.join(root, 'tmp'), { recursive: true });
    for (let i = 0; i < 3; i++) fs.writeFileSync(path.join(root, 'tmp', `stale-${i}.part`), 'half an upload');
    const store = new FsBlobStore(root);
    assert.deepEqual(await store.recover(), { removedTempFiles: 3 });
    assert.deepEqual(tmpFiles(), []);
    assert.deepEqual(await store.recover(), { removedTempFiles: 0 });
  });
});
