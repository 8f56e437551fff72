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

/**
 * A blob just stored. It stays held, so garbage collection leaves it alone although no row
 * references it yet, until `release` is called: after the row that references it has committed,
 * or when the upload failed. Releasing twice is harmless.
 */
export interface StoredBlob extends BlobInfo {
  /** False when identical bytes were already stored. */
  created: boolean;
  release(): void;
}

/** An inclusive byte range, as in HTTP `Range: bytes=start-end`; always within the blob. */
export interface ByteRange {
  start: number;
  end: number;
}

/** Durability steps of `put` at which test builds can crash the process (DUR-13b). */
export type BlobDurabilityStep = 'after-fsync-file' | 'after-rename' | 'after-dir-fsync';

/**
 * Why the store could not write or read: the storage is full (ENOSPC, a quota), or any other I/O
 * failure (a disk error; an object store that is down, slow past its timeout, or still failing
 * after its retries). A missing blob is not an error (undefined). The blob layer knows nothing of
 * HTTP; the upload service and the error handler map `full` to 507 and `io` to 503.
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
 * - `put` resolves only once the blob is durable (DUR-6); the caller commits the
 *   database row that references it afterwards, so a row never points at a missing blob (DUR-8).
 * - A failed `put` leaves nothing behind that `recover` or garbage collection would not remove, and
 *   is never retried into a false success (DUR-7).
 * - Blobs are immutable; deleting is garbage collection's job, after the referencing rows are gone.
 */
export interface BlobStore {
  /** Where the blobs live, for logs: a `file://` folder or an `s3://bucket/prefix`. */
  readonly location: string;
  /** Which kind of store: a folder on this machine's disk, or a bucket any instance may share. */
  readonly kind: 'files' | 's3';

  /**
   * Streams `source` into the store, hashing and counting on the way, and resolves once the blob
   * is durable. Identical bytes are stored once (`created: false` when they were already there).
   * The blob is held until the caller releases it (see StoredBlob). Rejects with the source's own
   * error if the source fails (a limit, a rejected type), or with a BlobStorageError if the storage
   * does; either way no partial blob remains and nothing stays held.
   */
  put(source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>): Promise<StoredBlob>;

  /** The blob's bytes (or only `range` of them) as a stream; undefined when there is no such blob. */
  get(sha256: string, range?: ByteRange): Promise<Readable | undefined>;

  /** Size and modification time of a blob; undefined when there is no such blob. */
  head(sha256: string): Promise<BlobEntry | undefined>;

  /**
   * Garbage collection's delete: removes the blob unless it is held, and only when
   * `stillGarbage` (asked after uploads of these bytes are fenced off) confirms that no row
   * references it. False when the blob stays or was not there.
   */
  delete(sha256: string, stillGarbage?: () => Promise<boolean>): Promise<boolean>;

  /** Every stored blob, in no particular order, for garbage collection and verification. */
  list(): AsyncIterable<BlobEntry>;

  /**
   * Garbage collection's last step (RET-3): removes the empty folders the store's layout leaves
   * (shard folders that older versions, or a crash between a blob's deletion and its folder's,
   * left behind) and answers how many folders the store removed since the previous call, counting
   * those its deletions emptied. Never removes a blob, and safe beside concurrent puts: a put
   * whose folder is being made or used is left alone, and a put finds its folder again if it went.
   * A store without folders answers 0.
   */
  removeEmptyFolders(): Promise<number>;

  /**
   * Start-up recovery (DUR-9): removes the uploads a previous process left unfinished. Call it
   * before serving. A store in a data folder has one owning process and removes every temp file; a
   * bucket that several instances share removes only the temp objects (and incomplete multipart
   * uploads) older than the garbage-collection grace period, since others may be uploading now.
   */
  recover(): Promise<{ removedTempFiles: number }>;

  /**
   * Resolves when the store answers (the blobs folder is accessible; the bucket exists and the
   * credentials reach it), rejects with a BlobStorageError when not: readiness (SCALE-7).
   */
  ping(): Promise<void>;
}

const SHA256_HEX = /^[0-9a-f]{64}$/;

/** True for a well-formed blob key; stores refuse anything else, so no key can escape their folder. */
export function isBlobKey(value: string): boolean {
  return SHA256_HEX.test(value);
}

/**
 * The fence between uploads and garbage collection (DUR-10). Without it, an upload of bytes that
 * are already stored as an old orphan can find the blob, and garbage collection can delete it
 * before the upload's row commits: the row would point at nothing (DUR-8). So:
 * - an upload holds its digest from before it looks for an existing blob until its row commits;
 * - a deletion first marks the digest (new uploads of it wait), then skips it when held, then asks
 *   the database once more; a row committed before the mark is seen, a later one waits.
 * Both sides write their own mark before they read the other's, so whichever comes second sees
 * the first. `BlobHolds` fences one process; several instances on one bucket share a fence in
 * their database (db/repositories/blob-fence.ts, SCALE-2).
 */
export interface BlobFence {
  /** Holds `sha256` once no deletion of it is under way; answers the release, which may be called more than once. */
  hold(sha256: string): Promise<() => void>;
  /** Runs `remove` for an unheld digest with uploads of it fenced off; false when held, not confirmed, or being deleted elsewhere. */
  delete(sha256: string, stillGarbage: () => Promise<boolean>, remove: () => Promise<boolean>): Promise<boolean>;
}

/** The fence inside one process: the one that owns the data folder (DUR-3), or the only instance on a SQLite database. */
export class BlobHolds implements BlobFence {
  private readonly holds = new Map<string, number>();
  private readonly deleting = new Map<string, Promise<unknown>>();

  async hold(sha256: string): Promise<() => void> {
    for (let pending = this.deleting.get(sha256); pending; pending = this.deleting.get(sha256)) {
      await pending.catch(() => {});
    }
    this.holds.set(sha256, (this.holds.get(sha256) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.holds.get(sha256) ?? 1) - 1;
      if (left > 0) this.holds.set(sha256, left);
      else this.holds.delete(sha256);
    };
  }

  async delete(sha256: string, stillGarbage: () => Promise<boolean>, remove: () => Promise<boolean>): Promise<boolean> {
    if (this.holds.has(sha256) || this.deleting.has(sha256)) return false;
    const deletion = (async () => (await stillGarbage()) && (await remove()))();
    this.deleting.set(sha256, deletion);
    try {
      return await deletion;
    } finally {
      this.deleting.delete(sha256);
    }
  }
}

/** A stored blob as a download. */
export interface BlobDownload {
  sha256: string;
  size: number;
  /** The type detected at upload; never the uploader's declaration. */
  contentType: string;
  /** Download name (already sanitised at upload); raster images are shown inline, the rest saved. */
  fileName?: string;
  /** `immutable` for content-addressed bytes; `no-store` for an answer that may change (a degraded thumbnail). */
  caching: 'immutable' | 'no-store';
  /** Extra headers (e.g. why a thumbnail request got the original). */
  headers?: Record<string, string>;
}
