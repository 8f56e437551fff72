import type { Config } from '../config.ts';
import type { CrashPoint } from '../crash-points.ts';
import { StartupError } from '../errors.ts';
import type { BlobStore } from './blob-store.ts';
import { FsBlobStore } from './fs-blob-store.ts';

/** The configured blob store: files in the data folder, or (`ATTEST_BLOB_URL`) an S3-compatible bucket. */
export function createBlobStore(config: Config, crashPoint: (point: CrashPoint) => void): BlobStore {
  if (config.blobUrl) {
    throw new StartupError(
      'ATTEST_BLOB_URL (S3-compatible storage) is not supported by this release yet; unset it to keep blobs in the data folder.',
    );
  }
  return new FsBlobStore(config.dataDir, { onDurabilityStep: crashPoint });
}
