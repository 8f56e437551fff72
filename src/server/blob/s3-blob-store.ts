import { createHash, randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  CopyObjectCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import {
  type BlobEntry,
  type BlobFence,
  BlobHolds,
  BlobStorageError,
  type BlobStore,
  type ByteRange,
  isBlobKey,
  type StoredBlob,
} from './blob-store.ts';
import {
  createS3Client,
  exactly,
  isMissing,
  listMultipartUploads,
  listObjects,
  MAX_BACKOFF_MS,
  type S3ClientOptions,
  s3Failure,
  sizedTimeout,
} from './s3-client.ts';
import { Slots } from './slots.ts';

export interface S3BlobStoreOptions extends S3ClientOptions {
  bucket: string;
  /** The key prefix everything goes under, without a trailing slash; '' for the bucket's root. */
  prefix: string;
  /** How old an unfinished upload must be before `recover` removes it: garbage collection's grace period. */
  staleUploadMs: number;
  /** The fence against garbage collection; one process's `BlobHolds` unless instances share a database fence (SCALE-2). */
  fence?: BlobFence;
  clock?: () => Date;
  /** Blobs up to this size are buffered and written with one PutObject; larger ones stream (see put). */
  bufferBytes?: number;
  /** Keys asked for per listing page (at most 1000, S3's own maximum). */
  listPageSize?: number;
  /** The slowest transfers the timeouts of size-bound requests allow for; SLOWEST_TRANSFER by default. */
  slowestTransfer?: { sendBytesPerSecond: number; copyBytesPerSecond: number };
}

/**
 * S3's smallest multipart part, and so the buffering threshold: a blob up to this size would be a
 * single PutObject for `Upload` too, so buffering it costs no more memory than streaming it would.
 */
const BUFFER_BYTES = 5 * 1024 * 1024;
/**
 * The slowest transfers that requests whose work grows with their size are given time for, beyond
 * `timeoutMs` (docs/storage.md): a part sent at 2 Mbit/s (20 s more for 5 MiB), an object copied
 * inside the store at 8 MiB/s (128 s more per GiB).
 */
const SLOWEST_TRANSFER = { sendBytesPerSecond: 256 * 1024, copyBytesPerSecond: 8 * 1024 * 1024 };
/**
 * Parts a streamed upload keeps in flight. Its memory is these parts, the one being filled and the
 * source's read-ahead: about 3 parts of 5 MiB, 15-16 MiB (with 4 in flight it was 25-30 MiB).
 */
const UPLOAD_QUEUE = 2;
/**
 * Streamed uploads under way at once in this process; the others wait for a slot, each holding the
 * 5 MiB it read before it knew it would stream, and read no further. So streamed uploads take at
 * most about 4 x 16 = 64 MiB, plus 5 MiB per waiting one.
 */
const STREAMED_PUTS = 4;

/** The digest of a blob key below the `blobs/` prefix: `aa/bb/<sha256>`, shards matching the digest. */
const SHARDED_DIGEST = /^([0-9a-f]{2})\/([0-9a-f]{2})\/(\1\2[0-9a-f]{60})$/;

/**
 * Content-addressed blobs in an S3-compatible bucket, under an optional prefix:
 *
 *     <prefix>/blobs/aa/bb/<sha256>   immutable, named by their digest, as in the data folder
 *     <prefix>/tmp/<uuid>             large uploads in progress, copied into place once hashed
 *
 * The SDK computes and checks no checksums of its own (`WHEN_REQUIRED`: third-party stores reject
 * or ignore the newer ones); the store sends Content-MD5 with each PutObject (S3 refuses a body that
 * arrived damaged, DUR-11), keeps the SHA-256 as `x-amz-meta-sha256`, confirms every object
 * it wrote by its size, and `attest verify` re-hashes objects against their keys. The parts of a
 * multipart upload carry no Content-MD5 (`Upload` sends the same headers with every part); each
 * PutObject and part, sent from memory, carries its body's SHA-256 in its signature
 * (`x-amz-content-sha256`), which AWS S3 and MinIO check on arrival. On a store that does not,
 * integrity in transit above 5 MiB rests on TLS, and after it on `attest verify`. Credentials come
 * from the SDK's default chain (environment, profiles, instance roles), never from Attest's config.
 */
export class S3BlobStore implements BlobStore {
  readonly kind = 's3';
  readonly location: string;
  private readonly client: S3Client;
  /** For the requests whose time grows with their size: multipart uploads and CopyObject (see createS3Client). */
  private readonly transfers: S3Client;
  private readonly timeoutMs: number;
  private readonly maxAttempts: number;
  private readonly copyBytesPerSecond: number;
  private readonly bucket: string;
  /** '' or the prefix with its slash. */
  private readonly root: string;
  private readonly fence: BlobFence;
  private readonly clock: () => Date;
  private readonly staleUploadMs: number;
  private readonly bufferBytes: number;
  private readonly listPageSize: number;
  private readonly streamedPuts = new Slots(STREAMED_PUTS);

  constructor(options: S3BlobStoreOptions) {
    this.bucket = options.bucket;
    this.root = options.prefix ? `${options.prefix}/` : '';
    this.location = `s3://${options.bucket}/${options.prefix}`;
    this.fence = options.fence ?? new BlobHolds();
    this.clock = options.clock ?? (() => new Date());
    this.staleUploadMs = options.staleUploadMs;
    this.bufferBytes = options.bufferBytes ?? BUFFER_BYTES;
    this.listPageSize = options.listPageSize ?? 1000;
    this.client = createS3Client(options);
    const slowest = options.slowestTransfer ?? SLOWEST_TRANSFER;
    // A part is BUFFER_BYTES at most.
    this.transfers = createS3Client(options, { requestMs: sizedTimeout(options.timeoutMs, BUFFER_BYTES, slowest.sendBytesPerSecond) });
    this.timeoutMs = options.timeoutMs;
    this.maxAttempts = options.maxAttempts;
    this.copyBytesPerSecond = slowest.copyBytesPerSecond;
  }

  /** The object key of a blob. Only well-formed digests map to a key, so no key escapes `blobs/`. */
  blobKey(sha256: string): string {
    if (!isBlobKey(sha256)) throw new Error(`not a blob key: ${JSON.stringify(sha256).slice(0, 80)}`);
    return `${this.root}blobs/${sha256.slice(0, 2)}/${sha256.slice(2, 4)}/${sha256}`;
  }

  /**
   * Hashes while reading. A blob that ends within `bufferBytes` is hashed in memory first, so bytes
   * already stored are not sent at all (HEAD, then PutObject only when absent). A larger one
   * streams with `Upload` (multipart, bounded memory) to a temp key while it is hashed, and is then
   * copied to its content key unless that exists already; the temp object goes either way.
   */
  async put(source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>): Promise<StoredBlob> {
    const hash = createHash('sha256');
    const chunks = (async function* () {
      yield* source;
    })();
    const buffered: Uint8Array[] = [];
    let size = 0;
    for (let next = await chunks.next(); !next.done; next = await chunks.next()) {
      hash.update(next.value);
      size += next.value.byteLength;
      buffered.push(next.value);
      if (size > this.bufferBytes) return this.putStreamed(buffered, chunks, hash, size);
    }
    return this.putBuffered(hash.digest('hex'), Buffer.concat(buffered, size));
  }

  private async putBuffered(sha256: string, body: Buffer): Promise<StoredBlob> {
    const release = await this.fence.hold(sha256);
    try {
      const key = this.blobKey(sha256);
      // Absent, or a damaged copy of another length: written (again).
      if ((await this.headKey(key))?.size === body.length) return { sha256, size: body.length, created: false, release };
      const md5 = createHash('md5').update(body).digest('base64');
      await this.call('PutObject', () =>
        this.client.send(
          new PutObjectCommand({
            Bucket: this.bucket,
            Key: key,
            Body: body,
            ContentLength: body.length,
            ContentMD5: md5,
            Metadata: { sha256 },
          }),
        ),
      );
      await this.confirm(key, body.length);
      return { sha256, size: body.length, created: true, release };
    } catch (error) {
      release();
      throw error;
    }
  }

  private async putStreamed(
    buffered: Uint8Array[],
    rest: AsyncGenerator<Uint8Array>,
    hash: ReturnType<typeof createHash>,
    bufferedSize: number,
  ): Promise<StoredBlob> {
    const slot = await this.streamedPuts.take();
    const temp = `${this.root}tmp/${randomUUID()}`;
    const read = { size: bufferedSize, failure: undefined as { error: unknown } | undefined };
    const body = streamedBody(buffered, rest, hash, read);
    let release: (() => void) | undefined;
    try {
      const upload = new Upload({
        client: this.transfers,
        params: { Bucket: this.bucket, Key: temp, Body: body },
        partSize: BUFFER_BYTES,
        queueSize: UPLOAD_QUEUE,
        // An upload that fails (its source, or the store) is aborted, so no parts are left billed.
        leavePartsOnError: false,
      });
      try {
        await upload.done();
      } catch (error) {
        if (read.failure) throw read.failure.error;
        throw s3Failure('multipart upload', error);
      } finally {
        slot();
      }
      const { size } = read;
      const sha256 = hash.digest('hex');
      const key = this.blobKey(sha256);
      release = await this.fence.hold(sha256);
      if ((await this.headKey(key))?.size === size) return { sha256, size, created: false, release };
      await this.copyIntoPlace(temp, key, sha256, size);
      await this.confirm(key, size);
      return { sha256, size, created: true, release };
    } catch (error) {
      release?.();
      throw error;
    } finally {
      slot();
      // Stops reading the source when the store failed first; nothing is left to read otherwise.
      body.destroy();
      // Best effort: a temp object the store would not delete now goes at a later start (recover).
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: temp })).catch(() => {});
    }
  }

  /**
   * Copies the uploaded temp object to its key. CopyObject copies up to 5 GiB in one request;
   * createBlobStore keeps the artifact limit below it. Each attempt has time for the size, and all
   * of them together (with the backoffs) a deadline.
   */
  private async copyIntoPlace(temp: string, key: string, sha256: string, size: number): Promise<void> {
    const copyMs = sizedTimeout(this.timeoutMs, size, this.copyBytesPerSecond);
    await this.call('CopyObject', () =>
      this.transfers.send(
        new CopyObjectCommand({
          Bucket: this.bucket,
          Key: key,
          // URL-encoded, as S3 reads it: the prefix may hold any character.
          CopySource: `${this.bucket}/${temp.split('/').map(encodeURIComponent).join('/')}`,
          MetadataDirective: 'REPLACE',
          Metadata: { sha256 },
        }),
        { requestTimeout: copyMs, abortSignal: AbortSignal.timeout(this.maxAttempts * (copyMs + MAX_BACKOFF_MS)) },
      ),
    );
  }

  /** After a write: the object is there, whole. */
  private async confirm(key: string, size: number): Promise<void> {
    const stored = await this.headKey(key);
    if (stored?.size !== size) {
      throw new BlobStorageError('io', `blob store: S3 object ${key} holds ${stored?.size ?? 'no'} bytes after writing ${size}`);
    }
  }

  async get(sha256: string, range?: ByteRange): Promise<Readable | undefined> {
    const key = this.blobKey(sha256);
    const answer = await this.orMissing('GetObject', () =>
      this.client.send(
        new GetObjectCommand({ Bucket: this.bucket, Key: key, Range: range ? `bytes=${range.start}-${range.end}` : undefined }),
      ),
    );
    if (!answer?.Body) return undefined;
    const body = answer.Body as Readable;
    // Without its length (a chunked answer) a read that ends short could not be told from a whole one.
    const received = answer.ContentLength;
    if (received === undefined) {
      body.destroy();
      throw new BlobStorageError('io', `blob store: S3 answered GetObject ${key} without Content-Length`);
    }
    if (!range) return Readable.from(exactly(body, 0, received), { objectMode: false });
    // A store may answer with more than the range asked for (s3rver answers `bytes=0-0` with the
    // whole object, as its own Content-Range says): the part asked for is cut out of what came.
    const from = Number(/^bytes (\d+)-/.exec(answer.ContentRange ?? '')?.[1] ?? 0);
    const length = range.end - range.start + 1;
    if (from > range.start || received < range.start - from + length) {
      body.destroy();
      throw new BlobStorageError(
        'io',
        `blob store: S3 answered bytes ${answer.ContentRange ?? 'unranged'} to a request for ${range.start}-${range.end}`,
      );
    }
    return Readable.from(exactly(body, range.start - from, length), { objectMode: false });
  }

  /**
   * A HEAD's 404 has no body, so a missing bucket looks like a missing object: the bucket is asked
   * then (HeadBucket), and a missing or unreachable one fails as storage instead of reading as a
   * missing blob. Uploads' own HEADs skip this; their write fails on a missing bucket.
   */
  async head(sha256: string): Promise<BlobEntry | undefined> {
    const stored = await this.headKey(this.blobKey(sha256));
    if (!stored) await this.ping();
    return stored && { sha256, ...stored };
  }

  private async headKey(key: string): Promise<{ size: number; modifiedAt: Date } | undefined> {
    const answer = await this.orMissing('HeadObject', () => this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key })));
    return answer && { size: answer.ContentLength ?? 0, modifiedAt: answer.LastModified ?? new Date(0) };
  }

  delete(sha256: string, stillGarbage: () => Promise<boolean> = async () => true): Promise<boolean> {
    const key = this.blobKey(sha256);
    return this.fence.delete(sha256, stillGarbage, async () => {
      if (!(await this.headKey(key))) return false;
      await this.call('DeleteObject', () => this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key })));
      return true;
    });
  }

  async *list(): AsyncIterable<BlobEntry> {
    const prefix = `${this.root}blobs/`;
    for await (const object of listObjects(this.client, this.bucket, prefix, this.listPageSize)) {
      const match = SHARDED_DIGEST.exec(object.key.slice(prefix.length));
      const sha256 = match?.[3];
      if (!sha256) continue;
      yield { sha256, size: object.size, modifiedAt: object.modifiedAt };
    }
  }

  /** A bucket has no folders to leave behind. */
  async removeEmptyFolders(): Promise<number> {
    return 0;
  }

  /**
   * Removes what uploads left unfinished: temp objects (a process that died between its upload and
   * the copy) and incomplete multipart uploads under `tmp/`, but only those older than the grace
   * period, since other instances on the same bucket may be uploading right now. A store that does
   * not list multipart uploads (answers NotImplemented) leaves them to the bucket's lifecycle rule
   * (AbortIncompleteMultipartUpload; docs/storage.md).
   */
  async recover(): Promise<{ removedTempFiles: number }> {
    const cutoff = this.clock().getTime() - this.staleUploadMs;
    const prefix = `${this.root}tmp/`;
    let removedTempFiles = 0;
    for await (const object of listObjects(this.client, this.bucket, prefix, this.listPageSize)) {
      if (object.modifiedAt.getTime() > cutoff) continue;
      await this.call('DeleteObject', () => this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: object.key })));
      removedTempFiles++;
    }
    for await (const { Key, UploadId, initiated } of listMultipartUploads(this.client, this.bucket, prefix)) {
      if (initiated.getTime() > cutoff) continue;
      await this.call('AbortMultipartUpload', () =>
        this.client.send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key, UploadId })),
      );
      removedTempFiles++;
    }
    return { removedTempFiles };
  }

  async ping(): Promise<void> {
    await this.call('HeadBucket', () => this.client.send(new HeadBucketCommand({ Bucket: this.bucket })));
  }

  /** Runs one S3 request, turning any failure into a BlobStorageError. */
  private async call<T>(operation: string, request: () => Promise<T>): Promise<T> {
    try {
      return await request();
    } catch (error) {
      throw s3Failure(operation, error);
    }
  }

  /** Like `call`, but a missing object answers undefined. */
  private async orMissing<T>(operation: string, request: () => Promise<T>): Promise<T | undefined> {
    try {
      return await request();
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw s3Failure(operation, error);
    }
  }
}

/**
 * The upload's body: the chunks buffered so far, one by one off the array (so the upload alone
 * keeps a buffered chunk once it has it), then the rest of the source, hashed and counted into
 * `read` as it passes; a source that fails is noted there, so its error is the one answered.
 */
function streamedBody(
  buffered: Uint8Array[],
  rest: AsyncGenerator<Uint8Array>,
  hash: ReturnType<typeof createHash>,
  read: { size: number; failure: { error: unknown } | undefined },
): Readable {
  return Readable.from(
    (async function* () {
      for (let chunk = buffered.shift(); chunk; chunk = buffered.shift()) yield chunk;
      try {
        for await (const chunk of rest) {
          hash.update(chunk);
          read.size += chunk.byteLength;
          yield chunk;
        }
      } catch (error) {
        read.failure = { error };
        throw error;
      }
    })(),
  );
}
