/**
 * Reads the frames of an animated GIF, WebP or PNG (APNG) while its bytes stream past: how many there are and
 * the canvas they really cover. It walks only the container structure (block and chunk lengths,
 * frame descriptors), never the compressed pixels, in constant memory.
 *
 * FILE-2 caps frames × pixels: a small file can hold thousands of full-size frames
 * that a viewer decodes one after another. And the size in a GIF's header is only a hint: a frame
 * may be larger than the "logical screen", and decoders (libvips, browsers) grow the canvas to fit
 * it, so the canvas here grows the same way. A malformed structure stops the walk; the type and
 * size checks decide about malformed files, not this.
 */
export interface FrameCounter {
  push(chunk: Uint8Array): void;
  /** Frames seen so far; at least 1 for any image, since a still image is one frame. */
  readonly frames: number;
  /** The canvas the frames seen so far cover (0 × 0 until a frame states its size). */
  readonly width: number;
  readonly height: number;
}

export function frameCounterFor(contentType: string): FrameCounter | undefined {
  if (contentType === 'image/gif') return new GifFrameCounter();
  if (contentType === 'image/webp') return new WebpFrameCounter();
  if (contentType === 'image/png') return new PngFrameCounter();
  return undefined;
}

/** The most bytes a walker reads at once (a GIF screen descriptor, a WebP or APNG frame header). */
const MAX_READ = 20;

/**
 * A reader that is told, step by step, how many bytes to collect next and how many to skip before
 * them. Both formats are a sequence of "read a small header, skip a length it states".
 */
abstract class StructureWalker implements FrameCounter {
  width = 0;
  height = 0;
  protected counted = 0;
  /** Bytes to pass over before collecting the next read. */
  protected skip = 0;
  /** Bytes the next read needs; 0 stops the walk. */
  protected want: number;
  private readonly collected = new Uint8Array(MAX_READ);
  private have = 0;

  constructor(firstRead: number) {
    this.want = firstRead;
  }

  get frames(): number {
    return Math.max(1, this.counted);
  }

  push(chunk: Uint8Array): void {
    let offset = 0;
    while (offset < chunk.byteLength && this.want > 0) {
      if (this.skip > 0) {
        const skipped = Math.min(this.skip, chunk.byteLength - offset);
        this.skip -= skipped;
        offset += skipped;
        continue;
      }
      const take = Math.min(this.want - this.have, chunk.byteLength - offset);
      this.collected.set(chunk.subarray(offset, offset + take), this.have);
      this.have += take;
      offset += take;
      if (this.have === this.want) {
        this.have = 0;
        // Sets `skip` and `want` for the next step.
        this.read(this.collected);
      }
    }
  }

  protected cover(right: number, bottom: number): void {
    this.width = Math.max(this.width, right);
    this.height = Math.max(this.height, bottom);
  }

  /** Handles the `want` bytes collected at the start of `bytes`, then sets `skip` and `want`. */
  protected abstract read(bytes: Uint8Array): void;
}

const u16le = (b: Uint8Array, at: number) => (b[at] as number) | ((b[at + 1] as number) << 8);
const u24le = (b: Uint8Array, at: number) => u16le(b, at) | ((b[at + 2] as number) << 16);
const u32le = (b: Uint8Array, at: number) => u24le(b, at) + (b[at + 3] as number) * 2 ** 24;

/** The size of the colour table a GIF packed-fields byte announces (bit 7 set, 2^(n+1) RGB entries). */
const colorTableBytes = (packed: number) => (packed & 0x80 ? 3 * 2 ** ((packed & 0x07) + 1) : 0);

type GifState = 'header' | 'block' | 'extension-label' | 'sub-block' | 'image-descriptor' | 'lzw-size';

/** GIF: header and logical screen, then extension and image blocks; each image block is a frame. */
class GifFrameCounter extends StructureWalker {
  private state: GifState = 'header';

  constructor() {
    super(13);
  }

  protected read(b: Uint8Array): void {
    this.skip = 0;
    this.want = 1;
    switch (this.state) {
      case 'header':
        this.cover(u16le(b, 6), u16le(b, 8));
        this.skip = colorTableBytes(b[10] as number);
        this.state = 'block';
        return;
      case 'block':
        if (b[0] === 0x2c) {
          this.state = 'image-descriptor';
          this.want = 9;
        } else if (b[0] === 0x21) {
          this.state = 'extension-label';
        } else {
          this.want = 0; // 0x3b trailer, or not a block at all
        }
        return;
      case 'image-descriptor':
        // left, top, width, height: the frame may reach beyond the logical screen.
        this.counted++;
        this.cover(u16le(b, 0) + u16le(b, 4), u16le(b, 2) + u16le(b, 6));
        this.skip = colorTableBytes(b[8] as number);
        this.state = 'lzw-size';
        return;
      case 'extension-label':
      case 'lzw-size':
        this.state = 'sub-block';
        return;
      case 'sub-block':
        // A sub-block is a length byte and that many bytes; a zero length ends the sequence.
        if (b[0] === 0) this.state = 'block';
        else this.skip = b[0] as number;
        return;
    }
  }
}

/**
 * WebP: a RIFF container of chunks, each a FourCC and a little-endian length. VP8X states the
 * canvas; each ANMF chunk is a frame with its own offset and size.
 */
class WebpFrameCounter extends StructureWalker {
  private state: 'riff' | 'chunk' | 'vp8x' | 'anmf' = 'riff';
  /** What is left of the current chunk after the bytes read from it. */
  private rest = 0;

  constructor() {
    super(12);
  }

  protected read(b: Uint8Array): void {
    switch (this.state) {
      case 'riff':
        this.state = 'chunk';
        this.skip = 0;
        this.want = 8;
        return;
      case 'chunk': {
        const fourcc = String.fromCharCode(b[0] as number, b[1] as number, b[2] as number, b[3] as number);
        const length = u32le(b, 4);
        // Chunks are padded to an even length.
        const padded = length + (length % 2);
        const header = fourcc === 'VP8X' ? 10 : fourcc === 'ANMF' ? 16 : 0;
        if (header > 0 && length >= header) {
          this.state = fourcc === 'VP8X' ? 'vp8x' : 'anmf';
          this.rest = padded - header;
          this.skip = 0;
          this.want = header;
        } else {
          this.skip = padded;
          this.want = 8;
        }
        return;
      }
      case 'vp8x':
        // flags (4), then canvas width - 1 and height - 1 (24 bits each).
        this.cover(u24le(b, 4) + 1, u24le(b, 7) + 1);
        break;
      case 'anmf':
        // x / 2, y / 2, width - 1, height - 1 (24 bits each), then duration and flags.
        this.counted++;
        this.cover(u24le(b, 0) * 2 + u24le(b, 6) + 1, u24le(b, 3) * 2 + u24le(b, 9) + 1);
        break;
    }
    this.state = 'chunk';
    this.skip = this.rest;
    this.want = 8;
  }
}

const u32be = (b: Uint8Array, at: number) =>
  (b[at] as number) * 2 ** 24 + (((b[at + 1] as number) << 16) | ((b[at + 2] as number) << 8) | (b[at + 3] as number));

/**
 * PNG and APNG: the signature, then chunks of a big-endian length, a type, the data and a CRC.
 * IHDR states the canvas; each `fcTL` chunk starts a frame with its own size and offset. `acTL`
 * announces the number of frames, but a file may understate it, and decoders play every frame
 * that has an `fcTL`: so the frames are counted as their `fcTL` chunks stream past, and acTL can
 * only raise the count. A still PNG is one frame.
 */
class PngFrameCounter extends StructureWalker {
  private state: 'signature' | 'chunk' | 'IHDR' | 'acTL' | 'fcTL' = 'signature';
  private rest = 0;
  private announced = 0;

  constructor() {
    super(8);
  }

  override get frames(): number {
    return Math.max(1, this.counted, this.announced);
  }

  protected read(b: Uint8Array): void {
    if (this.state === 'chunk') {
      const length = u32be(b, 0);
      const type = String.fromCharCode(b[4] as number, b[5] as number, b[6] as number, b[7] as number);
      const header = type === 'IHDR' ? 8 : type === 'acTL' ? 4 : type === 'fcTL' ? 20 : 0;
      if (type === 'IEND') {
        this.want = 0;
        return;
      }
      if (header > 0 && length >= header) {
        this.state = type as 'IHDR' | 'acTL' | 'fcTL';
        this.rest = length - header + 4;
        this.skip = 0;
        this.want = header;
      } else {
        this.skip = length + 4; // the data and its CRC
        this.want = 8;
      }
      return;
    }
    switch (this.state) {
      case 'IHDR':
        this.cover(u32be(b, 0), u32be(b, 4));
        break;
      case 'acTL':
        this.announced = Math.max(this.announced, u32be(b, 0));
        break;
      case 'fcTL':
        // sequence number, width, height, x offset, y offset.
        this.counted++;
        this.cover(u32be(b, 12) + u32be(b, 4), u32be(b, 16) + u32be(b, 8));
        break;
      case 'signature':
        this.rest = 0;
        break;
    }
    this.state = 'chunk';
    this.skip = this.rest;
    this.want = 8;
  }
}
