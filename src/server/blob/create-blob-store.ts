import type { Config } from '../config.ts';
import type { CrashPoint } from '../crash-points.ts';
import { StartupError } from '../errors.ts';
import type { BlobFence, BlobStore } from './blob-store.ts';
import { FsBlobStore } from './fs-blob-store.ts';

/** The largest object S3's CopyObject copies in one request (5 GiB); a large upload is copied into place once (s3-blob-store.ts). */
const S3_COPY_MAX_BYTES = 5 * 1024 * 1024 * 1024;

export interface BlobStoreParts {
  /** Marks a durability step of the data folder's store (DUR-13b). */
  crashPoint: (point: CrashPoint) => void;
  /** The fence across instances that share a bucket and a database (SCALE-2); a bucket store fences its own process otherwise. */
  fence?: BlobFence;
  clock?: () => Date;
}

/** Bucket and key prefix of `ATTEST_BLOB_URL=s3://bucket/prefix`; the prefix is '' for the bucket's root. */
export function parseBlobUrl(blobUrl: string): { bucket: string; prefix: string } {
  const url = new URL(blobUrl);
  return { bucket: url.hostname, prefix: decodeURIComponent(url.pathname).replace(/^\/+|\/+$/g, '') };
}

/**
 * The configured blob store: files in the data folder, or (`ATTEST_BLOB_URL`) an S3-compatible
 * bucket. The S3 store and the AWS SDK are loaded only then, so an instance on its data folder
 * starts without them.
 */
export async function createBlobStore(config: Config, parts: BlobStoreParts): Promise<BlobStore> {
  if (!config.blobUrl) return new FsBlobStore(config.dataDir, { onDurabilityStep: parts.crashPoint });
  if (config.maxArtifactBytes > S3_COPY_MAX_BYTES) {
    throw new StartupError(
      'ATTEST_MAX_ARTIFACT_BYTES is over 5 GiB, the largest object the S3 store copies into place (CopyObject); lower it with ATTEST_BLOB_URL set.',
    );
  }
  const { S3BlobStore } = await import('./s3-blob-store.ts');
  return new S3BlobStore({
    ...parseBlobUrl(config.blobUrl),
    endpoint: config.s3Endpoint,
    region: config.s3Region,
    forcePathStyle: config.s3ForcePathStyle,
    timeoutMs: config.s3TimeoutMs,
    maxAttempts: config.s3MaxAttempts,
    staleUploadMs: config.gcGraceMinutes * 60_000,
    fence: parts.fence,
    clock: parts.clock,
  });
}
