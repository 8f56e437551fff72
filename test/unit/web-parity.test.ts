import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { PARITY } from '../../web/src/parity.ts';

// UI-6: every operation of the API is either performed by a page of the
// web interface or listed as deliberately API-only with its reason. The list is web/src/parity.ts.

const ROOT = path.resolve(import.meta.dirname, '../..');
const WEB = path.join(ROOT, 'web/src');

const openapi = JSON.parse(readFileSync(path.join(ROOT, 'docs/openapi.json'), 'utf8')) as {
  paths: Record<string, Record<string, { operationId?: string }>>;
};
const operations = new Map<string, string>();
for (const [route, methods] of Object.entries(openapi.paths)) {
  for (const [method, operation] of Object.entries(methods)) {
    if (operation.operationId) operations.set(operation.operationId, `${method.toUpperCase()} ${route}`);
  }
}

/** Every source file of the web interface but the list itself, as one text to search. */
function webSources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) return webSources(file);
    return /\.tsx?$/.test(entry.name) && file !== path.join(WEB, 'parity.ts') ? [readFileSync(file, 'utf8')] : [];
  });
}
const sources = webSources(WEB).join('\n');
const routes = new Set([...readFileSync(path.join(WEB, 'app.tsx'), 'utf8').matchAll(/<Route path="([^"]+)"/g)].map((m) => m[1]));
const webDoc = readFileSync(path.join(ROOT, 'docs/web.md'), 'utf8');
const apiOnlySection = webDoc.slice(webDoc.indexOf('## Operations without a page'));

describe('parity of the web interface with the API (UI-6)', () => {
  test('every operation of docs/openapi.json is in web/src/parity.ts, and the list names no other', () => {
    const missing = [...operations.keys()].filter((id) => !(id in PARITY));
    const stale = Object.keys(PARITY).filter((id) => !operations.has(id));
    assert.deepEqual(
      missing,
      [],
      `operations with neither a page nor a reason: ${missing.map((id) => `${id} (${operations.get(id)})`).join(', ')}`,
    );
    assert.deepEqual(stale, [], 'entries for operations the API does not have');
  });

  test('every page named is a route of the web interface, and its code reaches the operation', () => {
    const unrouted: string[] = [];
    const unreached: string[] = [];
    for (const [id, reach] of Object.entries(PARITY)) {
      if (!('page' in reach)) continue;
      if (!routes.has(reach.page)) unrouted.push(`${id} → ${reach.page}`);
      // `v1.tests.createTest`, or a client helper such as `client.importReport(`: `.operationId` either way.
      const evidence = reach.evidence ?? new RegExp(`\\.${id}\\b`);
      if (!evidence.test(sources)) unreached.push(`${id} (${evidence})`);
    }
    // Both lists at once: a failure names every gap, not the first kind only.
    assert.deepEqual(
      { unrouted, unreached },
      { unrouted: [], unreached: [] },
      'pages that are not routes of web/src/app.tsx; operations no code in web/src performs',
    );
  });

  test("every API-only operation says why, and docs/web.md's list of operations without a page names it", () => {
    const apiOnly = Object.entries(PARITY).flatMap(([id, reach]) => ('apiOnly' in reach ? [id] : []));
    assert.ok(apiOnly.length > 0);
    for (const id of apiOnly) {
      const reach = PARITY[id] as { apiOnly: string };
      assert.ok(reach.apiOnly.trim().length >= 30, `${id}: a reason, not a word`);
      const [method, route] = (operations.get(id) ?? '').split(' ');
      assert.ok(
        apiOnlySection.includes(`\`${method} ${route}`) || apiOnlySection.includes(`${route}\``),
        `${id} (${method} ${route}) is in docs/web.md's list`,
      );
    }
  });
});
