import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import sharp from 'sharp';
import { frameCounterFor } from '../../src/server/media/frame-counter.ts';
import { apng, gifWithFrames, randomAnimation, randomGif, randomPng } from '../helpers/png.ts';

/** Feeds `bytes` to a fresh counter in pieces of `piece` bytes and answers the count. */
function countFrames(contentType: string, bytes: Buffer, piece: number): number {
  const counter = frameCounterFor(contentType);
  assert.ok(counter, `a counter for ${contentType}`);
  for (let offset = 0; offset < bytes.length; offset += piece) counter.push(bytes.subarray(offset, offset + piece));
  return counter.frames;
}

describe('frameCounterFor', () => {
  for (const format of ['gif', 'webp'] as const) {
    const contentType = `image/${format}`;

    test(`counts the frames of an animated ${format.toUpperCase()} as libvips does, however the bytes are split`, async () => {
      for (const frames of [2, 7, 40]) {
        const animation = await randomAnimation(format, frames, 24, 16);
        assert.equal((await sharp(animation, { pages: -1 }).metadata()).pages, frames, 'the fixture itself');
        for (const piece of [1, 5, 4096, animation.length]) {
          assert.equal(countFrames(contentType, animation, piece), frames, `${frames} frames in pieces of ${piece}`);
        }
      }
    });

    test(`any split of a ${format.toUpperCase()} gives the same count`, async () => {
      const animation = await randomAnimation(format, 5, 12, 9);
      fc.assert(
        fc.property(fc.array(fc.integer({ min: 1, max: animation.length }), { minLength: 1, maxLength: 20 }), (cuts) => {
          const counter = frameCounterFor(contentType);
          assert.ok(counter);
          let offset = 0;
          for (const cut of cuts.sort((a, b) => a - b)) {
            counter.push(animation.subarray(offset, Math.max(offset, cut)));
            offset = Math.max(offset, cut);
          }
          counter.push(animation.subarray(offset));
          return counter.frames === 5;
        }),
        { numRuns: 100 },
      );
    });

    test(`arbitrary bytes declared ${format.toUpperCase()} never throw and count at least one frame`, () => {
      fc.assert(
        fc.property(fc.uint8Array({ maxLength: 2000 }), (bytes) => countFrames(contentType, Buffer.from(bytes), 7) >= 1),
        { numRuns: 300 },
      );
    });
  }

  test('the canvas grows to the frames, as decoders do, even when the GIF header states less', async () => {
    const gif = gifWithFrames(1, 1, 4000, 3000, 3);
    // The fixture is what libvips sees too: a 4000 × 3000 canvas of 3 pages behind a 1 × 1 header.
    const seen = await sharp(gif, { pages: -1 }).metadata();
    assert.deepEqual([seen.width, seen.pageHeight, seen.pages], [4000, 3000, 3]);
    for (const piece of [1, 3, gif.length]) {
      const counter = frameCounterFor('image/gif');
      assert.ok(counter);
      for (let offset = 0; offset < gif.length; offset += piece) counter.push(gif.subarray(offset, offset + piece));
      assert.deepEqual([counter.frames, counter.width, counter.height], [3, 4000, 3000]);
    }
  });

  test('reads the canvas of animated WebP from VP8X and its frames', async () => {
    const webp = await randomAnimation('webp', 3, 40, 30);
    const counter = frameCounterFor('image/webp');
    assert.ok(counter);
    counter.push(webp);
    assert.deepEqual([counter.frames, counter.width, counter.height], [3, 40, 30]);
  });

  test('a still GIF or WebP is one frame', async () => {
    assert.equal(countFrames('image/gif', await randomGif(), 3), 1);
    const webp = await sharp(await randomPng())
      .webp()
      .toBuffer();
    assert.equal(countFrames('image/webp', webp, 3), 1);
  });

  test('JPEG has no counter: it is one frame by format (PNG may be an APNG, below)', () => {
    assert.equal(frameCounterFor('image/jpeg'), undefined);
  });

  describe('APNG', () => {
    test('counts the fcTL frames of an animated PNG and reads its canvas, however the bytes are split', async () => {
      const animation = apng(24, 16, 7);
      // A real, decodable PNG (libvips shows its default image).
      assert.deepEqual([(await sharp(animation).metadata()).width, (await sharp(animation).stats()).channels.length], [24, 3]);
      for (const piece of [1, 5, 13, animation.length]) {
        const counter = frameCounterFor('image/png');
        assert.ok(counter);
        for (let offset = 0; offset < animation.length; offset += piece) counter.push(animation.subarray(offset, offset + piece));
        assert.deepEqual([counter.frames, counter.width, counter.height], [7, 24, 16], `in pieces of ${piece}`);
      }
    });

    test('an acTL that understates cannot hide frames: every fcTL counts as it streams past', () => {
      assert.equal(countFrames('image/png', apng(4, 4, 50, { announced: 1, pixels: false }), 7), 50);
      // An acTL that announces more is believed: the header alone is enough to refuse.
      assert.equal(countFrames('image/png', apng(4, 4, 2, { announced: 100, pixels: false }).subarray(0, 60), 60), 100);
    });

    test('a still PNG is one frame; arbitrary bytes never throw', async () => {
      assert.equal(countFrames('image/png', await randomPng(), 3), 1);
      fc.assert(
        fc.property(fc.uint8Array({ maxLength: 2000 }), (bytes) => countFrames('image/png', Buffer.from(bytes), 7) >= 1),
        { numRuns: 300 },
      );
    });
  });
});
