import { crc32, inflate, inflateSync } from 'node:zlib';

// The decode check of an uploaded PNG (FILE-3) without libvips. A PNG decodes when its chunks are
// whole with correct checksums and its image data inflates (zlib, with its own Adler-32 check) to
// exactly the bytes its header implies, every row starting with a valid filter type: that is all a
// decoder reads to produce pixels. Through sharp the same check cost about 3 ms of CPU for a 35 KB
// screenshot (pipeline set-up on libvips threads); this one costs about a tenth of that.
//
// `pngDecodes` only ever says yes. Anything it does not fully understand (a palette, a chunk outside
// a short list, a stream it cannot inflate, data that does not add up) is left to sharp, which
// judges every other refusal; so nothing sharp refuses is ever accepted here. The one refusal of
// this module's own is `pngEndsEarly`: libpng, under sharp, decodes a PNG cut anywhere after its
// image data (only the 12-byte IEND chunk missing, or part of it), while every cut into the image
// data is refused; a file cut short is a failed upload all the same (FILE-3).

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/**
 * True when `bytes` begin as a PNG but end before the end of its IEND chunk: the file was cut short,
 * whatever a lenient decoder makes of what is there. Only the chunk lengths are read (no CRCs: the
 * rest is for the decoder to judge), so it costs a step per chunk. Not a PNG: false.
 */
export function pngEndsEarly(bytes: Uint8Array): boolean {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buffer.length < SIGNATURE.length || !buffer.subarray(0, SIGNATURE.length).equals(SIGNATURE)) return false;
  let offset = SIGNATURE.length;
  while (offset + 8 <= buffer.length) {
    const end = offset + 12 + buffer.readUInt32BE(offset);
    if (buffer.toString('latin1', offset + 4, offset + 8) === 'IEND') return end > buffer.length;
    offset = end;
  }
  return true;
}

/** Bit depths each colour type allows (palette images, type 3, are left to sharp), and its channels. */
const COLOUR_TYPES: Record<number, { depths: number[]; channels: number }> = {
  0: { depths: [1, 2, 4, 8, 16], channels: 1 },
  2: { depths: [8, 16], channels: 3 },
  4: { depths: [8, 16], channels: 2 },
  6: { depths: [8, 16], channels: 4 },
};

/** Ancillary chunks that may come along (any other sends the image to sharp), each with a value decoders take. */
function benign(type: string, body: Buffer): boolean {
  if (type === 'pHYs') return body.length === 9 && (body[8] as number) <= 1;
  if (type === 'sRGB') return body.length === 1 && (body[0] as number) <= 3;
  if (type === 'gAMA') return body.length === 4 && body.readUInt32BE(0) !== 0;
  return false;
}

/** Adam7 passes: x start, y start, x step, y step. */
const ADAM7 = [
  [0, 0, 8, 8],
  [4, 0, 8, 8],
  [0, 4, 4, 8],
  [2, 0, 4, 4],
  [0, 2, 2, 4],
  [1, 0, 2, 2],
  [0, 1, 1, 2],
] as const;

/** Raw image data up to this size is inflated on the event loop (well under a millisecond); larger goes to the thread pool. */
const INFLATE_ON_LOOP_MAX_BYTES = 512 * 1024;

/** What an uploaded PNG's structure says: rows of `rowBytes` (a filter byte each) in each pass, and its compressed data. */
interface PngLayout {
  /** Per pass (one unless interlaced): how many rows and how many bytes each, filter byte included. */
  passes: { rows: number; rowBytes: number }[];
  rawBytes: number;
  data: Buffer;
}

/**
 * The layout of a PNG whose framing is sound (signature, IHDR first, chunks whole with correct
 * CRCs, consecutive IDATs, IEND last), or undefined for anything this module leaves to sharp.
 */
export function pngLayout(bytes: Uint8Array, maxRawBytes: number): PngLayout | undefined {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buffer.length < SIGNATURE.length || !buffer.subarray(0, SIGNATURE.length).equals(SIGNATURE)) return undefined;
  let offset = SIGNATURE.length;
  let header: { width: number; height: number; depth: number; channels: number; interlaced: boolean } | undefined;
  const data: Buffer[] = [];
  const seen = new Set<string>();
  let ended = false;
  while (!ended) {
    if (offset + 12 > buffer.length) return undefined;
    const length = buffer.readUInt32BE(offset);
    if (length > 0x7fffffff || offset + 12 + length > buffer.length) return undefined;
    const type = buffer.toString('latin1', offset + 4, offset + 8);
    const body = buffer.subarray(offset + 8, offset + 8 + length);
    if (crc32(buffer.subarray(offset + 4, offset + 8 + length)) !== buffer.readUInt32BE(offset + 8 + length)) return undefined;
    offset += 12 + length;
    if (header === undefined) {
      if (type !== 'IHDR' || length !== 13) return undefined;
      header = readHeader(body);
      if (header === undefined) return undefined;
      continue;
    }
    if (type === 'IDAT') {
      data.push(body);
    } else if (type === 'IEND') {
      if (length !== 0 || data.length === 0) return undefined;
      ended = true;
    } else {
      // Only before the image data, each once, with a value a decoder takes.
      if (data.length > 0 || seen.has(type) || !benign(type, body)) return undefined;
      seen.add(type);
    }
  }
  if (header === undefined) return undefined;
  const passes = layoutOf(header);
  const rawBytes = passes.reduce((sum, pass) => sum + pass.rows * pass.rowBytes, 0);
  if (rawBytes > maxRawBytes) return undefined;
  return { passes, rawBytes, data: Buffer.concat(data) };
}

function readHeader(body: Buffer) {
  const width = body.readUInt32BE(0);
  const height = body.readUInt32BE(4);
  const [depth, colourType, compression, filter, interlace] = body.subarray(8, 13) as unknown as number[];
  const colour = COLOUR_TYPES[colourType as number];
  if (width === 0 || height === 0 || width > 0x7fffffff || height > 0x7fffffff) return undefined;
  if (!colour?.depths.includes(depth as number) || compression !== 0 || filter !== 0 || (interlace !== 0 && interlace !== 1))
    return undefined;
  return { width, height, depth: depth as number, channels: colour.channels, interlaced: interlace === 1 };
}

function layoutOf(header: { width: number; height: number; depth: number; channels: number; interlaced: boolean }) {
  const rowBytes = (width: number) => 1 + Math.ceil((width * header.channels * header.depth) / 8);
  if (!header.interlaced) return [{ rows: header.height, rowBytes: rowBytes(header.width) }];
  const passes: { rows: number; rowBytes: number }[] = [];
  for (const [x0, y0, dx, dy] of ADAM7) {
    const width = header.width > x0 ? Math.ceil((header.width - x0) / dx) : 0;
    const rows = header.height > y0 ? Math.ceil((header.height - y0) / dy) : 0;
    // An empty pass has no rows at all, not even filter bytes.
    if (width > 0 && rows > 0) passes.push({ rows, rowBytes: rowBytes(width) });
  }
  return passes;
}

/** True when the inflated data is exactly the layout's size and every row starts with a filter type 0–4. */
function rowsAreSound(layout: PngLayout, raw: Buffer): boolean {
  if (raw.length !== layout.rawBytes) return false;
  let offset = 0;
  for (const { rows, rowBytes } of layout.passes) {
    for (let row = 0; row < rows; row++, offset += rowBytes) if ((raw[offset] as number) > 4) return false;
  }
  return true;
}

const inflateAsync = (data: Buffer, maxOutputLength: number) =>
  new Promise<Buffer>((resolve, reject) => inflate(data, { maxOutputLength }, (error, raw) => (error ? reject(error) : resolve(raw))));

/**
 * True when `bytes` are a PNG that decodes, by the rules above; false when sharp must decide (not a
 * PNG, outside what this check covers, over `maxRawBytes` inflated, or damaged). Never throws.
 */
export async function pngDecodes(bytes: Uint8Array, maxRawBytes: number): Promise<boolean> {
  const layout = pngLayout(bytes, maxRawBytes);
  if (!layout) return false;
  try {
    // One byte more than the layout needs: a longer stream fails here rather than passing truncated.
    const limit = layout.rawBytes + 1;
    const raw =
      layout.rawBytes <= INFLATE_ON_LOOP_MAX_BYTES
        ? inflateSync(layout.data, { maxOutputLength: limit })
        : await inflateAsync(layout.data, limit);
    return rowsAreSound(layout, raw);
  } catch {
    return false;
  }
}
