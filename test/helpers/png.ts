import { randomBytes } from 'node:crypto';
import { readFile, rename, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { crc32, deflateSync } from 'node:zlib';
import sharp from 'sharp';

/**
 * A PNG of random pixels: images are stored by content, so every test gets bytes no other test
 * (or earlier run on the same database) has uploaded.
 */
export async function randomPng(width = 16, height = 12): Promise<Buffer> {
  return sharp(randomBytes(width * height * 3), { raw: { width, height, channels: 3 } })
    .png()
    .toBuffer();
}

/** A GIF of random pixels. */
export async function randomGif(width = 8, height = 8): Promise<Buffer> {
  return sharp(randomBytes(width * height * 3), { raw: { width, height, channels: 3 } })
    .gif()
    .toBuffer();
}

let flood: Promise<Buffer> | undefined;

/**
 * A one-colour 20 000 × 20 000 PNG (400 megapixels, about a megabyte): a pixel flood (FILE-2).
 * Encoding it takes seconds of CPU, so it is made once per process, and kept in the temp folder
 * (per libvips version) for the next test processes and runs; a new file appears whole, by rename.
 */
export function pixelFloodPng(): Promise<Buffer> {
  const file = path.join(os.tmpdir(), `attest-test-pixel-flood-20000-vips${sharp.versions.vips}.png`);
  flood ??= readFile(file).catch(async () => {
    const bytes = await sharp({ create: { width: 20_000, height: 20_000, channels: 3, background: 'white' }, limitInputPixels: false })
      .png()
      .toBuffer();
    const partial = `${file}.${process.pid}.partial`;
    await writeFile(partial, bytes);
    await rename(partial, file);
    return bytes;
  });
  return flood;
}

function pngChunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}

/** A hand-made PNG whose IHDR claims `width` × `height` pixels, with a token IDAT: a decompression bomb's header. */
export function pngClaiming(width: number, height: number): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 2, 0, 0, 0], 8); // 8-bit RGB, deflate, no filter, no interlace
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', ihdr),
    pngChunk('IDAT', Buffer.from([0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01])),
    pngChunk('IEND', Buffer.alloc(0)),
  ]);
}

/** An animated GIF or WebP of `frames` random frames, each `width` × `height`. */
export async function randomAnimation(format: 'gif' | 'webp', frames: number, width = 8, height = 6): Promise<Buffer> {
  const stills = await Promise.all(Array.from({ length: frames }, () => randomPng(width, height)));
  return sharp(stills, { join: { animated: true } })
    .toFormat(format)
    .toBuffer();
}

/**
 * A hand-made GIF whose header states a `screenWidth` × `screenHeight` logical screen while its
 * frames are `frameWidth` × `frameHeight`: decoders grow the canvas to the frames, so the header
 * alone understates the pixels (FILE-2). The frames hold one tiny LZW block each.
 */
export function gifWithFrames(screenWidth: number, screenHeight: number, frameWidth: number, frameHeight: number, frames: number): Buffer {
  const u16 = (n: number) => [n & 0xff, (n >> 8) & 0xff];
  const head = [...Buffer.from('GIF89a'), ...u16(screenWidth), ...u16(screenHeight), 0, 0, 0];
  const frame = [0x2c, ...u16(0), ...u16(0), ...u16(frameWidth), ...u16(frameHeight), 0, 2, 2, 0x4c, 0x01, 0];
  const delay = [0x21, 0xf9, 4, 0, 10, 0, 0, 0];
  const body: number[] = [];
  for (let i = 0; i < frames; i++) body.push(...delay, ...frame);
  return Buffer.from([...head, ...body, 0x3b]);
}

/**
 * A hand-made animated PNG (APNG): IHDR, `acTL` announcing `announced` frames (the real count by
 * default), then per frame an `fcTL` and its pixels (IDAT for the first, `fdAT` after). With
 * `pixels: false` each frame holds a token data chunk instead of its deflated random pixels, for
 * headers that claim far more than they hold.
 */
export function apng(width: number, height: number, frames: number, options: { announced?: number; pixels?: boolean } = {}): Buffer {
  const { announced = frames, pixels = true } = options;
  const u32 = (...values: number[]) => {
    const b = Buffer.alloc(4 * values.length);
    for (const [i, v] of values.entries()) b.writeUInt32BE(v, 4 * i);
    return b;
  };
  const ihdr = Buffer.concat([u32(width, height), Buffer.from([8, 2, 0, 0, 0])]);
  const parts = [
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', ihdr),
    pngChunk('acTL', u32(announced, 0)),
  ];
  const token = Buffer.from([0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01]);
  let sequence = 0;
  for (let frame = 0; frame < frames; frame++) {
    // sequence, width, height, x, y, delay 1/10 s, dispose none, blend source.
    const fctl = Buffer.concat([u32(sequence++, width, height, 0, 0), Buffer.from([0, 1, 0, 10, 0, 0])]);
    parts.push(pngChunk('fcTL', fctl));
    const data = pixels
      ? deflateSync(Buffer.concat(Array.from({ length: height }, () => Buffer.concat([Buffer.from([0]), randomBytes(width * 3)]))))
      : token;
    parts.push(frame === 0 ? pngChunk('IDAT', data) : pngChunk('fdAT', Buffer.concat([u32(sequence++), data])));
  }
  parts.push(pngChunk('IEND', Buffer.alloc(0)));
  return Buffer.concat(parts);
}
