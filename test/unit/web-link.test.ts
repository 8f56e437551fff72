import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { webLinkOrNull, webLinkProblem } from '../../src/server/outgoing/web-link.ts';

// Addresses that come from trackers and are shown as links (FORGE-10).

describe('webLinkProblem: links that come from trackers', () => {
  test('http(s) links pass; javascript:, data:, other schemes, no host, non-ASCII and bad lengths are refused with the reason', () => {
    for (const link of ['https://github.com/acme/shop/issues/12', 'http://jira.example.test/browse/SHOP-1']) {
      assert.equal(webLinkProblem(link), undefined, link);
      assert.equal(webLinkOrNull(link), link);
    }
    for (const [link, reason] of [
      ['javascript:alert(document.cookie)', /scheme is javascript:/],
      ['JavaScript://%0Aalert(1)', /scheme is javascript:/],
      ['data:text/html,<script>alert(1)</script>', /scheme is data:/],
      ['vbscript:msgbox(1)', /scheme is vbscript:/],
      ['file:///etc/passwd', /scheme is file:/],
      ['https://exa mple.com/x', /./],
      ['https://example.com/ü-issue', /printable ASCII/],
      ['http://a/', /10 to 2048/],
      [`https://example.com/${'x'.repeat(2048)}`, /10 to 2048/],
      ['/relative/issue/12', /absolute/],
    ] as const) {
      assert.match(webLinkProblem(link) ?? '', reason, link);
      assert.equal(webLinkOrNull(link), null, link);
    }
    assert.equal(webLinkProblem(42), 'it is not text');
    assert.equal(webLinkOrNull(null), null);
  });
});
