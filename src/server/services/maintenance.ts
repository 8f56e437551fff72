import type { ExpressionBuilder } from 'kysely';
import type { BlobStore } from '../blob/blob-store.ts';
import type { DatabaseHandle } from '../db/database.ts';
import { isForeignKeyViolation } from '../db/errors.ts';
import type { Database, DB } from '../db/types.ts';

/** The SHA-256 of every blob some row references: artifact contents, images and their thumbnails. */
export async function referencedBlobs(db: DB): Promise<Set<string>> {
  const [artifacts, images] = await Promise.all([
    db.selectFrom('artifacts').select('sha256').distinct().execute(),
    db.selectFrom('images').select(['sha256', 'thumbnail_sha256']).execute(),
  ]);
  const keys = new Set<string>();
  for (const a of artifacts) keys.add(a.sha256);
  for (const i of images) {
    keys.add(i.sha256);
    if (i.thumbnail_sha256) keys.add(i.thumbnail_sha256);
  }
  return keys;
}

async function isReferenced(db: DB, sha256: string): Promise<boolean> {
  const artifact = await db.selectFrom('artifacts').select('id').where('sha256', '=', sha256).limit(1).executeTakeFirst();
  if (artifact) return true;
  const image = await db
    .selectFrom('images')
    .select('id')
    .where((eb) => eb.or([eb('sha256', '=', sha256), eb('thumbnail_sha256', '=', sha256)]))
    .limit(1)
    .executeTakeFirst();
  return image !== undefined;
}

export interface GcReport {
  /** Image rows no artifact uses any more (their artifacts or projects were deleted). */
  unusedImages: number;
  scanned: number;
  referenced: number;
  /** Unreferenced blobs younger than the grace period: possibly an upload whose row is not committed yet. */
  keptFresh: number;
  deleted: number;
  deletedBytes: number;
  dryRun: boolean;
}

/**
 * Deletes blobs that no row references and that are older than `graceMs` (RELIABILITY DUR-10).
 * Safe against concurrent uploads: an upload holds its blob from before it looks for stored bytes
 * until its row commits, and the store deletes only unheld blobs, asking once more (with uploads
 * of those bytes fenced off) whether a row references them and whether they are still old.
 */
export async function collectGarbage(
  deps: { db: DB; blobs: BlobStore; clock: () => Date },
  options: { graceMs: number; dryRun?: boolean; onProgress?: (report: GcReport) => void },
): Promise<GcReport> {
  const report: GcReport = {
    unusedImages: 0,
    scanned: 0,
    referenced: 0,
    keptFresh: 0,
    deleted: 0,
    deletedBytes: 0,
    dryRun: options.dryRun ?? false,
  };
  const cutoff = deps.clock().getTime() - options.graceMs;
  // Images are shared by content across artifacts; once no artifact uses one (deleted artifacts
  // or projects), its row goes, so its bytes and thumbnail become unreferenced below. An image is
  // created in the same transaction as the artifact that uses it, so the grace period only
  // guards against clock skew between instances.
  const unused = (eb: ExpressionBuilder<Database, 'images'>) =>
    eb.and([
      eb('created_at', '<', new Date(cutoff).toISOString()),
      eb.not(eb.exists(eb.selectFrom('artifact_images').select('image_id').whereRef('artifact_images.image_id', '=', 'images.id'))),
    ]);
  const candidates = await deps.db.selectFrom('images').select('id').where(unused).execute();
  for (const { id } of candidates) {
    if (report.dryRun) {
      report.unusedImages++;
      continue;
    }
    try {
      // Asked again per row: an upload may be linking this image right now. On PostgreSQL the
      // upload's key-share lock makes the delete wait, and the link then refuses it.
      const deleted = await deps.db.deleteFrom('images').where('id', '=', id).where(unused).executeTakeFirst();
      report.unusedImages += Number(deleted.numDeletedRows);
    } catch (error) {
      if (!isForeignKeyViolation(error)) throw error;
    }
  }
  const referenced = await referencedBlobs(deps.db);
  for await (const blob of deps.blobs.list()) {
    report.scanned++;
    if (referenced.has(blob.sha256)) {
      report.referenced++;
    } else if (blob.modifiedAt.getTime() > cutoff) {
      report.keptFresh++;
    } else {
      // Asked again once uploads of these bytes are fenced off: a row may have committed since the
      // scan, and an upload of the same bytes touches the blob before committing its own.
      const judged: { verdict: 'referenced' | 'fresh' | 'garbage' } = { verdict: 'fresh' };
      const stillGarbage = async () => {
        const current = await deps.blobs.head(blob.sha256);
        if (await isReferenced(deps.db, blob.sha256)) judged.verdict = 'referenced';
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
    options.onProgress?.(report);
  }
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
}

async function sha256Of(blobs: BlobStore, key: string): Promise<string | undefined> {
  const { createHash } = await import('node:crypto');
  const stream = await blobs.get(key);
  if (!stream) return undefined;
  const hash = createHash('sha256');
  for await (const chunk of stream) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/**
 * Checks the durability invariants (RELIABILITY 4.3): every referenced blob exists with the size
 * and SHA-256 its rows record (I1), the database is sound (I3); orphans are counted (I5).
 */
export async function verifyStorage(
  deps: { db: DB; blobs: BlobStore; database: DatabaseHandle },
  options: { hashContents?: boolean; onProgress?: (done: number, total: number) => void } = {},
): Promise<VerifyReport> {
  const report: VerifyReport = {
    integrity: await deps.database.integrityProblems(),
    artifactsChecked: 0,
    missingBlobs: [],
    badBlobs: [],
    orphanBlobs: 0,
  };
  const expected = new Map<string, number>();
  for (const a of await deps.db.selectFrom('artifacts').select(['sha256', 'size', 'kind']).execute()) {
    report.artifactsChecked++;
    // A visual diff's size is the sum of its images; its sha256 names the diff image, checked below.
    if (a.kind !== 'visual-diff') expected.set(a.sha256, Number(a.size));
    else if (!expected.has(a.sha256)) expected.set(a.sha256, -1);
  }
  for (const i of await deps.db.selectFrom('images').select(['sha256', 'size', 'thumbnail_sha256']).execute()) {
    expected.set(i.sha256, Number(i.size));
    if (i.thumbnail_sha256 && !expected.has(i.thumbnail_sha256)) expected.set(i.thumbnail_sha256, -1);
  }
  let done = 0;
  for (const [key, size] of expected) {
    const head = await deps.blobs.head(key);
    if (!head) report.missingBlobs.push(key);
    else if ((size >= 0 && head.size !== size) || (options.hashContents !== false && (await sha256Of(deps.blobs, key)) !== key)) {
      report.badBlobs.push(key);
    }
    options.onProgress?.(++done, expected.size);
  }
  for await (const blob of deps.blobs.list()) if (!expected.has(blob.sha256)) report.orphanBlobs++;
  return report;
}
