import { buffer } from 'node:stream/consumers';
import type { BlobDownload, BlobInfo } from '../blob/blob-store.ts';
import type { AppContext, ImageUses } from '../context.ts';
import { findVisibleImage, setImageThumbnail } from '../db/repositories/artifacts.ts';
import type { ImagesTable, VisibleProjects } from '../db/types.ts';
import { AppError, found } from '../errors.ts';
import { THUMBNAIL_TYPE } from '../media/thumbnails.ts';

/** The stored thumbnail of an image, made (once, however many ask at the same moment) and stored as its own blob when there is none yet. */
async function thumbnailOf(ctx: AppContext, image: ImagesTable): Promise<BlobInfo> {
  if (image.thumbnail_sha256) {
    const stored = await ctx.blobs.head(image.thumbnail_sha256);
    if (stored) return stored;
  }
  return ctx.thumbnails.once(image.id, async () => {
    const bytes = await ctx.thumbnails.render(async () => {
      const source = await ctx.blobs.get(image.sha256);
      if (!source) throw new Error(`the blob of image ${image.id} is missing`);
      return buffer(source);
    });
    const blob = await ctx.blobs.put([bytes]);
    try {
      // Blob first, then the row that references it; held until then.
      await setImageThumbnail(ctx.db, image.id, blob.sha256);
    } finally {
      blob.release();
      // The kept row (PERF-6) does not name the thumbnail yet.
      ctx.imageUses.forget(image.id);
    }
    return { sha256: blob.sha256, size: blob.size };
  });
}

/** Room for the image uses kept (PERF-6): about 4,000 images seen by a few projects each. */
export const IMAGE_USES_BYTES = 2 * 1024 * 1024;

/** About what an entry holds: the image row, and an id per project. */
export const imageUsesBytes = (uses: ImageUses) => 600 + 80 * uses.projects.size;

/** A project among `uses` that the caller can see; undefined when none is. */
function visibleUse(uses: ReadonlySet<string>, visible: VisibleProjects): string | undefined {
  for (const project of uses) if (visible === 'all' || visible.has(project)) return project;
  return undefined;
}

/** An image and a project the caller can see that uses it: what the access check of `GET /images/{imageId}` learns. */
export interface VisibleImage {
  image: ImagesTable;
  projectId: string;
}

/**
 * The access check of `GET /images/{imageId}` (PERF-6): the image with a project the caller can see
 * that uses it. An image is shared by content, so the projects using it only grow with uploads and
 * shrink with deletions. What the database answered is kept as a fact ("project P uses this
 * image"): a caller who sees one of the known projects is answered from memory, synchronously
 * (`keptVisibleImage`; undefined there means "ask", not 404). Anyone else asks the database
 * (`learnVisibleImage`; undefined there is the 404), and what it finds is added, so an upload into
 * a new project is seen by the very next request without forgetting anything. A "no" is never
 * kept. Every deletion of runs, artifacts or projects forgets every kept use, and a read that
 * overlapped one is not kept.
 */
export function keptVisibleImage(ctx: AppContext, imageId: string, visible: VisibleProjects): VisibleImage | undefined {
  const known = ctx.imageUses.get(imageId);
  if (!known) return undefined;
  const projectId = visibleUse(known.projects, visible);
  return projectId === undefined ? undefined : { image: known.image, projectId };
}

/** Asks the database, when `keptVisibleImage` did not know, and keeps what it finds. */
export async function learnVisibleImage(ctx: AppContext, imageId: string, visible: VisibleProjects): Promise<VisibleImage | undefined> {
  const ticket = ctx.imageUses.ticket();
  const found = await findVisibleImage(ctx.db, imageId, visible);
  if (!found) return undefined;
  const { project_id, ...image } = found;
  const known = ctx.imageUses.get(imageId);
  ctx.imageUses.store(imageId, { image, projects: new Set([...(known?.projects ?? []), project_id]) }, ticket);
  return { image, projectId: project_id };
}

/**
 * What `GET /images/{imageId}?thumbnail=true` sends for the image row the access check read (none:
 * 404); without `thumbnail` it sends `originalDownload`. A thumbnail that cannot be made degrades
 * to the original, marked and not cached, rather than failing the request; a full thumbnail queue
 * is the one 503.
 */
export async function thumbnailDownload(ctx: AppContext, row: ImagesTable | undefined): Promise<BlobDownload> {
  const image = found(row, 'The image');
  try {
    const thumbnail = await thumbnailOf(ctx, image);
    return {
      sha256: thumbnail.sha256,
      size: thumbnail.size,
      contentType: THUMBNAIL_TYPE,
      fileName: `${image.id}-thumbnail`,
      caching: 'immutable',
    };
  } catch (error) {
    if (error instanceof AppError && error.code === 'UNAVAILABLE') throw error;
    ctx.log.warn({ err: error, imageId: image.id }, 'thumbnail could not be made; sending the original');
    return { ...originalDownload(image), caching: 'no-store', headers: { 'x-attest-thumbnail': 'unavailable' } };
  }
}

/** The image itself, as stored. Named after the image, so a saved copy (`curl -OJ`) is `<imageId>.png` rather than the last path segment. */
export const originalDownload = (image: ImagesTable): BlobDownload => ({
  sha256: image.sha256,
  size: Number(image.size),
  contentType: image.content_type,
  fileName: image.id,
  caching: 'immutable',
});
