import { fileTypeFromBuffer } from 'file-type';
import { imageSize } from 'image-size';
import { RASTER_TYPES } from '../../api/v1/artifacts.ts';
import { AppError } from '../errors.ts';
import { type FrameCounter, frameCounterFor } from './frame-counter.ts';

/** What a file part must satisfy. */
export interface InspectionPolicy {
  /** Screenshot and visual-diff parts: only raster images, with their dimensions checked. */
  image: boolean;
  maxBytes: number;
  maxSide: number;
  maxPixels: number;
  /** Frames × pixels for an animated GIF, WebP or PNG. */
  maxAnimationPixels: number;
}

/** What the bytes turned out to be. */
export interface Inspected {
  contentType: string;
  /** Images only. */
  width?: number;
  height?: number;
}

/** file-type's signatures need the first 4 100 bytes (its own documented minimum). */
const TYPE_PEEK_BYTES = 4100;
/**
 * A JPEG states its size in its SOF segment, after EXIF, ICC and XMP segments that can run to
 * hundreds of KiB; an image whose size is not known within this much is refused.
 */
const DIMENSION_PEEK_BYTES = 1024 * 1024;

/** Most frames an animated image may have, however small (a 10-minute recording at 15 frames a second). */
const MAX_FRAMES = 10_000;

/** file-type names a few raster types by a more specific variant of a type we accept. */
const SAME_AS: Record<string, string> = { 'image/apng': 'image/png' };

const isRaster = (type: string): boolean => (RASTER_TYPES as readonly string[]).includes(type);

/**
 * Checks a file while it streams past (FILE-1, FILE-2, FILE-8): counts bytes against the
 * limit, detects the type from the first bytes, and for images reads width and height from the
 * header. Nothing here decodes pixels. A violation throws from `pass`, which aborts the blob
 * write before the bytes become a blob; the bytes already written are in a temp file that goes.
 */
export class UploadInspection {
  private readonly head: Uint8Array[] = [];
  private headBytes = 0;
  private bytes = 0;
  private contentType: string | undefined;
  private dimensions: { width: number; height: number } | undefined;
  private frameCounter: FrameCounter | undefined;

  constructor(private readonly policy: InspectionPolicy) {}

  /** Passes `source` through unchanged, throwing as soon as the bytes so far break a rule. */
  async *pass(source: AsyncIterable<Uint8Array>): AsyncIterable<Uint8Array> {
    for await (const chunk of source) {
      this.bytes += chunk.byteLength;
      if (this.bytes > this.policy.maxBytes) {
        const what = this.policy.image ? 'An image file' : 'An artifact file';
        const advice = this.policy.image ? 'send a smaller or more compressed image' : 'split the file or compress it';
        throw new AppError('PAYLOAD_TOO_LARGE', `${what} may be at most ${this.policy.maxBytes} bytes; ${advice}.`);
      }
      // A counter that exists already reads every chunk; one created below reads the head first.
      this.frameCounter?.push(chunk);
      if (this.wantsMoreHead()) {
        this.head.push(chunk);
        this.headBytes += chunk.byteLength;
        await this.examine(false);
        // The decisions are made: stop holding the first bytes.
        if (!this.wantsMoreHead()) this.head.length = 0;
      }
      this.checkAnimation();
      yield chunk;
    }
    await this.examine(true);
    this.checkAnimation();
  }

  /** The verdict; only valid after `pass` has run to the end. */
  result(): Inspected {
    if (this.contentType === undefined) throw new Error('UploadInspection.result() before the stream ended');
    return { contentType: this.contentType, ...this.dimensions };
  }

  private wantsMoreHead(): boolean {
    if (this.contentType === undefined) return true;
    return this.policy.image && this.dimensions === undefined && this.headBytes < DIMENSION_PEEK_BYTES;
  }

  private async examine(ended: boolean): Promise<void> {
    if (this.contentType === undefined && (ended || this.headBytes >= TYPE_PEEK_BYTES)) {
      const head = Buffer.concat(this.head).subarray(0, TYPE_PEEK_BYTES);
      const detected = await fileTypeFromBuffer(head);
      const type = detected ? (SAME_AS[detected.mime] ?? detected.mime) : undefined;
      if (this.policy.image && (type === undefined || !isRaster(type))) {
        throw new AppError(
          'UNSUPPORTED_MEDIA_TYPE',
          `An image must be PNG, JPEG, GIF or WebP; this content is ${type ?? 'not a recognised image'}.`,
        );
      }
      this.contentType = type ?? 'application/octet-stream';
      if (this.policy.image) {
        this.frameCounter = frameCounterFor(this.contentType);
        for (const chunk of this.head) this.frameCounter?.push(chunk);
      }
    }
    if (this.policy.image && this.contentType !== undefined && this.dimensions === undefined) {
      this.dimensions = readDimensions(Buffer.concat(this.head));
      if (this.dimensions) this.checkDimensions(this.dimensions);
      else if (ended || this.headBytes >= DIMENSION_PEEK_BYTES) {
        throw new AppError('UNPROCESSABLE', 'The image header does not state a readable width and height.');
      }
    }
  }

  /** FILE-2's cap on animations: every frame may be as large as the canvas the header states. */
  /**
   * FILE-2 for animations: the frames may cover more than the header states (decoders grow the
   * canvas to fit them), so that canvas must pass the same limits; and frames × canvas pixels, and
   * the number of frames, are capped too.
   */
  private checkAnimation(): void {
    if (!this.frameCounter || !this.dimensions) return;
    const width = Math.max(this.dimensions.width, this.frameCounter.width);
    const height = Math.max(this.dimensions.height, this.frameCounter.height);
    if (width !== this.dimensions.width || height !== this.dimensions.height) {
      this.checkDimensions({ width, height });
      this.dimensions = { width, height };
    }
    const frames = this.frameCounter.frames;
    if (frames > MAX_FRAMES) {
      throw new AppError('IMAGE_TOO_LARGE', `The animation has more than ${MAX_FRAMES} frames.`);
    }
    // A still image (one frame) is held to the image limits alone, whatever its format.
    if (frames > 1 && frames * width * height > this.policy.maxAnimationPixels) {
      throw new AppError(
        'IMAGE_TOO_LARGE',
        `The animation has at least ${frames} frames of ${width}×${height} pixels; the limit is ${this.policy.maxAnimationPixels} pixels over all frames.`,
      );
    }
  }

  private checkDimensions({ width, height }: { width: number; height: number }): void {
    const { maxSide, maxPixels } = this.policy;
    if (width > maxSide || height > maxSide || width * height > maxPixels) {
      throw new AppError(
        'IMAGE_TOO_LARGE',
        `The image is ${width}×${height} pixels; the limits are ${maxSide} pixels a side and ${maxPixels} pixels in all.`,
      );
    }
  }
}

/** Width and height from an image header, or undefined while the header is incomplete or unreadable. */
function readDimensions(head: Uint8Array): { width: number; height: number } | undefined {
  try {
    const { width, height } = imageSize(head);
    return width > 0 && height > 0 ? { width, height } : undefined;
  } catch {
    return undefined;
  }
}
