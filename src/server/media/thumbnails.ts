import type { default as Sharp } from 'sharp';
import { AppError } from '../errors.ts';
import { pngDecodes, pngEndsEarly } from './png-check.ts';

// Decoding is where image bombs hurt (FILE-3): no cache of decoded images between requests, one
// libvips thread per image, a bounded number of decodes at once, and a pixel limit and timeout on
// each. Every image was already checked against the pixel limit at upload, from its header; the
// limit here also covers a header that lied.

let sharpLoaded: Promise<typeof Sharp> | undefined;

/** sharp and libvips, loaded on the first decode: about 30 MB and 0.2 s a server that serves no image never pays. */
function loadSharp(): Promise<typeof Sharp> {
  sharpLoaded ??= import('sharp').then(({ default: sharp }) => {
    sharp.cache(false);
    sharp.concurrency(1);
    return sharp;
  });
  return sharpLoaded;
}

const THUMBNAIL_SIDE = 320;
const THUMBNAIL_TIMEOUT_SECONDS = 10;
export const THUMBNAIL_TYPE = 'image/webp';

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
        throw new AppError('UNAVAILABLE', 'Too many images are being decoded right now; retry shortly.', {
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

/** The side an upload's check decodes to: small, so the decode streams through and holds little. */
const CHECK_SIDE = 64;
/**
 * Inflated PNG data the check without libvips holds at most: in a decode slot, a 1920×1080 RGBA
 * screenshot (larger ones stream through libvips instead); outside one, what inflates on the
 * event loop in well under a millisecond.
 */
const PNG_CHECK_MAX_BYTES = 8 * 1024 * 1024;
const PNG_CHECK_OUTSIDE_GATE_MAX_BYTES = 512 * 1024;
/** Digests of images that decoded, remembered so their bytes are not decoded again (about 1 MB). */
const DECODED_DIGESTS_KEPT = 10_000;

/**
 * Decodes images, for thumbnails and for the check of every uploaded image: at most `ATTEST_THUMBNAIL_CONCURRENCY` decodes at once and
 * `ATTEST_THUMBNAIL_QUEUE` waiting, and one piece of work per image however many requests ask
 * for it at the same moment (they share it, so a burst of viewers of one screenshot costs one slot).
 */
export class ThumbnailRenderer {
  private readonly gate: WorkGate;
  private readonly inFlight = new Map<string, Promise<unknown>>();
  /** SHA-256 digests of images that passed the decode check, oldest first out. */
  private readonly decoded = new Set<string>();

  constructor(private readonly config: { thumbnailConcurrency: number; thumbnailQueue: number; maxImagePixels: number }) {
    this.gate = new WorkGate(config.thumbnailConcurrency, config.thumbnailQueue);
  }

  /** Runs `work` for `key` unless it is already running; concurrent callers share its outcome. */
  once<T>(key: string, work: () => Promise<T>): Promise<T> {
    let pending = this.inFlight.get(key) as Promise<T> | undefined;
    if (!pending) {
      pending = work().finally(() => this.inFlight.delete(key));
      this.inFlight.set(key, pending);
    }
    return pending;
  }

  /**
   * Decodes an uploaded image (read by `load` once a decode slot is free) whole, in the same gate
   * and with the same pixel limit and timeout as a thumbnail, so an image is acknowledged only
   * once it is known to decode (FILE-3): a truncated or damaged one is a 422 `UNPROCESSABLE`.
   * Like a thumbnail, it decodes an animation's first frame. A PNG whose structure and image data
   * check out (png-check.ts) needs no libvips decode; a small one, already in memory (`kept`),
   * not even a slot, since its check costs less than waiting for one. Bytes whose digest passed
   * the check before are not decoded again: identical bytes decode identically (a suite's
   * screenshots of an unchanged screen are byte for byte the same).
   */
  async checkDecodes(load: () => Promise<Buffer>, kept?: Buffer, sha256?: string): Promise<void> {
    if (sha256 !== undefined && this.decoded.has(sha256)) return;
    await this.decodeCheck(load, kept);
    if (sha256 === undefined) return;
    if (this.decoded.size >= DECODED_DIGESTS_KEPT) this.decoded.delete(this.decoded.values().next().value as string);
    this.decoded.add(sha256);
  }

  private async decodeCheck(load: () => Promise<Buffer>, kept?: Buffer): Promise<void> {
    if (kept && (await pngDecodes(kept, PNG_CHECK_OUTSIDE_GATE_MAX_BYTES))) return;
    return this.gate.run(async () => {
      const bytes = await load();
      if (await pngDecodes(bytes, PNG_CHECK_MAX_BYTES)) return;
      // libpng decodes a PNG whose IEND is cut off; it is a truncated upload all the same.
      if (pngEndsEarly(bytes))
        throw new AppError('UNPROCESSABLE', 'The image does not decode: it is truncated or damaged. Nothing was stored.');
      const sharp = await loadSharp();
      try {
        await sharp(bytes, { limitInputPixels: this.config.maxImagePixels, failOn: 'error', sequentialRead: true })
          .timeout({ seconds: THUMBNAIL_TIMEOUT_SECONDS })
          .resize(CHECK_SIDE, CHECK_SIDE, { fit: 'inside', withoutEnlargement: true })
          .raw()
          .toBuffer();
      } catch {
        throw new AppError('UNPROCESSABLE', 'The image does not decode: it is truncated or damaged. Nothing was stored.');
      }
    });
  }

  /**
   * Decodes the original (read by `load` once a decode slot is free) and encodes a WebP at most
   * THUMBNAIL_SIDE pixels on its longest side. The original (at most `ATTEST_MAX_IMAGE_BYTES`) is
   * read whole: libvips decodes a buffer with about half the peak memory of the same bytes piped
   * in as a stream.
   */
  render(load: () => Promise<Buffer>): Promise<Buffer> {
    return this.gate.run(async () =>
      (await loadSharp())(await load(), { limitInputPixels: this.config.maxImagePixels, failOn: 'error', sequentialRead: true })
        .timeout({ seconds: THUMBNAIL_TIMEOUT_SECONDS })
        .rotate()
        .resize(THUMBNAIL_SIDE, THUMBNAIL_SIDE, { fit: 'inside', withoutEnlargement: true })
        .webp({ quality: 80 })
        .toBuffer(),
    );
  }
}
