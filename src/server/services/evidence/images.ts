import { buffer } from 'node:stream/consumers';
import { type BlobDownload, type BlobInfo, BlobStorageError } from '../../blob/blob-store.ts';
import type { ServiceContext } from '../../context.ts';
import { setImageThumbnail } from '../../db/repositories/artifacts.ts';
import type { ImagesTable } from '../../db/types.ts';
import { AppError, found } from '../../errors.ts';
import { THUMBNAIL_TYPE } from '../../media/thumbnails.ts';

/** The stored thumbnail of an image, made (once, however many ask at the same moment) and stored as its own blob when there is none yet. */
async function thumbnailOf(ctx: ServiceContext, image: ImagesTable): Promise<BlobInfo> {
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
      // A kept image row (PERF-6) does not name the thumbnail yet.
      ctx.changes.emit({ kind: 'thumbnail-stored', imageId: image.id });
    }
    return { sha256: blob.sha256, size: blob.size };
  });
}

/**
 * What `GET /images/{imageId}?thumbnail=true` sends for the image row the access check read (none:
 * 404); without `thumbnail` it sends `originalDownload`. A thumbnail that cannot be made degrades
 * to the original, marked and not cached, rather than failing the request; a full thumbnail queue
 * is the one 503.
 */
export async function thumbnailDownload(ctx: ServiceContext, row: ImagesTable | undefined): Promise<BlobDownload> {
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
    // A full queue, or a store that is down (which the original would meet too): 503, not the original.
    if ((error instanceof AppError && error.code === 'UNAVAILABLE') || error instanceof BlobStorageError) throw error;
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
