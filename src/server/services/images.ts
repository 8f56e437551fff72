import { buffer } from 'node:stream/consumers';
import sharp from 'sharp';
import type { BlobInfo } from '../blob/blob-store.ts';
import type { AppContext } from '../context.ts';
import { findImage, setImageThumbnail } from '../db/repositories/artifacts.ts';
import type { ImagesTable } from '../db/types.ts';
import { AppError, notFound } from '../errors.ts';
import type { BlobDownload } from '../presenters/blob-download.ts';

// Decoding is where image bombs hurt (RELIABILITY FILE-3): no cache of decoded images between
// requests, one libvips thread per image, a bounded number of decodes at once, and a pixel limit
// and timeout on each. Every image was already checked against the pixel limit at upload, from
// its header; the limit here also covers a header that lied.
sharp.cache(false);
sharp.concurrency(1);

const THUMBNAIL_SIDE = 320;
const THUMBNAIL_TYPE = 'image/webp';
const THUMBNAIL_TIMEOUT_SECONDS = 10;

/** Runs at most `slots` jobs at once with at most `maxWaiting` queued; beyond that, 503 with Retry-After. */
class WorkGate {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(
    private readonly slots: number,
    private readonly maxWaiting: number,
  ) {}

  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.running < this.slots) {
      this.running++;
    } else {
      if (this.waiting.length >= this.maxWaiting) {
        throw new AppError('UNAVAILABLE', 'Too many thumbnails are being made right now; retry shortly.', {
          headers: { 'retry-after': '1' },
        });
      }
      // The finishing job hands its slot over, so `running` stays as it is.
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
    try {
      return await work();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }
}

/**
 * Makes thumbnails: at most `ATTEST_THUMBNAIL_CONCURRENCY` decodes at once and
 * `ATTEST_THUMBNAIL_QUEUE` waiting, and one decode per image however many requests ask for it at
 * the same moment (they share it, so a burst of viewers of one screenshot costs one slot).
 */
export class Thumbnails {
  private readonly gate: WorkGate;
  private readonly inFlight = new Map<string, Promise<BlobInfo>>();

  constructor(config: { thumbnailConcurrency: number; thumbnailQueue: number }) {
    this.gate = new WorkGate(config.thumbnailConcurrency, config.thumbnailQueue);
  }

  /** The stored thumbnail of an image, made (once) and stored as its own blob when there is none yet. */
  async of(ctx: AppContext, image: ImagesTable): Promise<BlobInfo> {
    if (image.thumbnail_sha256) {
      const stored = await ctx.blobs.head(image.thumbnail_sha256);
      if (stored) return stored;
    }
    let pending = this.inFlight.get(image.id);
    if (!pending) {
      pending = this.make(ctx, image).finally(() => this.inFlight.delete(image.id));
      this.inFlight.set(image.id, pending);
    }
    return pending;
  }

  private async make(ctx: AppContext, image: ImagesTable): Promise<BlobInfo> {
    const bytes = await this.gate.run(() => renderThumbnail(ctx, image));
    const blob = await ctx.blobs.put([bytes]);
    try {
      // Blob first, then the row that references it; held until then.
      await setImageThumbnail(ctx.db, image.id, blob.sha256);
    } finally {
      blob.release();
    }
    return { sha256: blob.sha256, size: blob.size };
  }
}

/**
 * Decodes the original and encodes a WebP at most THUMBNAIL_SIDE pixels on its longest side. The
 * original (at most `ATTEST_MAX_IMAGE_BYTES`) is read whole first: libvips decodes a buffer with
 * about half the peak memory of the same bytes piped in as a stream.
 */
async function renderThumbnail(ctx: AppContext, image: ImagesTable): Promise<Buffer> {
  const source = await ctx.blobs.get(image.sha256);
  if (!source) throw new Error(`the blob of image ${image.id} is missing`);
  const original = await buffer(source);
  return sharp(original, { limitInputPixels: ctx.config.maxImagePixels, failOn: 'error', sequentialRead: true })
    .timeout({ seconds: THUMBNAIL_TIMEOUT_SECONDS })
    .rotate()
    .resize(THUMBNAIL_SIDE, THUMBNAIL_SIDE, { fit: 'inside', withoutEnlargement: true })
    .webp({ quality: 80 })
    .toBuffer();
}

/**
 * What `GET /images/{imageId}` sends: the image, or its thumbnail. A thumbnail that cannot be made
 * degrades to the original, marked and not cached, rather than failing the request; a full
 * thumbnail queue is the one 503.
 */
export async function imageDownload(ctx: AppContext, imageId: string, options: { thumbnail: boolean }): Promise<BlobDownload> {
  const image = await findImage(ctx.db, imageId);
  if (!image) throw notFound('The image');
  const original: BlobDownload = { sha256: image.sha256, size: Number(image.size), contentType: image.content_type, caching: 'immutable' };
  if (!options.thumbnail) return original;
  try {
    const thumbnail = await ctx.thumbnails.of(ctx, image);
    return { sha256: thumbnail.sha256, size: thumbnail.size, contentType: THUMBNAIL_TYPE, caching: 'immutable' };
  } catch (error) {
    if (error instanceof AppError && error.code === 'UNAVAILABLE') throw error;
    ctx.log.warn({ err: error, imageId }, 'thumbnail could not be made; sending the original');
    return { ...original, caching: 'no-store', headers: { 'x-attest-thumbnail': 'unavailable' } };
  }
}
