import type { Readable } from 'node:stream';

/** What the store knows of one blob. Blobs are content-addressed: the SHA-256 is the key. */
export interface BlobInfo {
  /** Lower-case hexadecimal SHA-256 of the bytes. */
  sha256: string;
  /** Length in bytes. */
  size: number;
}

/** A stored blob as listed for garbage collection and verification. */
export interface BlobEntry extends BlobInfo {
  /**
   * When the blob was last written or re-uploaded. Garbage collection only deletes unreferenced
   * blobs older than its grace period, so an upload whose row is not committed yet keeps its blob.
   */
  modifiedAt: Date;
}

/** An inclusive byte range, as in HTTP `Range: bytes=start-end`; always within the blob. */
export interface ByteRange {
  start: number;
  end: number;
}

/** Durability steps of `put` at which test builds can crash the process (RELIABILITY DUR-13b). */
export type BlobDurabilityStep = 'after-fsync-file' | 'after-rename' | 'after-dir-fsync';

/**
 * Why the store could not write: the storage is full (ENOSPC, a quota), or any other I/O failure.
 * The blob layer knows nothing of HTTP; services map `full` to 507 and `io` to 503.
 */
export class BlobStorageError extends Error {
  override name = 'BlobStorageError';
  constructor(
    readonly reason: 'full' | 'io',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * Where Attest keeps the bytes of artifacts and images: a local folder by default, an
 * S3-compatible bucket at scale. Every implementation keeps the same contract:
 * - Keys are SHA-256 digests computed by the store from the bytes, never names from user input.
 * - `put` resolves only once the blob is durable (RELIABILITY DUR-6); the caller commits the
 *   database row that references it afterwards, so a row never points at a missing blob (DUR-8).
 * - A failed `put` leaves nothing behind that `recover` or garbage collection would not remove, and
 *   is never retried into a false success (DUR-7).
 * - Blobs are immutable; deleting is garbage collection's job, after the referencing rows are gone.
 */
export interface BlobStore {
  /** Where the blobs live, for logs: a `file://` folder or an `s3://bucket/prefix`. */
  readonly location: string;

  /**
   * Streams `source` into the store, hashing and counting on the way, and resolves once the blob
   * is durable. Identical bytes are stored once (`created: false` when they were already there).
   * Rejects with the source's own error if the source fails (a limit, a rejected type), or with a
   * BlobStorageError if the storage does; either way no partial blob remains.
   */
  put(source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>): Promise<BlobInfo & { created: boolean }>;

  /** The blob's bytes (or only `range` of them) as a stream; undefined when there is no such blob. */
  get(sha256: string, range?: ByteRange): Promise<Readable | undefined>;

  /** Size and modification time of a blob; undefined when there is no such blob. */
  head(sha256: string): Promise<BlobEntry | undefined>;

  /** Removes a blob; false when it was not there. Only garbage collection calls this. */
  delete(sha256: string): Promise<boolean>;

  /** Every stored blob, in no particular order, for garbage collection and verification. */
  list(): AsyncIterable<BlobEntry>;

  /**
   * Start-up recovery (DUR-9): removes the uploads a previous process left unfinished. Call it
   * before serving, and only from the one process that owns the store.
   */
  recover(): Promise<{ removedTempFiles: number }>;
}

const SHA256_HEX = /^[0-9a-f]{64}$/;

/** True for a well-formed blob key; stores refuse anything else, so no key can escape their folder. */
export function isBlobKey(value: string): boolean {
  return SHA256_HEX.test(value);
}
