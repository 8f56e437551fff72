import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import { crc32, deflateSync } from 'node:zlib';
import fc from 'fast-check';
import sharp from 'sharp';
import { pngDecodes, pngEndsEarly } from '../../src/server/media/png-check.ts';
import { ThumbnailRenderer } from '../../src/server/media/thumbnails.ts';

const LIMIT = 8 * 1024 * 1024;

/** Whether libvips decodes `bytes` the way the upload check did before png-check.ts (the judge). */
async function sharpDecodes(bytes: Buffer): Promise<boolean> {
  try {
    await sharp(bytes, { failOn: 'error', sequentialRead: true })
      .resize(64, 64, { fit: 'inside', withoutEnlargement: true })
      .raw()
      .toBuffer();
    return true;
  } catch {
    return false;
  }
}

const chunk = (type: string, data: Buffer) => {
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const framed = Buffer.alloc(body.length + 8);
  framed.writeUInt32BE(data.length, 0);
  body.copy(framed, 4);
  framed.writeUInt32BE(crc32(body), body.length + 4);
  return framed;
};

/** The chunks of a PNG: type and data. */
function chunksOf(png: Buffer): { type: string; data: Buffer }[] {
  const chunks: { type: string; data: Buffer }[] = [];
  for (let offset = 8; offset + 12 <= png.length; ) {
    const length = png.readUInt32BE(offset);
    chunks.push({ type: png.toString('latin1', offset + 4, offset + 8), data: png.subarray(offset + 8, offset + 8 + length) });
    offset += 12 + length;
  }
  return chunks;
}

/** A PNG made of these chunks, each framed with a correct length and CRC. */
const pngOf = (chunks: { type: string; data: Buffer }[]) =>
  Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), ...chunks.map((c) => chunk(c.type, c.data))]);

async function variety(): Promise<{ name: string; png: Buffer }[]> {
  const pixels = (w: number, h: number, channels: 1 | 2 | 3 | 4) => ({
    raw: { width: w, height: h, channels },
  });
  const made: { name: string; png: Buffer }[] = [];
  for (const [w, h] of [
    [1, 1],
    [7, 3],
    [110, 110],
    [33, 200],
  ] as const) {
    for (const channels of [1, 2, 3, 4] as const) {
      const input = randomBytes(w * h * channels);
      made.push({
        name: `${w}×${h}, ${channels} channels`,
        png: await sharp(input, pixels(w, h, channels))
          .png()
          .toBuffer(),
      });
      made.push({
        name: `${w}×${h}, ${channels} channels, interlaced`,
        png: await sharp(input, pixels(w, h, channels))
          .png({ progressive: true })
          .toBuffer(),
      });
      made.push({
        name: `${w}×${h}, ${channels} channels, 16 bits`,
        png: await sharp(input, pixels(w, h, channels))
          .toColourspace(channels < 3 ? 'grey16' : 'rgb16')
          .png()
          .toBuffer(),
      });
    }
  }
  return made;
}

describe('pngDecodes: the upload decode check without libvips (FILE-3)', () => {
  test('says yes to PNGs libvips decodes: grey, grey+alpha, RGB, RGBA, 8 and 16 bits, interlaced, odd sizes', async () => {
    for (const { name, png } of await variety()) {
      assert.equal(await sharpDecodes(png), true, `${name}: the fixture decodes`);
      assert.equal(await pngDecodes(png, LIMIT), true, name);
    }
  });

  test('leaves palette images, unknown chunks, images over its size limit and non-PNGs to sharp', async () => {
    const palette = await sharp(randomBytes(30 * 20 * 3), { raw: { width: 30, height: 20, channels: 3 } })
      .png({ palette: true })
      .toBuffer();
    assert.equal(await pngDecodes(palette, LIMIT), false);
    const png = await sharp(randomBytes(30 * 20 * 3), { raw: { width: 30, height: 20, channels: 3 } })
      .png()
      .toBuffer();
    const chunks = chunksOf(png);
    const withText = pngOf([chunks[0] as { type: string; data: Buffer }, { type: 'tEXt', data: Buffer.from('a\0b') }, ...chunks.slice(1)]);
    assert.equal(await pngDecodes(withText, LIMIT), false);
    assert.equal(await pngDecodes(png, 20 * 91 - 1), false, 'one byte over its limit of inflated data');
    assert.equal(await pngDecodes(png, 20 * 91), true);
    assert.equal(await pngDecodes(await sharp(png).jpeg().toBuffer(), LIMIT), false);
  });

  test('says no to truncated, re-framed garbage, short, long and badly filtered image data', async () => {
    const width = 40;
    const height = 30;
    const png = await sharp(randomBytes(width * height * 3), { raw: { width, height, channels: 3 } })
      .png()
      .toBuffer();
    const [ihdr] = chunksOf(png);
    const head = ihdr as { type: string; data: Buffer };
    const iend = { type: 'IEND', data: Buffer.alloc(0) };
    const rows = (count: number, filter = 0) =>
      Buffer.concat(Array.from({ length: count }, () => Buffer.concat([Buffer.from([filter]), randomBytes(width * 3)])));
    const cases: [string, Buffer][] = [
      ['cut in half', png.subarray(0, png.length >> 1)],
      ['no IEND', png.subarray(0, png.length - 12)],
      ['garbage image data', pngOf([head, { type: 'IDAT', data: randomBytes(4000) }, iend])],
      ['one row short', pngOf([head, { type: 'IDAT', data: deflateSync(rows(height - 1)) }, iend])],
      ['one row long', pngOf([head, { type: 'IDAT', data: deflateSync(rows(height + 1)) }, iend])],
      ['filter type 5', pngOf([head, { type: 'IDAT', data: deflateSync(rows(height, 5)) }, iend])],
      ['zlib stream cut short', pngOf([head, { type: 'IDAT', data: deflateSync(rows(height)).subarray(0, 100) }, iend])],
    ];
    const flipped = Buffer.from(png);
    flipped[40] = (flipped[40] as number) ^ 0xff; // inside the IDAT: its CRC no longer matches
    cases.push(['a byte of the image data flipped', flipped]);
    for (const [name, bytes] of cases) assert.equal(await pngDecodes(bytes, LIMIT), false, name);
    // Well-formed data made by hand is accepted, so the refusals above are for the reasons named.
    assert.equal(await pngDecodes(pngOf([head, { type: 'IDAT', data: deflateSync(rows(height)) }, iend]), LIMIT), true);
  });

  test('never says yes where libvips refuses: random damage to the image data, re-framed with correct CRCs', async () => {
    const sources = [
      await sharp(randomBytes(24 * 16 * 3), { raw: { width: 24, height: 16, channels: 3 } })
        .png()
        .toBuffer(),
      await sharp(randomBytes(9 * 9 * 4), { raw: { width: 9, height: 9, channels: 4 } })
        .png({ progressive: true })
        .toBuffer(),
    ];
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...sources),
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 4 }),
        fc.option(fc.nat(), { nil: undefined }),
        async (source, edits, cut) => {
          const chunks = chunksOf(source).map((c) => ({ type: c.type, data: Buffer.from(c.data) }));
          const idat = chunks.find((c) => c.type === 'IDAT') as { type: string; data: Buffer };
          // Damage the compressed data (or its inflated rows), then frame it correctly again.
          const raw = Buffer.from((await import('node:zlib')).inflateSync(idat.data));
          const target = cut === undefined && edits.length % 2 === 0 ? raw : idat.data;
          for (const [at, value] of edits) target[at % target.length] = value;
          let data = target === raw ? deflateSync(raw) : idat.data;
          if (cut !== undefined) data = data.subarray(0, cut % (data.length + 1));
          idat.data = data;
          const damaged = pngOf(chunks);
          if (await pngDecodes(damaged, LIMIT)) assert.equal(await sharpDecodes(damaged), true, 'accepted only what libvips decodes');
        },
      ),
      { numRuns: 300, seed: 8 },
    );
  });
});

describe('the upload decode check remembers bytes that decoded', () => {
  const renderer = () => new ThumbnailRenderer({ thumbnailConcurrency: 1, thumbnailQueue: 4, maxImagePixels: 10_000_000 });
  const digest = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

  test('bytes that decoded are not read or decoded again; other bytes are', async () => {
    const checks = renderer();
    const image = await sharp(randomBytes(40 * 40 * 3), { raw: { width: 40, height: 40, channels: 3 } })
      .png()
      .toBuffer();
    const other = await sharp(randomBytes(30 * 30 * 3), { raw: { width: 30, height: 30, channels: 3 } })
      .jpeg()
      .toBuffer();
    let loads = 0;
    const load = (bytes: Buffer) => async () => {
      loads++;
      return bytes;
    };
    await checks.checkDecodes(load(image), undefined, digest(image));
    await checks.checkDecodes(load(image), undefined, digest(image));
    assert.equal(loads, 1, 'the second check of the same bytes reads nothing');
    await checks.checkDecodes(load(other), undefined, digest(other));
    assert.equal(loads, 2);
  });

  test('bytes that failed are refused every time: only a pass is remembered', async () => {
    const checks = renderer();
    const image = await sharp(randomBytes(40 * 40 * 3), { raw: { width: 40, height: 40, channels: 3 } })
      .png()
      .toBuffer();
    const truncated = image.subarray(0, image.length - 40);
    for (let i = 0; i < 2; i++) {
      await assert.rejects(
        checks.checkDecodes(async () => truncated, truncated, digest(truncated)),
        (error: { code?: string }) => error.code === 'UNPROCESSABLE',
      );
    }
  });
});

describe('a PNG cut after its image data is refused, though libvips decodes it (FILE-3)', () => {
  const renderer = () => new ThumbnailRenderer({ thumbnailConcurrency: 1, thumbnailQueue: 4, maxImagePixels: 10_000_000 });
  const sources = async () => [
    await sharp(randomBytes(40 * 30 * 3), { raw: { width: 40, height: 30, channels: 3 } })
      .png()
      .toBuffer(),
    // A palette image: outside what pngDecodes covers, so only sharp would have judged it.
    await sharp(randomBytes(33 * 20 * 3), { raw: { width: 33, height: 20, channels: 3 } })
      .png({ palette: true })
      .toBuffer(),
    await sharp(randomBytes(9 * 9 * 4), { raw: { width: 9, height: 9, channels: 4 } })
      .png({ progressive: true })
      .toBuffer(),
  ];

  test('missing only its 12-byte IEND chunk, or part of it, the upload check answers 422 UNPROCESSABLE', async () => {
    for (const png of await sources()) {
      for (const cut of [12, 8, 4, 1]) {
        const short = png.subarray(0, png.length - cut);
        assert.equal(await sharpDecodes(short), true, `libvips decodes it ${cut} bytes short: the reason this check exists`);
        assert.equal(pngEndsEarly(short), true, `${cut} bytes short`);
        await assert.rejects(
          renderer().checkDecodes(async () => short),
          (error: { code?: string }) => error.code === 'UNPROCESSABLE',
          `${cut} bytes short is refused`,
        );
      }
      await renderer().checkDecodes(async () => png);
    }
  });

  test('every cut is refused, and whole files, bytes after IEND and other formats are not its business', async () => {
    const [png] = await sources();
    const whole = png as Buffer;
    for (let length = 8; length < whole.length; length++) assert.equal(pngEndsEarly(whole.subarray(0, length)), true, `cut at ${length}`);
    assert.equal(pngEndsEarly(whole), false);
    assert.equal(pngEndsEarly(Buffer.concat([whole, Buffer.from('trailing bytes')])), false, 'data after IEND is for the decoder to judge');
    assert.equal(pngEndsEarly(await sharp(whole).jpeg().toBuffer()), false, 'not a PNG');
    assert.equal(pngEndsEarly(whole.subarray(0, 4)), false, 'too short to be a PNG: for the type check');
  });
});
