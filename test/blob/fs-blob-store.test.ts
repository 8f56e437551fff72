import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, test } from 'node:test';
import { BlobStorageError } from '../../src/server/blob/blob-store.ts';
import { type BlobFs, FsBlobStore, nodeBlobFs } from '../../src/server/blob/fs-blob-store.ts';
import { sha256 } from '../helpers/blob-files.ts';
import { blobStoreContract, chunks } from '../helpers/blob-store-contract.ts';

blobStoreContract('FsBlobStore', async () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'attest-blobs-'));
  const store = new FsBlobStore(root);
  await store.recover();
  return { store, dispose: async () => fs.rmSync(root, { recursive: true, force: true }) };
});

const errno = (code: string) => Object.assign(new Error(`${code}: injected`), { code });

describe('FsBlobStore on disk', () => {
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

  /**
   * The node file system with each call of the kinds in `record` written to `calls`: `fsync <path>`,
   * `rename <from> -> <to>` and so on, each path relative to the root (a descriptor's, the path it was
   * opened by) and a temp file's random name as `<uuid>.part`.
   */
  function fsRecorder(record: ('open' | 'write' | 'fsync' | 'unlink' | 'rename' | 'mkdir')[]): { calls: string[]; recording: BlobFs } {
    const calls: string[] = [];
    const opened = new Map<number, string>();
    const rel = (file: string) => path.relative(root, file).replace(/[0-9a-f-]{36}\.part$/, '<uuid>.part');
    const note = (call: (typeof record)[number], what: string) => {
      if (record.includes(call)) calls.push(`${call} ${what}`);
    };
    const recording: BlobFs = {
      ...nodeBlobFs,
      open: async (file, flags, mode) => {
        const fd = await nodeBlobFs.open(file, flags, mode);
        opened.set(fd, rel(file));
        note('open', rel(file));
        return fd;
      },
      write: async (fd, buffer, offset, length) => {
        note('write', `${opened.get(fd)}`);
        return nodeBlobFs.write(fd, buffer, offset, length);
      },
      fsync: async (fd) => {
        note('fsync', `${opened.get(fd)}`);
        await nodeBlobFs.fsync(fd);
      },
      unlink: async (file) => {
        note('unlink', rel(file));
        await nodeBlobFs.unlink(file);
      },
      rename: async (from, to) => {
        note('rename', `${rel(from)} -> ${rel(to)}`);
        await nodeBlobFs.rename(from, to);
      },
      mkdir: async (dir) => {
        note('mkdir', rel(dir));
        await nodeBlobFs.mkdir(dir);
      },
    };
    return { calls, recording };
  }

  test('streams a put into blobs/aa/bb/<sha256> and leaves no temp file', async () => {
    const store = await ready();
    const bytes = randomBytes(200_000);
    const info = await store.put(chunks(bytes.subarray(0, 70_000), bytes.subarray(70_000)));
    info.release();
    assert.equal(info.sha256, sha256(bytes));
    const file = path.join(root, 'blobs', info.sha256.slice(0, 2), info.sha256.slice(2, 4), info.sha256);
    assert.deepEqual(fs.readFileSync(file), bytes);
    assert.equal(fs.statSync(file).mode & 0o777, 0o600);
    assert.deepEqual(tmpFiles(), []);
  });

  test('makes each step durable in order: file fsync, rename, then the directories up to blobs/', async () => {
    const { calls, recording } = fsRecorder(['fsync', 'rename']);
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

  test('a second upload into a folder it has made durable costs no mkdir and fsyncs only the file and that folder', async () => {
    // Two contents whose digests share their first two bytes, so both land in one blobs/aa/bb.
    const byPrefix = new Map<string, string>();
    let pair: [string, string] | undefined;
    for (let i = 0; !pair; i++) {
      const text = `bytes ${i}`;
      const prefix = sha256(Buffer.from(text)).slice(0, 4);
      const other = byPrefix.get(prefix);
      if (other !== undefined) pair = [other, text];
      else byPrefix.set(prefix, text);
    }
    const { calls, recording } = fsRecorder(['fsync', 'mkdir']);
    const store = await ready({ fs: recording });
    await store.put(chunks(pair[0]));
    calls.length = 0;
    const second = await store.put(chunks(pair[1]));
    const bb = path.join('blobs', second.sha256.slice(0, 2), second.sha256.slice(2, 4));
    assert.deepEqual(calls, ['fsync tmp/<uuid>.part', `fsync ${bb}`]);
  });

  /** A store whose open, write, fsync, unlink and rename calls are recorded, paths relative to the root. */
  async function recordingStore() {
    const { calls, recording } = fsRecorder(['open', 'write', 'fsync', 'unlink', 'rename']);
    const store = await ready({ fs: recording });
    calls.length = 0; // start-up recovery's own fsync
    return { store, calls };
  }

  test('a small blob is written with one write; stored again it costs no temp file, and no fsync once its entry is durable', async () => {
    const { store, calls } = await recordingStore();
    const bytes = randomBytes(100_000);
    const first = await store.put(chunks(bytes.subarray(0, 30_000), bytes.subarray(30_000, 60_000), bytes.subarray(60_000)));
    first.release();
    assert.equal(calls.filter((c) => c === 'write tmp/<uuid>.part').length, 1, calls.join('\n'));
    calls.length = 0;
    const again = await store.put(chunks(bytes));
    again.release();
    assert.equal(again.created, false);
    assert.deepEqual(calls, [], 'no open, write, fsync or unlink: the blob is there and its entry durable');
    assert.deepEqual(tmpFiles(), []);
    assert.deepEqual(fs.readFileSync(store.blobPath(again.sha256)), bytes);
  });

  test('stored again after a deletion, the same bytes go through every durable step again (DUR-6)', async () => {
    const { store, calls } = await recordingStore();
    const first = await store.put(chunks('deleted, then back'));
    first.release();
    assert.equal(await store.delete(first.sha256), true);
    calls.length = 0;
    const again = await store.put(chunks('deleted, then back'));
    again.release();
    assert.equal(again.created, true);
    const bb = path.join('blobs', again.sha256.slice(0, 2), again.sha256.slice(2, 4));
    assert.deepEqual(
      calls.filter((c) => !c.startsWith('open ') && !c.startsWith('write ')),
      [
        'fsync tmp/<uuid>.part',
        `rename tmp/<uuid>.part -> ${bb}/${again.sha256}`,
        `fsync ${bb}`,
        `fsync ${path.dirname(bb)}`,
        'fsync blobs',
      ],
    );
  });

  test("bytes found on disk but not made durable by this store (a previous process's) get their folder fsynced", async () => {
    const earlier = await ready();
    const stored = await earlier.put(chunks('left by a previous process'));
    stored.release();
    const { store, calls } = await recordingStore();
    const again = await store.put(chunks('left by a previous process'));
    again.release();
    assert.equal(again.created, false);
    const bb = path.join('blobs', again.sha256.slice(0, 2), again.sha256.slice(2, 4));
    assert.deepEqual(
      calls.filter((c) => c.startsWith('fsync ')),
      [`fsync ${bb}`, `fsync ${path.dirname(bb)}`, 'fsync blobs'],
    );
    assert.ok(!calls.some((c) => c.includes('.part')), 'no temp file for known bytes');
  });

  test('a blob larger than the in-memory bound streams through its temp file and stores whole', async () => {
    const { store, calls } = await recordingStore();
    const bytes = randomBytes(1_500_000);
    const parts = Array.from({ length: 15 }, (_, i) => bytes.subarray(i * 100_000, (i + 1) * 100_000));
    const info = await store.put(chunks(...parts));
    info.release();
    assert.ok(calls.filter((c) => c === 'write tmp/<uuid>.part').length > 1, 'written as it streamed');
    assert.deepEqual(fs.readFileSync(store.blobPath(info.sha256)), bytes);
    assert.deepEqual(tmpFiles(), []);
  });

  test('no key maps to a path outside the folder', async () => {
    const store = await ready();
    assert.throws(() => store.blobPath(`${'a'.repeat(63)}/`), /not a blob key/);
    assert.throws(() => store.blobPath('../../etc/passwd'), /not a blob key/);
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

  /** Two contents whose digests share their first two bytes, so both land in one blobs/aa/bb. */
  function samePrefixPair(): [string, string] {
    const byPrefix = new Map<string, string>();
    for (let i = 0; ; i++) {
      const text = `shard ${i}`;
      const prefix = sha256(Buffer.from(text)).slice(0, 4);
      const other = byPrefix.get(prefix);
      if (other !== undefined) return [other, text];
      byPrefix.set(prefix, text);
    }
  }

  test('a deletion removes the shard folders it empties, and only those (RET-3)', async () => {
    const store = await ready();
    const [a, b] = samePrefixPair();
    const first = await store.put(chunks(a));
    const second = await store.put(chunks(b));
    first.release();
    second.release();
    const bb = path.dirname(store.blobPath(first.sha256));
    assert.equal(await store.delete(first.sha256), true);
    assert.ok(fs.existsSync(bb), 'the folder still holds the other blob');
    assert.equal(await store.delete(second.sha256), true);
    assert.ok(!fs.existsSync(bb) && !fs.existsSync(path.dirname(bb)), 'blobs/aa/bb and blobs/aa went');
    assert.deepEqual(fs.readdirSync(path.join(root, 'blobs')), []);
  });

  test('an upload into a shard folder a deletion removed makes it again, durably (DUR-6)', async () => {
    const { calls, recording } = fsRecorder(['fsync']);
    const store = await ready({ fs: recording });
    const bytes = 'comes and goes';
    const stored = await store.put(chunks(bytes));
    stored.release();
    await store.delete(stored.sha256);
    calls.length = 0;
    const again = await store.put(chunks(bytes));
    again.release();
    const bb = path.join('blobs', again.sha256.slice(0, 2), again.sha256.slice(2, 4));
    assert.deepEqual(
      calls,
      ['fsync tmp/<uuid>.part', `fsync ${bb}`, `fsync ${path.dirname(bb)}`, 'fsync blobs'],
      'the recreated folders are made durable again',
    );
    assert.equal(fs.readFileSync(store.blobPath(again.sha256), 'utf8'), bytes);
  });

  test('a shard folder removed between its mkdir and the rename is made again and the rename retried once', async () => {
    let vanish = 0;
    const racing: BlobFs = {
      ...nodeBlobFs,
      rename: async (from, to) => {
        // Garbage collection emptied and removed the folder just now (it was empty: the mkdir made it).
        if (vanish-- > 0) {
          await fs.promises.rmdir(path.dirname(to));
          await fs.promises.rmdir(path.dirname(path.dirname(to)));
        }
        await nodeBlobFs.rename(from, to);
      },
    };
    const store = await ready({ fs: racing });
    vanish = 1;
    const stored = await store.put(chunks('raced'));
    assert.equal(fs.readFileSync(store.blobPath(stored.sha256), 'utf8'), 'raced');
    assert.deepEqual(tmpFiles(), []);
    // Twice in a row: one retry only, then a clean failure, nothing left behind.
    vanish = 2;
    await assert.rejects(store.put(chunks('raced twice')), (error) => error instanceof BlobStorageError && error.reason === 'io');
    assert.deepEqual(tmpFiles(), []);
  });
});
