import { chunk, IN_LIST_SIZE } from '../chunks.ts';
import { compiledOnce } from '../compiled-once.ts';
import { dialectOf } from '../dialect.ts';
import { keysetPage, type Page, type PageRequest } from '../pagination.ts';
import type { ArtifactImageRow, ArtifactImagesTable, ArtifactsTable, Executor, ImagesTable, VisibleProjects } from '../types.ts';

// Queries of artifacts and images. Every function takes the database or an open transaction.

export async function findArtifactByIdempotencyKey(executor: Executor, runId: string, key: string): Promise<ArtifactsTable | undefined> {
  return executor.selectFrom('artifacts').selectAll().where('run_id', '=', runId).where('idempotency_key', '=', key).executeTakeFirst();
}

export async function findArtifact(executor: Executor, id: string): Promise<ArtifactsTable | undefined> {
  return executor.selectFrom('artifacts').selectAll().where('id', '=', id).executeTakeFirst();
}

/** Inserts an image row unless one with the same bytes exists; either way answers the stored row. */
export async function storeImage(executor: Executor, image: ImagesTable): Promise<ImagesTable> {
  if (dialectOf(executor) === 'sqlite') {
    // SQLite runs one write transaction at a time (and this process is the only writer, DUR-3):
    // nothing inserts or deletes the row between the read and the insert. One statement either way.
    const stored = await executor.selectFrom('images').selectAll().where('sha256', '=', image.sha256).executeTakeFirst();
    return stored ?? executor.insertInto('images').values(image).returningAll().executeTakeFirstOrThrow();
  }
  // PostgreSQL: garbage collection may be deleting an unused image row with these bytes right now.
  // The key-share lock waits for that delete and finds no row if it committed (then insert again),
  // and keeps a later delete off the row until this transaction has linked it.
  for (let attempt = 0; attempt < 3; attempt++) {
    await executor
      .insertInto('images')
      .values(image)
      .onConflict((oc) => oc.column('sha256').doNothing())
      .execute();
    const stored = await executor.selectFrom('images').selectAll().where('sha256', '=', image.sha256).forKeyShare().executeTakeFirst();
    if (stored) return stored;
  }
  throw new Error(`the image row for ${image.sha256} keeps disappearing`);
}

export async function insertArtifact(executor: Executor, artifact: ArtifactsTable, images: ArtifactImagesTable[]): Promise<void> {
  await executor.insertInto('artifacts').values(artifact).execute();
  if (images.length > 0) await executor.insertInto('artifact_images').values(images).execute();
}

/** The images of these artifacts, each artifact's in their order. */
export async function imagesOfArtifacts(executor: Executor, artifactIds: string[]): Promise<Map<string, ArtifactImageRow[]>> {
  const byArtifact = new Map<string, ArtifactImageRow[]>();
  for (const ids of chunk(artifactIds, IN_LIST_SIZE)) {
    const rows = await executor
      .selectFrom('artifact_images as ai')
      .innerJoin('images as i', 'i.id', 'ai.image_id')
      .selectAll('i')
      .select(['ai.artifact_id', 'ai.role', 'ai.position'])
      .where('ai.artifact_id', 'in', ids)
      .orderBy('ai.artifact_id')
      .orderBy('ai.position')
      .execute();
    for (const row of rows) {
      const list = byArtifact.get(row.artifact_id) ?? [];
      list.push(row);
      byArtifact.set(row.artifact_id, list);
    }
  }
  return byArtifact;
}

/** The artifacts among `ids` in projects the caller can see; the rest are indistinguishable from unknown ids. */
export async function findVisibleArtifacts(executor: Executor, ids: string[], projects: VisibleProjects): Promise<ArtifactsTable[]> {
  if (ids.length === 0 || (projects !== 'all' && projects.size === 0)) return [];
  const found: ArtifactsTable[] = [];
  for (const part of chunk(ids, IN_LIST_SIZE)) {
    let query = executor.selectFrom('artifacts').selectAll().where('id', 'in', part);
    // The visibility filter is part of the query, so an invisible artifact is never even loaded.
    if (projects !== 'all') query = query.where('project_id', 'in', [...projects]);
    found.push(...(await query.execute()));
  }
  return found;
}

export async function deleteArtifactRow(executor: Executor, id: string): Promise<boolean> {
  const result = await executor.deleteFrom('artifacts').where('id', '=', id).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/**
 * An image with a project the caller can see that holds an artifact using it, in one query: the
 * access check and the download read the same row. Images are shared by content, so one image can
 * be in several projects; any visible one makes it visible. Undefined when the image does not exist
 * or no visible project uses it.
 */
export async function findVisibleImage(
  executor: Executor,
  imageId: string,
  projects: VisibleProjects,
): Promise<(ImagesTable & { project_id: string }) | undefined> {
  if (projects === 'all') return findUsedImage(executor, imageId);
  if (projects.size === 0) return undefined;
  return visibleImageQuery(executor, imageId)
    .where('a.project_id', 'in', [...projects])
    .limit(1)
    .executeTakeFirst();
}

const visibleImageQuery = (executor: Executor, imageId: string) =>
  executor
    .selectFrom('images as i')
    .innerJoin('artifact_images as ai', 'ai.image_id', 'i.id')
    .innerJoin('artifacts as a', 'a.id', 'ai.artifact_id')
    .selectAll('i')
    .select('a.project_id')
    .where('i.id', '=', imageId);

/** For callers who see every project (admins): compiled once, as every image request runs it. */
const findUsedImage = compiledOnce((executor, imageId: string) => visibleImageQuery(executor, imageId).limit(1));

export async function setImageThumbnail(executor: Executor, imageId: string, thumbnailSha256: string): Promise<void> {
  await executor.updateTable('images').set({ thumbnail_sha256: thumbnailSha256 }).where('id', '=', imageId).execute();
}

/**
 * A run's artifacts in upload order: the first `max` of them, or with a page request one page of
 * the list convention.
 */
export async function listArtifactsOfRun(
  executor: Executor,
  runId: string,
  page: PageRequest | { max: number },
): Promise<Page<ArtifactsTable>> {
  const query = executor.selectFrom('artifacts').selectAll().where('run_id', '=', runId);
  if ('max' in page) return { items: await query.orderBy('created_at').orderBy('id').limit(page.max).execute(), nextCursor: null };
  return keysetPage(query, { columns: ['created_at', 'id'], direction: 'asc' }, page);
}
