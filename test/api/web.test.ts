import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { WEB_CSP, WEB_PATHS } from '../../src/server/plugins/web.ts';
import { rawRequest } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

// UI-1: the web interface is served by the same process: every page address answers the
// application (deep links from CI logs work), assets are immutable, and the policy is strict.

const BUILT = fileURLToPath(new URL('../../dist/web/index.html', import.meta.url));

describe('the web interface, as served', () => {
  let server: TestServer;
  before(async () => {
    assert.ok(fs.existsSync(BUILT), 'dist/web is built by npm run build (npm test builds it first)');
    server = await startTestServer('sqlite');
  });
  after(() => server?.close());

  test('every page address answers index.html, uncached, under the strict policy and never framed', async () => {
    const addresses = WEB_PATHS.map((path) => path.replace('*', 'some/deep/link'));
    for (const path of [...addresses, '/runs/0b9d7e34-2c51-4f8a-b6e3-91a4c7d05e12', '/projects/WEB?status=failed']) {
      const answer = await rawRequest(`${server.url}${path}`);
      assert.equal(answer.status, 200, path);
      assert.match(String(answer.headers['content-type']), /^text\/html/, path);
      assert.equal(answer.headers['content-security-policy'], WEB_CSP, path);
      assert.equal(answer.headers['cache-control'], 'no-cache', path);
      assert.equal(answer.headers['x-frame-options'], 'DENY', path);
      assert.match(answer.text, /<div id="app"><\/div>/, path);
      assert.doesNotMatch(answer.text, /<script>|<style|style="/, `${path}: nothing inline`);
    }
    assert.doesNotMatch(WEB_CSP, /unsafe-inline|unsafe-eval|\*/);
  });

  test('assets are served as immutable files by their hashed names; an unknown one is a 404', async () => {
    const html = (await rawRequest(`${server.url}/`)).text;
    const assets = [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((m) => m[1] as string);
    assert.ok(
      assets.some((a) => a.endsWith('.js')),
      html,
    );
    for (const asset of assets) {
      const answer = await rawRequest(`${server.url}${asset}`);
      assert.equal(answer.status, 200, asset);
      assert.match(String(answer.headers['cache-control']), /immutable/, asset);
      assert.match(asset, /-[\w-]{8,}\.(js|css)$/, 'a content hash in the name');
    }
    assert.equal((await rawRequest(`${server.url}/assets/missing-0000.js`)).status, 404);
    assert.equal((await rawRequest(`${server.url}/assets/../index.html`)).status, 404);
  });

  test('the API is untouched: JSON, its own policy, and unknown addresses stay 404 problems', async () => {
    const api = await rawRequest(`${server.url}/api`, { headers: { accept: 'application/json' } });
    assert.equal(api.status, 200);
    assert.match(String(api.headers['content-security-policy']), /default-src 'none'/);
    const unknown = await rawRequest(`${server.url}/not-a-page`);
    assert.equal(unknown.status, 404);
  });
});
