import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { contentDisposition, encodeRfc8187 } from '../../src/server/http/blob-download.ts';

describe('Content-Disposition of downloads (RFC 6266, RFC 8187)', () => {
  test('filename* holds only attr-chars and percent-encoded bytes, and decodes to the UTF-8 of the name', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 80 }), (name) => {
        const encoded = encodeRfc8187(name);
        assert.match(encoded, /^(?:[A-Za-z0-9!#$&+\-.^_`|~]|%[0-9A-F]{2})*$/);
        assert.deepEqual(Buffer.from(decodeURIComponent(encoded), 'utf8'), Buffer.from(name, 'utf8'));
      }),
      { numRuns: 500 },
    );
  });

  test('the same type and name give the same header, built once; another name its own', () => {
    const screenshot = { contentType: 'image/png', fileName: 'Überblick "Kasse".png' };
    const first = contentDisposition(screenshot);
    assert.equal(first, `inline; filename="Uberblick _Kasse_.png"; filename*=UTF-8''%C3%9Cberblick%20%22Kasse%22.png`);
    assert.equal(contentDisposition({ ...screenshot }), first);
    assert.equal(
      contentDisposition({ contentType: 'text/html', fileName: 'report.html' }),
      `attachment; filename="report.html"; filename*=UTF-8''report.html`,
    );
    assert.equal(
      contentDisposition({ contentType: 'image/png', fileName: 'report.html' }),
      `inline; filename="report.png"; filename*=UTF-8''report.png`,
    );
    for (let i = 0; i < 2000; i++)
      assert.match(contentDisposition({ contentType: 'image/png', fileName: `shot ${i}.png` }), new RegExp(`shot%20${i}\\.png$`));
  });
});
