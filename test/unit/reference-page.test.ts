import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { v1Endpoints } from '../../src/api/v1/index.ts';
import { buildOpenApiDocument } from '../../src/server/openapi/document.ts';
import { renderReferencePage } from '../../src/server/openapi/reference-page.ts';

// SEC-9a: the reference page at /docs/api renders the OpenAPI document readably and safely.

const DOCUMENT = buildOpenApiDocument(v1Endpoints, { version: 'v1', appVersion: 'test' });
const PAGE = renderReferencePage(DOCUMENT);

/** A document with one operation whose description holds Markdown and hostile HTML. */
const probe = (description: string) =>
  renderReferencePage({
    info: { title: 'Probe', version: '1', description: 'x' },
    servers: [{ url: '/api/v1' }],
    paths: { '/probe': { get: { operationId: 'probe', summary: 'Probe `it`.', description, tags: ['P'], responses: {} } } },
    components: { schemas: {} },
  });

describe('the API reference page', () => {
  test('renders Markdown in descriptions: backticks become code, long descriptions are shown', () => {
    const html = probe('Call `GET /x` first.\n\nThen **wait**.');
    assert.ok(html.includes('<p>Call <code>GET /x</code> first.</p><p>Then <strong>wait</strong>.</p>'), html);
    const createRun = v1Endpoints.find((e) => e.operationId === 'createRun');
    assert.ok(PAGE.includes('<code>testId</code> must name a test of the same project'), 'createRun description');
    assert.ok(createRun?.description);
  });

  test('escapes raw HTML in descriptions: no <script> or attribute passes through', () => {
    const html = probe('<script>alert(1)</script> and <img src=x onerror=alert(1)> and `<b>`');
    assert.ok(!/<script|<img/i.test(html));
    assert.ok(html.includes('&lt;script&gt;alert(1)&lt;/script&gt;'));
    assert.ok(html.includes('<code>&lt;b&gt;</code>'));
  });

  test('shows schemas as field tables: name, type, required, description, constraints', () => {
    const project = /<section id="schema-Project" class="schema">(.*?)<\/section>/s.exec(PAGE)?.[1] ?? '';
    assert.match(
      project,
      /<tr><td><code>key<\/code><\/td><td>string<\/td><td>yes<\/td><td><p>Short upper-case key, e.g. WEB.<\/p><\/td><td>[^<]*max length <code>16<\/code>/,
    );
    assert.ok(!PAGE.includes('<pre>{'), 'no schema shown as raw JSON');
  });

  test('every $ref link points at an anchor that exists on the page', () => {
    const anchors = new Set([...PAGE.matchAll(/ id="([^"]+)"/g)].map((m) => m[1]));
    const links = [...PAGE.matchAll(/href="#(schema-[^"]+)"/g)].map((m) => m[1]);
    assert.ok(links.includes('schema-TestRun'), 'an operation links to TestRun');
    assert.deepEqual(
      links.filter((l) => !anchors.has(l)),
      [],
    );
  });

  test('has a filter box that narrows the operations', () => {
    assert.match(PAGE, /<form method="get"[^>]*><input type="search" name="filter"/);
    const filtered = renderReferencePage(DOCUMENT, 'artifact');
    assert.ok(filtered.includes('id="getArtifacts"'));
    assert.ok(!filtered.includes('id="createProject"'));
    assert.ok(renderReferencePage(DOCUMENT, '"><script>').includes('value="&quot;&gt;&lt;script&gt;"'));
  });
});
