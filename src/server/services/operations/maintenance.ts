import { createHash } from 'node:crypto';
import type { Lease } from '../../background.ts';
import type { BlobStore } from '../../blob/blob-store.ts';
import {
  deleteImageIfUnused,
  expectedBlobs,
  isBlobReferenced,
  referencedBlobs,
  unusedImageIds,
} from '../../db/repositories/maintenance.ts';
import { inSnapshot } from '../../db/repositories/transaction.ts';
import { type RunCountMismatch, recountRunArtifacts, recountUsage, type UsageMismatch } from '../../db/repositories/usage.ts';
import type { DB } from '../../db/types.ts';

export interface GcReport {
  /** Image rows no artifact uses any more (their artifacts or projects were deleted). */
  unusedImages: number;
  scanned: number;
  referenced: number;
  /** Unreferenced blobs younger than the grace period: possibly an upload whose row is not committed yet. */
  keptFresh: number;
  deleted: number;
  deletedBytes: number;
  /**
   * Empty blob folders removed (RET-3): those the deleted blobs emptied, and any others found
   * (left by older versions or by a crash between a blob's deletion and its folder's); 0 on a dry run.
   */
  removedFolders: number;
  dryRun: boolean;
  /** What the database handed back to the filesystem afterwards (RET-3); absent on a dry run or without a database handle. */
  reclaimed?: ReclaimReport;
}

/** What a database's reclaimSpace did (src/server/db/sqlite-space.ts); zeros on PostgreSQL. */
export interface ReclaimReport {
  freedPages: number;
  freedBytes: number;
  walTruncated: boolean;
}

/** The part of the database handle that gives space back (DatabaseHandle.reclaimSpace). */
export interface SpaceReclaimer {
  reclaimSpace(): Promise<ReclaimReport>;
}

/**
 * Call after deleting rows (RET-3): SQLite returns the pages they freed to the filesystem
 * (incremental vacuum, then a truncating WAL checkpoint); PostgreSQL's autovacuum needs nothing.
 * Garbage collection ends with it; other deletions may call it too, off the request's critical path.
 */
export function reclaimSpace(deps: { database: SpaceReclaimer }): Promise<ReclaimReport> {
  return deps.database.reclaimSpace();
}

/**
 * An old blob no row referenced at the scan: asked again once uploads of these bytes are fenced
 * off (a row may have committed since the scan, and an upload of the same bytes touches the blob
 * before committing its own), and deleted (counted, on a dry run) when it is still garbage.
 */
async function judgeUnreferenced(
  deps: { db: DB; blobs: BlobStore },
  blob: { sha256: string; size: number },
  cutoff: number,
  report: GcReport,
): Promise<void> {
  const judged: { verdict: 'referenced' | 'fresh' | 'garbage' } = { verdict: 'fresh' };
  const stillGarbage = async () => {
    const current = await deps.blobs.head(blob.sha256);
    if (await isBlobReferenced(deps.db, blob.sha256)) judged.verdict = 'referenced';
    else if (current && current.modifiedAt.getTime() <= cutoff) judged.verdict = 'garbage';
    return judged.verdict === 'garbage';
  };
  const deleted = report.dryRun ? await stillGarbage() : await deps.blobs.delete(blob.sha256, stillGarbage);
  if (deleted) {
    report.deleted++;
    report.deletedBytes += blob.size;
  } else if (judged.verdict === 'referenced') {
    report.referenced++;
  } else {
    // Fresh, held by an upload in progress, or gone meanwhile.
    report.keptFresh++;
  }
}

/**
 * Deletes blobs that no row references and that are older than `graceMs` (DUR-10).
 * Safe against concurrent uploads: an upload holds its blob from before it looks for stored bytes
 * until its row commits, and the store deletes only unheld blobs, asking once more (with uploads
 * of those bytes fenced off) whether a row references them and whether they are still old.
 * After the scan every empty blob folder goes (BlobStore.removeEmptyFolders), and given
 * `database`, the space deleted rows freed is handed back to the filesystem at the end (RET-3).
 * Run as a periodic task, it stops between two images or blobs once `lease` is no longer held (lost
 * to another instance, or this one stopping), and leaves the rest to the next run.
 */
export async function collectGarbage(
  deps: { db: DB; blobs: BlobStore; clock: () => Date; database?: SpaceReclaimer },
  options: { graceMs: number; dryRun?: boolean; onProgress?: (report: GcReport) => void; lease?: Lease },
): Promise<GcReport> {
  const report: GcReport = {
    unusedImages: 0,
    scanned: 0,
    referenced: 0,
    keptFresh: 0,
    deleted: 0,
    deletedBytes: 0,
    removedFolders: 0,
    dryRun: options.dryRun ?? false,
  };
  const cutoff = deps.clock().getTime() - options.graceMs;
  // Images are shared by content across artifacts; once no artifact uses one (deleted artifacts
  // or projects), its row goes, so its bytes and thumbnail become unreferenced below. An image is
  // created in the same transaction as the artifact that uses it, so the grace period only
  // guards against clock skew between instances.
  const cutoffIso = new Date(cutoff).toISOString();
  for (const id of await unusedImageIds(deps.db, cutoffIso)) {
    if (options.lease?.stillHeld() === false) return report;
    if (report.dryRun) report.unusedImages++;
    else if (await deleteImageIfUnused(deps.db, id, cutoffIso)) report.unusedImages++;
  }
  const referenced = await referencedBlobs(deps.db);
  for await (const blob of deps.blobs.list()) {
    if (options.lease?.stillHeld() === false) return report;
    report.scanned++;
    if (referenced.has(blob.sha256)) {
      report.referenced++;
    } else if (blob.modifiedAt.getTime() > cutoff) {
      report.keptFresh++;
    } else {
      await judgeUnreferenced(deps, blob, cutoff, report);
    }
    options.onProgress?.(report);
  }
  if (report.dryRun) return report;
  // The folders the deletions emptied are gone already; this also takes the empty ones left before.
  report.removedFolders = await deps.blobs.removeEmptyFolders();
  // The rows deleted since the last run (images here, runs and projects by their owners) left free pages.
  if (deps.database) report.reclaimed = await reclaimSpace({ database: deps.database });
  return report;
}

export interface VerifyReport {
  /** Database integrity problems (SQLite integrity_check and foreign_key_check); empty when sound. */
  integrity: string[];
  artifactsChecked: number;
  /** Referenced blobs that do not exist. */
  missingBlobs: string[];
  /** Referenced blobs whose size or SHA-256 differs from the row. */
  badBlobs: string[];
  /** Stored blobs no row references (allowed; garbage collection removes them after the grace period). */
  orphanBlobs: number;
  /** Projects whose usage counters (RET-4) differ from a recount of their rows; empty when true. */
  usageMismatches: UsageMismatch[];
  /** Runs whose artifact counter (migration 0007) differs from a recount of their artifacts; empty when true. */
  runCountMismatches: RunCountMismatch[];
}

async function sha256Of(blobs: BlobStore, key: string): Promise<string | undefined> {
  const stream = await blobs.get(key);
  if (!stream) return undefined;
  const hash = createHash('sha256');
  for await (const chunk of stream) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/**
 * Checks the storage invariants of docs/requirements.md: every referenced blob exists with the size
 * and SHA-256 its rows record (I1), the database is sound (I3); orphans are counted (I5); every
 * project's usage counters equal a recount of its rows (RET-4), and every run's artifact counter a
 * recount of its artifacts.
 */
export async function verifyStorage(
  deps: { db: DB; blobs: BlobStore; database: { integrityProblems(): Promise<string[]> } },
  options: { hashContents?: boolean; onProgress?: (done: number, total: number) => void } = {},
): Promise<VerifyReport> {
  const integrity = await deps.database.integrityProblems();
  // The counters and the rows they count are read on one snapshot: read one after the other under
  // live writes, a run written between two reads shows up as a counter that differs from its rows.
  const { usageMismatches, runCountMismatches, expected } = await inSnapshot(deps.db, async (trx) => ({
    usageMismatches: await recountUsage(trx),
    runCountMismatches: await recountRunArtifacts(trx),
    expected: await expectedBlobs(trx),
  }));
  const report: VerifyReport = {
    integrity,
    artifactsChecked: 0,
    missingBlobs: [],
    badBlobs: [],
    orphanBlobs: 0,
    usageMismatches,
    runCountMismatches,
  };
  const { artifacts, blobs: expectedKeys } = expected;
  report.artifactsChecked = artifacts;
  let done = 0;
  for (const [key, size] of expectedKeys) {
    const head = await deps.blobs.head(key);
    if (!head) report.missingBlobs.push(key);
    else if ((size >= 0 && head.size !== size) || (options.hashContents !== false && (await sha256Of(deps.blobs, key)) !== key)) {
      report.badBlobs.push(key);
    }
    options.onProgress?.(++done, expectedKeys.size);
  }
  for await (const blob of deps.blobs.list()) if (!expectedKeys.has(blob.sha256)) report.orphanBlobs++;
  return report;
}
