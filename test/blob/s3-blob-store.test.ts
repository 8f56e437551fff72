import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import type http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { buffer } from 'node:stream/consumers';
import { after, before, describe, test } from 'node:test';
import { HeadObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { BlobStorageError, type BlobStore } from '../../src/server/blob/blob-store.ts';
import { S3BlobStore, type S3BlobStoreOptions } from '../../src/server/blob/s3-blob-store.ts';
import { loadConfig } from '../../src/server/config.ts';
import { createDatabase, type DatabaseHandle } from '../../src/server/db/database.ts';
import { DatabaseBlobFence } from '../../src/server/db/repositories/blob-fence.ts';
import { sha256 } from '../helpers/blob-files.ts';
import { blobStoreContract, chunks } from '../helpers/blob-store-contract.ts';
import { createPostgresDatabase, DIALECTS } from '../helpers/dialects.ts';
import { type FaultyProxy, faultyProxy, startS3, type TestS3 } from '../helpers/s3.ts';
import { delay, waitFor } from '../helpers/wait.ts';

const s3 = await startS3();
after(() => s3.close());

const PREFIX = 'attest';

/** A store on a fresh bucket of the test's S3 server, with quick timeouts. */
async function s3Store(options: Partial<S3BlobStoreOptions> = {}, server: Pick<TestS3, 'endpoint'> = s3) {
  const bucket = options.bucket ?? (await s3.createBucket());
  const store = new S3BlobStore({
    bucket,
    prefix: PREFIX,
    endpoint: server.endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    timeoutMs: 2000,
    maxAttempts: 3,
    staleUploadMs: 3600_000,
    ...options,
  });
  await store.recover();
  return { store, bucket };
}

blobStoreContract('S3BlobStore', async () => ({ ...(await s3Store()), dispose: async () => {} }));

// Every put of more than 1 KiB takes the path of large blobs: a temp object, then a copy into place.
blobStoreContract('S3BlobStore streaming every blob over 1 KiB', async () => ({
  ...(await s3Store({ bufferBytes: 1024 })),
  dispose: async () => {},
}));

if (DIALECTS.includes('postgres')) {
  // Uploads fenced against garbage collection through the database, as instances sharing a bucket
  // are (SCALE-2). One database for the suite: each test has a bucket of its own.
  const pg = await createPostgresDatabase();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'attest-fence-'));
  const database = await createDatabase(loadConfig({ ATTEST_DATA_DIR: dataDir, ATTEST_DATABASE_URL: pg.url }));
  after(async () => {
    await database.close();
    await pg.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });
  blobStoreContract('S3BlobStore with the PostgreSQL fence', async () => {
    const fence = new DatabaseBlobFence(database.db, { holdMs: 3600_000, deletionMs: 60_000, log: console });
    return { ...(await s3Store({ fence })), dispose: async () => {} };
  });
}

const isIoFailure = (error: unknown) => error instanceof BlobStorageError && error.reason === 'io';

async function drain(store: S3BlobStore): Promise<string[]> {
  const keys: string[] = [];
  for await (const entry of store.list()) keys.push(entry.sha256);
  return keys.sort();
}

describe('S3BlobStore in a bucket', () => {
  test('keeps blobs at <prefix>/blobs/aa/bb/<sha256> with their SHA-256 as metadata, and leaves no temp object', async () => {
    const { store, bucket } = await s3Store();
    const small = await store.put(chunks('small bytes'));
    const large = await store.put(chunks(randomBytes(6 * 1024 * 1024)));
    small.release();
    large.release();
    const key = (sha: string) => `${PREFIX}/blobs/${sha.slice(0, 2)}/${sha.slice(2, 4)}/${sha}`;
    assert.deepEqual(await s3.keys(bucket), [key(small.sha256), key(large.sha256)].sort());
    const admin = new S3Client({ endpoint: s3.endpoint, region: 'us-east-1', forcePathStyle: true });
    for (const blob of [small, large]) {
      const head = await admin.send(new HeadObjectCommand({ Bucket: bucket, Key: key(blob.sha256) }));
      assert.deepEqual([head.ContentLength, head.Metadata?.sha256], [blob.size, blob.sha256]);
    }
    admin.destroy();
    assert.equal(store.location, `s3://${bucket}/${PREFIX}`);
  });

  test('a large upload goes in parts (multipart) and reads back identical, across the part boundaries', async () => {
    const { store, bucket } = await s3Store();
    const bytes = randomBytes(17 * 1024 * 1024 + 3);
    async function* slowly() {
      for (let at = 0; at < bytes.length; at += 256 * 1024) yield bytes.subarray(at, at + 256 * 1024);
    }
    const info = await store.put(slowly());
    info.release();
    assert.deepEqual([info.sha256, info.size, info.created], [sha256(bytes), bytes.length, true]);
    const partEnd = 5 * 1024 * 1024;
    const across = await buffer((await store.get(info.sha256, { start: partEnd - 10, end: 3 * partEnd + 10 })) as NodeJS.ReadableStream);
    assert.deepEqual(across, bytes.subarray(partEnd - 10, 3 * partEnd + 11));
    assert.deepEqual(await buffer((await store.get(info.sha256)) as NodeJS.ReadableStream), bytes);
    assert.deepEqual(await s3.keys(bucket, `${PREFIX}/tmp/`), [], 'the temp object is gone');
  });

  test('at most four streamed uploads read on at once; the others wait for one to finish before they read past what they buffered', async () => {
    const { store } = await s3Store({ bufferBytes: 1024 });
    const reading = new Set<number>();
    const gates = Array.from({ length: 6 }, () => {
      let resolve = () => {};
      const promise = new Promise<void>((settle) => {
        resolve = settle;
      });
      return { promise, resolve };
    });
    async function* source(index: number) {
      yield randomBytes(2048);
      reading.add(index);
      await gates[index]?.promise;
      yield randomBytes(2048);
    }
    const puts = gates.map((_, index) => store.put(source(index)));
    await waitFor(() => reading.size === 4, { message: () => `${reading.size} uploads reading, expected 4` });
    // Deliberate: a window in which the other two must NOT read on; there is no event for "still waiting".
    await delay(200);
    assert.equal(reading.size, 4);
    const first = [...reading][0] ?? -1;
    gates[first]?.resolve();
    (await puts[first])?.release();
    await waitFor(() => reading.size === 5, { message: 'a fifth upload reads on once one finished' });
    for (const gate of gates) gate.resolve();
    for (const put of puts) (await put).release();
    assert.equal(reading.size, 6);
  });

  test('a prefix with a space, a plus and a percent sign holds large blobs too: the copy source is URL-encoded', async () => {
    const prefix = 'team a+b 100%';
    const { store, bucket } = await s3Store({ prefix, bufferBytes: 1024 });
    const bytes = randomBytes(4096);
    const info = await store.put(chunks(bytes));
    info.release();
    const sha = sha256(bytes);
    assert.deepEqual(await s3.keys(bucket), [`${prefix}/blobs/${sha.slice(0, 2)}/${sha.slice(2, 4)}/${sha}`]);
    assert.deepEqual(await buffer((await store.get(sha)) as NodeJS.ReadableStream), bytes);
  });

  test('lists page by page', async () => {
    const { store } = await s3Store({ listPageSize: 2 });
    const stored: string[] = [];
    for (let i = 0; i < 5; i++) {
      const info = await store.put(chunks(`blob ${i}`));
      info.release();
      stored.push(info.sha256);
    }
    assert.deepEqual(await drain(store), stored.sort());
  });

  test('recover removes temp objects older than the grace period and keeps fresh ones, which other instances may be writing', async () => {
    const { bucket } = await s3Store();
    const admin = new S3Client({ endpoint: s3.endpoint, region: 'us-east-1', forcePathStyle: true });
    for (const name of ['a', 'b'])
      await admin.send(new PutObjectCommand({ Bucket: bucket, Key: `${PREFIX}/tmp/${name}`, Body: 'partial' }));
    admin.destroy();
    const now = await s3Store({ bucket });
    assert.deepEqual(await now.store.recover(), { removedTempFiles: 0 });
    assert.equal((await s3.keys(bucket, `${PREFIX}/tmp/`)).length, 2);
    const later = await s3Store({ bucket, clock: () => new Date(Date.now() + 2 * 3600_000) });
    assert.equal((await s3.keys(bucket, `${PREFIX}/tmp/`)).length, 0, 'the start-up recovery of a store two hours later took them');
    assert.deepEqual(await later.store.recover(), { removedTempFiles: 0 });
  });

  test('a bucket that does not exist fails every call as storage, head and get too, and ping says so', async () => {
    const store = new S3BlobStore({
      bucket: 'attest-no-such-bucket',
      prefix: '',
      endpoint: s3.endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      timeoutMs: 2000,
      maxAttempts: 1,
      staleUploadMs: 3600_000,
    });
    await assert.rejects(store.recover(), isIoFailure);
    await assert.rejects(store.ping(), isIoFailure);
    await assert.rejects(store.put(chunks('nowhere to go')), isIoFailure);
    await assert.rejects(drain(store), isIoFailure);
    // Not "missing blob": the store is what fails.
    await assert.rejects(store.head('0'.repeat(64)), isIoFailure);
    await assert.rejects(store.get('0'.repeat(64)), isIoFailure);
  });
});

describe('S3BlobStore when the store fails', () => {
  test('store stopped: put, get, head, list and ping reject as storage failures, nothing is listed afterwards, and it works again once restarted', async () => {
    const own = await startS3();
    try {
      const bucket = await own.createBucket();
      const { store } = await s3Store({ bucket, timeoutMs: 1000, maxAttempts: 2 }, own);
      const before = await store.put(chunks('stored before the outage'));
      before.release();
      await own.stop();
      const started = Date.now();
      await assert.rejects(store.put(chunks('sent during the outage')), isIoFailure);
      await assert.rejects(store.put(chunks(randomBytes(6 * 1024 * 1024))), isIoFailure);
      // Bounded: two attempts of at most a second each, and a short backoff between them.
      assert.ok(Date.now() - started < 10_000, `the puts failed after ${Date.now() - started} ms`);
      await assert.rejects(store.get(before.sha256), isIoFailure);
      await assert.rejects(store.head(before.sha256), isIoFailure);
      await assert.rejects(drain(store), isIoFailure);
      await assert.rejects(store.ping(), isIoFailure);
      await own.start();
      assert.deepEqual(await drain(store), [before.sha256], 'nothing of the failed puts is stored');
      assert.deepEqual(await own.keys(bucket, `${PREFIX}/tmp/`), []);
      const after = await store.put(chunks('sent once it is back'));
      after.release();
      assert.equal(after.created, true);
      assert.equal((await store.head(after.sha256))?.size, 'sent once it is back'.length);
      await store.ping();
    } finally {
      await own.close();
    }
  });

  describe('through a faulty proxy', () => {
    let proxy: FaultyProxy;
    before(async () => {
      proxy = await faultyProxy(s3.endpoint);
    });
    after(() => proxy.close());

    /** Stores 9 MiB (a multipart upload and a copy) while the proxy answers the requests `late` picks `lateMs` late. */
    async function putLarge(store: BlobStore, late: (request: http.IncomingMessage) => boolean, lateMs = 800): Promise<void> {
      const bytes = randomBytes(9 * 1024 * 1024);
      proxy.answers.length = 0;
      proxy.delay(lateMs, late);
      try {
        const info = await store.put(chunks(bytes));
        info.release();
        assert.equal(info.sha256, sha256(bytes));
      } finally {
        proxy.delay(0);
      }
    }

    test('503s are retried with backoff: a put succeeds after two, and fails as storage once the attempts are spent', async () => {
      const bucket = await s3.createBucket();
      const { store } = await s3Store({ bucket, maxAttempts: 3 }, proxy);
      proxy.answers.length = 0;
      proxy.refuse(2);
      const info = await store.put(chunks('through a flaky store'));
      info.release();
      assert.deepEqual(proxy.answers.slice(0, 3), ['refused', 'refused', 'forwarded'], 'the first request was retried twice');
      assert.equal((await store.head(info.sha256))?.size, info.size);
      proxy.answers.length = 0;
      proxy.refuse(3);
      await assert.rejects(store.put(chunks('through a store that keeps failing')), isIoFailure);
      assert.deepEqual(proxy.answers, ['refused', 'refused', 'refused'], 'three attempts, no more');
      proxy.refuse(0);
    });

    test('a store that never answers fails each attempt at the timeout', async () => {
      const { store } = await s3Store({ timeoutMs: 300, maxAttempts: 2 }, proxy);
      proxy.stall(true);
      try {
        await assert.rejects(store.head('0'.repeat(64)), isIoFailure);
        await assert.rejects(store.put(chunks('into silence')), isIoFailure);
      } finally {
        proxy.stall(false);
      }
    });

    test('a download cut short fails its stream as storage instead of ending early (SEC-10a)', async () => {
      const { store } = await s3Store({}, proxy);
      const bytes = randomBytes(300_000);
      const info = await store.put(chunks(bytes));
      info.release();
      proxy.truncate(true);
      try {
        const stream = await store.get(info.sha256);
        assert.ok(stream);
        await assert.rejects(buffer(stream), isIoFailure);
      } finally {
        proxy.truncate(false);
      }
      assert.deepEqual(await buffer((await store.get(info.sha256)) as NodeJS.ReadableStream), bytes);
    });

    test('listings that say they are truncated but do not move on end instead of asking for the same page forever', async () => {
      const { store } = await s3Store({}, proxy);
      const xmlns = 'xmlns="http://s3.amazonaws.com/doc/2006-03-01/"';
      /** Requests of a kind, up to five: a listing that loops is cut off there, and the store answers the rest. */
      const firstFive = (kind: (query: URLSearchParams) => boolean) => {
        let count = 0;
        return (request: { method?: string; url?: string }) =>
          request.method === 'GET' && kind(new URL(request.url ?? '', 'http://proxy').searchParams) && count++ < 5;
      };
      const served = () => proxy.answers.filter((answer) => answer === 'served').length;
      proxy.answers.length = 0;
      proxy.serve(
        `<?xml version="1.0" encoding="UTF-8"?><ListMultipartUploadsResult ${xmlns}><Prefix>${PREFIX}/tmp/</Prefix><IsTruncated>true</IsTruncated><NextKeyMarker>${PREFIX}/tmp/a</NextKeyMarker><NextUploadIdMarker>u1</NextUploadIdMarker></ListMultipartUploadsResult>`,
        firstFive((query) => query.has('uploads')),
      );
      try {
        assert.deepEqual(await store.recover(), { removedTempFiles: 0 });
      } finally {
        proxy.serve(undefined);
      }
      assert.equal(served(), 2, 'the first page, and the same again: no third');
      proxy.answers.length = 0;
      proxy.serve(
        `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult ${xmlns}><Prefix>${PREFIX}/blobs/</Prefix><KeyCount>0</KeyCount><IsTruncated>true</IsTruncated><NextContinuationToken>same</NextContinuationToken></ListBucketResult>`,
        firstFive((query) => query.get('list-type') === '2'),
      );
      try {
        assert.deepEqual(await drain(store), []);
      } finally {
        proxy.serve(undefined);
      }
      assert.equal(served(), 2, 'the first page, and the same again: no third');
    });

    test("every part of a large upload carries its body's SHA-256 in its signature, which S3 checks on arrival", async () => {
      const { store } = await s3Store({}, proxy);
      const bytes = randomBytes(11 * 1024 * 1024);
      proxy.puts.length = 0;
      const info = await store.put(chunks(bytes));
      info.release();
      const parts = proxy.puts.filter((put) => /[?&]partNumber=/.test(put.url));
      assert.equal(parts.length, 3);
      for (const part of parts) assert.equal(part.claimed, part.sha256, `${part.url} claims the SHA-256 of the bytes sent`);
    });

    test("the parts of a large upload have time for their size, beyond the timeout of a request's answer", async () => {
      const { store } = await s3Store({ timeoutMs: 300, maxAttempts: 1 }, proxy);
      // Each part answered later than the timeout, within the time a 5 MiB part is given.
      await putLarge(store, (request) => request.method === 'PUT' && /[?&]partNumber=/.test(request.url ?? ''));
      assert.equal(proxy.answers.filter((answer) => answer === 'delayed').length, 2, 'both parts');
    });

    test("a large upload's copy into place has time for its size, beyond the timeout of a request's answer", async () => {
      // Parts are given no more than the timeout here, so the copy's time is its own. The timeout is a
      // second, not 300 ms: a 5 MiB part through the proxy took longer than 300 ms on a loaded machine.
      const slowestTransfer = { sendBytesPerSecond: Number.MAX_SAFE_INTEGER, copyBytesPerSecond: 8 * 1024 * 1024 };
      const { store } = await s3Store({ timeoutMs: 1000, maxAttempts: 1, slowestTransfer }, proxy);
      // Answered later than the timeout, within the time a 9 MiB copy is given (1,000 ms + 1,125 ms).
      await putLarge(store, (request) => request.method === 'PUT' && 'x-amz-copy-source' in request.headers, 1600);
      assert.deepEqual(
        proxy.answers.filter((answer) => answer === 'delayed'),
        ['delayed'],
      );
    });

    test('an answer without Content-Length fails as storage instead of reading as an empty blob', async () => {
      const { store } = await s3Store({}, proxy);
      const bytes = randomBytes(100_000);
      const info = await store.put(chunks(bytes));
      info.release();
      proxy.answers.length = 0;
      proxy.chunk(true);
      try {
        await assert.rejects(async () => buffer((await store.get(info.sha256)) as NodeJS.ReadableStream), isIoFailure);
        assert.deepEqual(proxy.answers, ['chunked']);
      } finally {
        proxy.chunk(false);
      }
      assert.deepEqual(await buffer((await store.get(info.sha256)) as NodeJS.ReadableStream), bytes);
    });
  });
});

describe('the database fence between instances (SCALE-2)', { skip: !DIALECTS.includes('postgres') && 'needs PostgreSQL' }, () => {
  let database: DatabaseHandle;
  let drop: () => Promise<void>;
  let dataDir: string;
  let bucket: string;
  before(async () => {
    const pg = await createPostgresDatabase();
    drop = pg.drop;
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'attest-fence-'));
    database = await createDatabase(loadConfig({ ATTEST_DATA_DIR: dataDir, ATTEST_DATABASE_URL: pg.url }));
    bucket = await s3.createBucket();
  });
  after(async () => {
    await database.close();
    await drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  /** Two instances on one bucket and one database, each with its own fence and S3 client. */
  async function twoInstances(options: { clock?: () => Date } = {}) {
    const fence = () => new DatabaseBlobFence(database.db, { holdMs: 3600_000, deletionMs: 60_000, log: console, ...options });
    return [(await s3Store({ bucket, fence: fence() })).store, (await s3Store({ bucket, fence: fence() })).store] as const;
  }

  test("an upload held on one instance keeps the other's garbage collection off the bytes until it is released", async () => {
    const [a, b] = await twoInstances();
    const bytes = `an old orphan ${Math.random()}`;
    const orphan = await a.put(chunks(bytes));
    orphan.release();
    const upload = await b.put(chunks(bytes));
    assert.equal(upload.created, false, 'B found the stored bytes');
    assert.equal(await a.delete(orphan.sha256), false, "A leaves them: B's row is not committed yet");
    assert.ok(await a.head(orphan.sha256));
    upload.release();
    // B's release reaches the database on its own time.
    await waitFor(() => a.delete(orphan.sha256), { message: "A deletes the orphan once B's hold is gone" });
    assert.equal(await a.head(orphan.sha256), undefined);
  });

  test("an upload on one instance during the other's deletion of the same bytes waits for it, then stores them again", async () => {
    const [a, b] = await twoInstances();
    const bytes = `doomed bytes ${Math.random()}`;
    const first = await a.put(chunks(bytes));
    first.release();
    let confirm: (garbage: boolean) => void = () => {};
    const asked = new Promise<void>((resolve) => {
      const deletion = a.delete(first.sha256, () => {
        resolve();
        return new Promise<boolean>((settle) => {
          confirm = settle;
        });
      });
      void deletion;
    });
    await asked;
    let uploaded = false;
    const upload = b.put(chunks(bytes)).then((stored) => {
      uploaded = true;
      return stored;
    });
    // Deliberate: a window in which B's upload must NOT finish; there is no event for "still waiting".
    await delay(200);
    assert.equal(uploaded, false, "B waits for A's deletion");
    confirm(true);
    const second = await upload;
    assert.equal(second.created, true, 'the bytes were stored anew');
    assert.equal((await a.head(second.sha256))?.size, bytes.length);
    assert.equal(await a.delete(second.sha256), false, "held by B's upload");
    second.release();
  });

  /** This fence's hold rows on `sha`, with when each expires. */
  const holdsOf = (fence: DatabaseBlobFence, sha: string) =>
    database.db
      .selectFrom('blob_fences')
      .select('expires_at')
      .where('holder', '=', fence.holder)
      .where('sha256', '=', sha)
      .where('kind', '=', 'hold')
      .execute();

  test('a live upload keeps its hold past holdMs: its instance renews it, so GC on another leaves the bytes', async () => {
    const fence = new DatabaseBlobFence(database.db, { holdMs: 900, deletionMs: 60_000, log: console });
    const a = (await s3Store({ bucket, fence })).store;
    const [b] = await twoInstances();
    const upload = await a.put(chunks(`a slow import's attachment ${Math.random()}`));
    const [first] = await holdsOf(fence, upload.sha256);
    assert.ok(first);
    await waitFor(() => Date.now() > Date.parse(first.expires_at) + 100, { message: 'the hold as first written has expired' });
    assert.equal(await b.delete(upload.sha256), false, "B leaves the bytes: A's upload still holds them");
    assert.ok(await b.head(upload.sha256));
    upload.release();
    await waitFor(() => b.delete(upload.sha256), { message: 'B deletes the bytes once the hold is released' });
    assert.deepEqual(await holdsOf(fence, upload.sha256), []);
  });

  test('an upload waiting on a deletion mark that outlasts holdMs keeps its hold while it waits', async () => {
    const fence = new DatabaseBlobFence(database.db, { holdMs: 900, deletionMs: 60_000, log: console });
    const a = (await s3Store({ bucket, fence })).store;
    const bytes = `bytes another instance is deleting ${Math.random()}`;
    const sha = sha256(Buffer.from(bytes));
    await database.db
      .insertInto('blob_fences')
      .values({
        id: `mark-${Math.random()}`,
        sha256: sha,
        kind: 'deletion',
        holder: 'other',
        expires_at: new Date(Date.now() + 60_000).toISOString(),
      })
      .execute();
    const upload = a.put(chunks(bytes));
    const first = await waitFor(() => holdsOf(fence, sha).then((rows) => rows[0]), { message: 'the upload holds the digest' });
    await waitFor(() => Date.now() > Date.parse(first.expires_at) + 100, { message: 'the hold as first written has expired' });
    const [renewed] = await holdsOf(fence, sha);
    assert.ok(renewed && Date.parse(renewed.expires_at) > Date.now(), 'the waiting upload still holds the digest');
    await database.db.deleteFrom('blob_fences').where('sha256', '=', sha).where('kind', '=', 'deletion').execute();
    const stored = await upload;
    assert.equal(stored.created, true);
    stored.release();
  });

  test("a dead instance's expired hold and deletion mark count for nothing", async () => {
    const later = () => new Date(Date.now() + 2 * 3600_000);
    const [a] = await twoInstances();
    const [, laterB] = await twoInstances({ clock: later });
    const orphan = await a.put(chunks(`held by an instance that died ${Math.random()}`));
    // Never released: its instance died. Two hours later the hold has expired.
    assert.equal(await laterB.delete(orphan.sha256), true);
    const bytes = `marked by an instance that died ${Math.random()}`;
    const again = await a.put(chunks(bytes));
    again.release();
    await database.db
      .insertInto('blob_fences')
      .values({
        id: 'dead-mark',
        sha256: again.sha256,
        kind: 'deletion',
        holder: 'dead',
        expires_at: new Date(Date.now() - 1000).toISOString(),
      })
      .execute();
    const reupload = await a.put(chunks(bytes));
    assert.equal(reupload.created, false, 'the expired mark did not hold the upload up');
    reupload.release();
  });
});
