import type { ExpressionBuilder } from 'kysely';
import { isForeignKeyViolation } from '../errors.ts';
import type { Database, Executor } from '../types.ts';

// Queries of storage maintenance: which blobs rows reference, and image rows no artifact uses.

/**
 * The uploads of imports still to be written: kept until their job is (IMP-4), then left to garbage
 * collection like any unreferenced blob.
 */
const unfinishedImportSources = (executor: Executor) =>
  executor.selectFrom('imports').select('source_sha256').where('status', 'in', ['queued', 'processing']).distinct().execute();

/** The SHA-256 of every blob some row references: artifact contents, images and their thumbnails, the uploads of unfinished imports. */
export async function referencedBlobs(executor: Executor): Promise<Set<string>> {
  const [artifacts, images, imports] = await Promise.all([
    executor.selectFrom('artifacts').select('sha256').distinct().execute(),
    executor.selectFrom('images').select(['sha256', 'thumbnail_sha256']).execute(),
    unfinishedImportSources(executor),
  ]);
  const keys = new Set<string>();
  for (const a of artifacts) keys.add(a.sha256);
  for (const i of imports) keys.add(i.source_sha256);
  for (const i of images) {
    keys.add(i.sha256);
    if (i.thumbnail_sha256) keys.add(i.thumbnail_sha256);
  }
  return keys;
}

/** Whether any row references this blob, asked afresh. */
export async function isBlobReferenced(executor: Executor, sha256: string): Promise<boolean> {
  const artifact = await executor.selectFrom('artifacts').select('id').where('sha256', '=', sha256).limit(1).executeTakeFirst();
  if (artifact) return true;
  const source = await executor
    .selectFrom('imports')
    .select('id')
    .where('source_sha256', '=', sha256)
    .where('status', 'in', ['queued', 'processing'])
    .limit(1)
    .executeTakeFirst();
  if (source) return true;
  const image = await executor
    .selectFrom('images')
    .select('id')
    .where((eb) => eb.or([eb('sha256', '=', sha256), eb('thumbnail_sha256', '=', sha256)]))
    .limit(1)
    .executeTakeFirst();
  return image !== undefined;
}

/** An image row created before `cutoff` that no artifact uses (its artifacts or their projects were deleted). */
const unusedBefore = (cutoff: string) => (eb: ExpressionBuilder<Database, 'images'>) =>
  eb.and([
    eb('created_at', '<', cutoff),
    eb.not(eb.exists(eb.selectFrom('artifact_images').select('image_id').whereRef('artifact_images.image_id', '=', 'images.id'))),
  ]);

export async function unusedImageIds(executor: Executor, cutoff: string): Promise<string[]> {
  return (await executor.selectFrom('images').select('id').where(unusedBefore(cutoff)).execute()).map((row) => row.id);
}

/**
 * Deletes the image row if it is still unused, asked again in the delete itself: an upload may be
 * linking it right now. On PostgreSQL the upload's key-share lock makes the delete wait, and the
 * link then refuses it (a foreign-key violation, answered here as "not deleted").
 */
export async function deleteImageIfUnused(executor: Executor, imageId: string, cutoff: string): Promise<boolean> {
  try {
    const deleted = await executor.deleteFrom('images').where('id', '=', imageId).where(unusedBefore(cutoff)).executeTakeFirst();
    return Number(deleted.numDeletedRows) > 0;
  } catch (error) {
    if (isForeignKeyViolation(error)) return false;
    throw error;
  }
}

/** Every blob the rows expect, with the size they record (-1 where the row records none of its own). */
export async function expectedBlobs(executor: Executor): Promise<{ artifacts: number; blobs: Map<string, number> }> {
  const blobs = new Map<string, number>();
  const artifacts = await executor.selectFrom('artifacts').select(['sha256', 'size', 'kind']).execute();
  for (const a of artifacts) {
    // A visual diff's size is the sum of its images; its sha256 names the diff image, checked with the images.
    if (a.kind !== 'visual-diff') blobs.set(a.sha256, Number(a.size));
    else if (!blobs.has(a.sha256)) blobs.set(a.sha256, -1);
  }
  for (const i of await executor.selectFrom('images').select(['sha256', 'size', 'thumbnail_sha256']).execute()) {
    blobs.set(i.sha256, Number(i.size));
    if (i.thumbnail_sha256 && !blobs.has(i.thumbnail_sha256)) blobs.set(i.thumbnail_sha256, -1);
  }
  return { artifacts: artifacts.length, blobs };
}
