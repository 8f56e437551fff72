/**
 * Counts the frames of an animated GIF or WebP while its bytes stream past, reading only the
 * container structure (block and chunk lengths), never the compressed pixels. RELIABILITY FILE-2
 * caps frames × pixels: a small file can hold thousands of full-size frames that a viewer decodes
 * one after another. The libraries that read animations (omggif, sharp's `pages`) want the whole
 * file in memory or on disk; this walks it in constant memory, and a malformed structure simply
 * stops the count (the type and size checks decide about malformed files, not this).
 */
export interface FrameCounter {
  push(chunk: Uint8Array): void;
  /** Frames seen so far; at least 1 for any image, since a still image is one frame. */
  readonly frames: number;
}

export function frameCounterFor(contentType: string): FrameCounter | undefined {
  if (contentType === 'image/gif') return new GifFrameCounter();
  if (contentType === 'image/webp') return new WebpFrameCounter();
  return undefined;
}

/**
 * A byte-at-a-time reader that is told, state by state, how many bytes to collect or skip next.
 * Both formats are a sequence of "read a small header, skip a length it states" steps.
 */
abstract class StructureWalker implements FrameCounter {
  protected counted = 0;
  private skip = 0;
  private want: number;
  private collected: number[] = [];
  private done = false;

  constructor(firstRead: number) {
    this.want = firstRead;
  }

  get frames(): number {
    return Math.max(1, this.counted);
  }

  push(chunk: Uint8Array): void {
    let offset = 0;
    while (offset < chunk.byteLength && !this.done) {
      if (this.skip > 0) {
        const skipped = Math.min(this.skip, chunk.byteLength - offset);
        this.skip -= skipped;
        offset += skipped;
        continue;
      }
      const take = Math.min(this.want - this.collected.length, chunk.byteLength - offset);
      for (let i = 0; i < take; i++) this.collected.push(chunk[offset + i] as number);
      offset += take;
      if (this.collected.length === this.want) {
        const bytes = this.collected;
        this.collected = [];
        const next = this.read(bytes);
        if (next === undefined) this.done = true;
        else {
          this.skip = next.skip;
          this.want = next.read;
        }
      }
    }
  }

  /** Handles the bytes asked for; answers what to skip and how many bytes to read next, or undefined to stop. */
  protected abstract read(bytes: number[]): { skip: number; read: number } | undefined;
}

type GifState = 'header' | 'block' | 'extension-label' | 'sub-block' | 'image-descriptor' | 'lzw-size';

/** GIF89a: header and screen descriptor, then extension and image blocks, each image block a frame. */
class GifFrameCounter extends StructureWalker {
  private state: GifState = 'header';
  private afterSubBlocks: GifState = 'block';

  constructor() {
    super(13);
  }

  protected read(bytes: number[]): { skip: number; read: number } | undefined {
    const at = (i: number): number => bytes[i] as number;
    switch (this.state) {
      case 'header': {
        this.state = 'block';
        return { skip: colorTableBytes(at(10)), read: 1 };
      }
      case 'block': {
        if (at(0) === 0x2c) {
          this.counted++;
          this.state = 'image-descriptor';
          return { skip: 0, read: 9 };
        }
        if (at(0) === 0x21) {
          this.state = 'extension-label';
          return { skip: 0, read: 1 };
        }
        return undefined; // 0x3b trailer, or not a block at all
      }
      case 'extension-label': {
        this.state = 'sub-block';
        this.afterSubBlocks = 'block';
        return { skip: 0, read: 1 };
      }
      case 'image-descriptor': {
        this.state = 'lzw-size';
        return { skip: colorTableBytes(at(8)), read: 1 };
      }
      case 'lzw-size': {
        this.state = 'sub-block';
        this.afterSubBlocks = 'block';
        return { skip: 0, read: 1 };
      }
      case 'sub-block': {
        // A sub-block is a length byte and that many bytes; a zero length ends the sequence.
        if (at(0) === 0) {
          this.state = this.afterSubBlocks;
          return { skip: 0, read: 1 };
        }
        return { skip: at(0), read: 1 };
      }
    }
  }
}

/** The size of the colour table a GIF packed-fields byte announces (bit 7 set, 2^(n+1) RGB entries). */
function colorTableBytes(packed: number): number {
  return packed & 0x80 ? 3 * 2 ** ((packed & 0x07) + 1) : 0;
}

/** WebP: a RIFF container whose chunks are a FourCC and a little-endian length; each ANMF chunk is a frame. */
class WebpFrameCounter extends StructureWalker {
  private headerRead = false;

  constructor() {
    super(12);
  }

  protected read(bytes: number[]): { skip: number; read: number } | undefined {
    if (!this.headerRead) {
      this.headerRead = true;
      return { skip: 0, read: 8 };
    }
    const fourcc = String.fromCharCode(...bytes.slice(0, 4));
    const length = ((bytes[4] as number) | ((bytes[5] as number) << 8) | ((bytes[6] as number) << 16)) + (bytes[7] as number) * 2 ** 24;
    if (fourcc === 'ANMF') this.counted++;
    // Chunks are padded to an even length.
    return { skip: length + (length % 2), read: 8 };
  }
}
