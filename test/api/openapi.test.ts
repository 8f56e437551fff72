import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { OPENAPI_FILE, openApiFileText } from '../../scripts/generate-openapi.ts';
import { ROLES } from '../../src/api/endpoint.ts';
import { v1Endpoints } from '../../src/api/v1/index.ts';
import { loadConfig } from '../../src/server/config.ts';
import { WEB_PATHS } from '../../src/server/plugins/web.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { type JsonSchema, operationsOf, schemaNodes } from '../helpers/schema-samples.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

// The OpenAPI document is the inventory (SEC-9a): generated from the contract, served,
// committed, and equal to what the server routes. Its request schemas are linted (SEC-4a, SEC-7a).

/** Routes outside the version root; anything else the server routes must be in the document. */
const UNVERSIONED_ROUTES = ['GET /api', 'GET /health', 'GET /docs/api'];
/**
 * The web interface's pages and assets (UI-1), as the router prints them: its radix tree merges the
 * page patterns' common prefixes (`/projects` and `/projects/*` print as `/projects*`), so they are
 * matched by shape here and proven one by one with hasRoute.
 */
const WEB_ROUTE = /^(GET|HEAD) \/(|\*|login|login\/sso|keys|account|(projects|admin|runs|jobs|tests|devices|assets)[^ ]*)$/;

/**
 * The router's table, read from `printRoutes`: one line per node, indented four columns per
 * level, each node's path relative to its parent, its methods in parentheses.
 */
function routeTable(printed: string): Set<string> {
  const routes = new Set<string>();
  const stack: string[] = [];
  for (const line of printed.split('\n')) {
    const match = /^([│ ]*)[├└]── (\S+)(?: \(([^)]*)\))?/.exec(line);
    if (!match) continue;
    const depth = [...(match[1] ?? '')].length / 4;
    stack.length = depth;
    const path = `${stack.join('')}${match[2]}`;
    stack.push(match[2] as string);
    for (const method of (match[3] ?? '').split(',').map((m) => m.trim())) {
      if (method && method !== '-' && method !== 'HEAD') routes.add(`${method} ${path}`);
    }
  }
  return routes;
}

const documentRoutes = (doc: JsonSchema) =>
  new Set(operationsOf(doc).map((op) => `${op.method} /api/v1${op.path.replace(/\{(\w+)\}/g, ':$1')}`));

/** SEC-4a: request schema nodes that accept unbounded input. */
function unboundedRequestFields(doc: JsonSchema): string[] {
  const problems: string[] = [];
  for (const op of operationsOf(doc)) {
    const params = (op.raw.parameters as { name: string; in: string; schema: JsonSchema }[] | undefined) ?? [];
    const roots: [string, unknown][] = params.map((p) => [`${p.in}.${p.name}`, p.schema]);
    const content = (op.raw.requestBody as { content?: Record<string, { schema: unknown }> } | undefined)?.content ?? {};
    for (const [type, media] of Object.entries(content)) roots.push([`body(${type})`, media.schema]);
    for (const [where, root] of roots) {
      for (const { pointer, node } of schemaNodes(root)) {
        const at = `${op.operationId} ${where}${pointer}`;
        const bounded = 'const' in node || Array.isArray(node.enum);
        if (node.type === 'string' && !bounded && typeof node.maxLength !== 'number') problems.push(`${at}: string without maxLength`);
        if (node.type === 'array' && typeof node.maxItems !== 'number') problems.push(`${at}: array without maxItems`);
        if (node.type === 'object' && node.additionalProperties !== false && typeof node.maxProperties !== 'number') {
          problems.push(`${at}: open object without maxProperties`);
        }
        if (node.type === undefined && !bounded && !node.anyOf && !node.oneOf && !node.allOf && pointer !== '') {
          problems.push(`${at}: schema without a type accepts anything`);
        }
      }
    }
  }
  return problems;
}

const committed = () => JSON.parse(readFileSync(OPENAPI_FILE, 'utf8')) as JsonSchema;

describe('docs/openapi.json', () => {
  test('equals the document generated from the contract (drift check)', () => {
    let current = '';
    try {
      current = readFileSync(OPENAPI_FILE, 'utf8');
    } catch {
      // reported below
    }
    assert.ok(current === openApiFileText(), 'docs/openapi.json is out of date with src/api: run `npm run openapi` and commit the result');
  });

  test('lists every contract entry once, and nothing else', () => {
    const ops = operationsOf(committed());
    assert.deepEqual(ops.map((op) => op.operationId).sort(), v1Endpoints.map((e) => e.operationId).sort());
    for (const endpoint of v1Endpoints) {
      const op = ops.find((o) => o.operationId === endpoint.operationId);
      assert.equal(op?.method, endpoint.method, endpoint.operationId);
      assert.equal(op?.path, endpoint.path, endpoint.operationId);
    }
    assert.equal(new Set(ops.map((o) => `${o.method} ${o.path}`)).size, ops.length, 'two operations share a method and path');
  });

  test('every operation declares x-authz with a known scope and role', () => {
    for (const op of operationsOf(committed())) {
      assert.ok(op.authz, `${op.operationId} has no x-authz`);
      assert.ok(['public', 'global', 'project'].includes(op.authz.scope), `${op.operationId}: scope ${op.authz.scope}`);
      if (op.authz.scope === 'public') {
        assert.deepEqual(op.raw.security, [], `${op.operationId} is public but asks for a key`);
      } else {
        assert.ok(ROLES.includes(op.authz.role as never), `${op.operationId}: role ${op.authz.role}`);
        assert.ok(op.statuses.includes('401') && op.statuses.includes('403'), `${op.operationId} documents 401 and 403`);
        assert.ok((op.raw.security as unknown[]).length > 0, `${op.operationId} documents no security requirement`);
      }
    }
  });

  test('every request string has a maxLength, every array a maxItems, every open object a maxProperties (SEC-4a)', () => {
    assert.deepEqual(unboundedRequestFields(committed()), []);
  });

  test('the SEC-4a lint does flag unbounded strings, arrays and objects', () => {
    const doc = {
      paths: {
        '/x/{id}': {
          post: {
            operationId: 'probe',
            parameters: [{ name: 'id', in: 'path', schema: { type: 'string' } }],
            requestBody: {
              content: {
                'application/json': {
                  schema: {
                    type: 'object',
                    additionalProperties: false,
                    properties: { tags: { type: 'array', items: { type: 'string', maxLength: 5 } }, extra: { type: 'object' }, any: {} },
                  },
                },
              },
            },
            responses: {},
          },
        },
      },
    };
    assert.deepEqual(unboundedRequestFields(doc), [
      'probe path.id: string without maxLength',
      'probe body(application/json)/properties/tags: array without maxItems',
      'probe body(application/json)/properties/extra: open object without maxProperties',
      'probe body(application/json)/properties/any: schema without a type accepts anything',
    ]);
  });

  test('no request field takes a URL the server would fetch (SEC-7a)', () => {
    const offenders: string[] = [];
    for (const op of operationsOf(committed())) {
      if (op.raw['x-fetches-url']) continue;
      const text = JSON.stringify({ parameters: op.raw.parameters, requestBody: op.raw.requestBody });
      if (/"format":"(uri|url|uri-reference|iri|iri-reference|uri-template)"/.test(text)) offenders.push(op.operationId);
    }
    assert.deepEqual(offenders, []);
  });

  test('every 2xx JSON answer is a $ref to a named component schema, or a page of one (SEC-9a)', () => {
    const doc = committed();
    const schemas = (doc.components as { schemas: Record<string, JsonSchema> }).schemas;
    const named = (schema: JsonSchema | undefined) => {
      const name = /^#\/components\/schemas\/(\w+)$/.exec(String(schema?.$ref))?.[1];
      return name !== undefined && name in schemas ? name : undefined;
    };
    const offenders: string[] = [];
    for (const op of operationsOf(doc)) {
      const raw = (doc.paths as Record<string, Record<string, { responses: Record<string, JsonSchema> }>>)[op.path]?.[
        op.method.toLowerCase()
      ];
      for (const [status, response] of Object.entries(raw?.responses ?? {})) {
        const schema = (response.content as Record<string, { schema: JsonSchema }> | undefined)?.['application/json']?.schema;
        if (!status.startsWith('2') || !schema) continue;
        const name = named(schema);
        if (!name) offenders.push(`${op.operationId} ${status}: inline`);
        const page = name?.endsWith('Page') ? (schemas[name]?.properties as Record<string, JsonSchema> | undefined)?.items : undefined;
        if (page && !named(page.items as JsonSchema)) offenders.push(`${op.operationId} ${status}: page of an inline item`);
      }
    }
    assert.deepEqual(offenders, []);
    for (const name of ['Project', 'Device', 'Test', 'Job', 'TestRun', 'RunResults', 'ResultStep', 'TextCell', 'Artifact']) {
      assert.ok(schemas[name], `components.schemas.${name}`);
    }
    for (const name of ['ArtifactDetails', 'ArtifactImage', 'User', 'ApiKey', 'Problem', 'ProjectPage', 'TestRunPage']) {
      assert.ok(schemas[name], `components.schemas.${name}`);
    }
  });

  test('documented limits are the ones the default configuration enforces (LOAD-6)', () => {
    const config = loadConfig({});
    const doc = committed();
    for (const op of operationsOf(doc)) {
      const limit = (op.raw.parameters as { name: string; schema: JsonSchema }[]).find((p) => p.name === 'limit');
      if (limit) {
        assert.equal(limit.schema.maximum, config.pageSizeMax, `${op.operationId}: limit maximum`);
        assert.equal(limit.schema.default, config.pageSizeDefault, `${op.operationId}: limit default`);
      }
      const body = op.raw.requestBody as JsonSchema | undefined;
      if (body && !op.consumes.includes('multipart/form-data')) {
        const endpoint = v1Endpoints.find((e) => e.operationId === op.operationId);
        const bytes = endpoint?.bodyLimit ? config.bulkBodyLimit : config.bodyLimit;
        assert.equal(body['x-max-bytes'], bytes, `${op.operationId}: body limit`);
      }
    }
    const getArtifacts = operationsOf(doc).find((op) => op.operationId === 'getArtifacts');
    assert.match(String(getArtifacts?.raw.description), new RegExp(`ATTEST_MAX_IDS_PER_BATCH\` \\(default ${config.maxIdsPerBatch}\\)`));
    const listRuns = operationsOf(doc).find((op) => op.operationId === 'listRuns');
    const names = ((listRuns?.raw.parameters ?? []) as { name: string }[]).map((p) => p.name);
    assert.ok(
      !names.includes('labels') && !/\blabels\b(?! parameter)/.test(String(listRuns?.raw.summary)),
      'listRuns names no labels filter',
    );
  });

  test('documents the old-format key as its own, deprecated, security scheme', () => {
    const schemes = (committed().components as { securitySchemes: Record<string, Record<string, unknown>> }).securitySchemes;
    assert.equal(schemes.apiToken?.name, 'service.api-token');
    assert.equal(schemes.legacyApiToken?.name, 'service.api-token');
    assert.equal(schemes.legacyUser?.name, 'service.user');
    assert.equal(schemes.legacyApiToken?.['x-deprecated'], true);
  });
});

for (const dialect of DIALECTS) {
  describe(`[${dialect}] GET /openapi.json`, () => {
    let server: TestServer;
    let served: JsonSchema;
    before(async () => {
      server = await startTestServer(dialect);
      const response = await fetch(`${server.url}/api/v1/openapi.json`, {
        headers: { 'service.api-token': server.admin.key, accept: 'application/json' },
      });
      assert.equal(response.status, 200);
      assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
      served = (await response.json()) as JsonSchema;
    });
    after(() => server.close());

    test('serves a valid OpenAPI 3.1 document, equal to the committed one', async () => {
      const validator = new Validator();
      const result = await validator.validate(structuredClone(served));
      assert.ok(result.valid, JSON.stringify(result.errors, null, 2)?.slice(0, 4000));
      assert.equal(validator.version, '3.1');
      assert.deepEqual(served, committed());
    });

    test('GET /docs/api renders every operation as an open, script-free reference page', async () => {
      const response = await fetch(`${server.url}/docs/api`);
      assert.equal(response.status, 200);
      assert.match(response.headers.get('content-type') ?? '', /^text\/html/);
      const csp = response.headers.get('content-security-policy') ?? '';
      assert.match(csp, /default-src 'none'/);
      assert.ok(!/script-src[^;]*'unsafe-inline'/.test(csp) && !/default-src[^;]*'unsafe-inline'/.test(csp), csp);
      const html = await response.text();
      assert.ok(!/<script/i.test(html));
      assert.match(html, /<input type="search" name="filter"/);
      const filtered = await (await fetch(`${server.url}/docs/api?filter=${encodeURIComponent('testruns results')}`)).text();
      assert.ok(filtered.includes('id="getResults"') && !filtered.includes('id="listUsers"'), 'the filter narrows the operations');
      for (const endpoint of v1Endpoints)
        assert.ok(html.includes(`id="${endpoint.operationId}"`), `${endpoint.operationId} is on the page`);
    });

    test('is open like GET /api and /health: fetched without any header it answers the JSON document', async () => {
      const response = await fetch(`${server.url}/api/v1/openapi.json`);
      assert.equal(response.status, 200);
      assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
      assert.deepEqual(await response.json(), served);
    });

    test('the documented page size and batch limits are the enforced ones: the maximum passes, one more is a 400 (LOAD-6)', async () => {
      const headers = { 'service.api-token': server.admin.key, accept: 'application/json' };
      const listUsers = operationsOf(served).find((op) => op.operationId === 'listUsers');
      const max = ((listUsers?.raw.parameters ?? []) as { name: string; schema: JsonSchema }[]).find((p) => p.name === 'limit')?.schema
        .maximum as number;
      assert.equal((await fetch(`${server.url}/api/v1/users?limit=${max}`, { headers })).status, 200);
      assert.equal((await fetch(`${server.url}/api/v1/users?limit=${max + 1}`, { headers })).status, 400);
      const getArtifacts = operationsOf(served).find((op) => op.operationId === 'getArtifacts');
      const ids = Number(/ATTEST_MAX_IDS_PER_BATCH` \(default (\d+)\)/.exec(String(getArtifacts?.raw.description))?.[1]);
      const list = (n: number) => Array.from({ length: n }, () => randomUUID()).join(',');
      assert.equal((await fetch(`${server.url}/api/v1/artifact/artifacts?ids=${list(ids)}`, { headers })).status, 200);
      assert.equal((await fetch(`${server.url}/api/v1/artifact/artifacts?ids=${list(ids + 1)}`, { headers })).status, 400);
    });

    test("the server's route table equals the document, both ways", () => {
      const routed = routeTable(server.app.printRoutes({ commonPrefix: false }));
      const documented = documentRoutes(served);
      const versioned = new Set([...routed].filter((r) => r.split(' ')[1]?.startsWith('/api/v1/')));
      assert.deepEqual([...versioned].filter((r) => !documented.has(r)).sort(), [], 'routed but not documented');
      assert.deepEqual([...documented].filter((r) => !versioned.has(r)).sort(), [], 'documented but not routed');
      const others = [...routed].filter((r) => !versioned.has(r) && !WEB_ROUTE.test(r)).sort();
      assert.deepEqual(others, [...UNVERSIONED_ROUTES].sort(), 'routes outside /api/v1 (no debug or introspection routes)');
      for (const path of [...WEB_PATHS, '/assets/*']) assert.ok(server.app.hasRoute({ method: 'GET', url: path }), `hasRoute GET ${path}`);
      for (const route of documented) {
        const [method, url] = route.split(' ') as [string, string];
        assert.ok(server.app.hasRoute({ method: method as 'GET', url }), `hasRoute ${route}`);
      }
    });

    test('every documented operation reaches its route: no key gives 401 (or an answer), never the unknown-route 404/405', async () => {
      for (const op of operationsOf(served)) {
        const path = op.path.replace(/\{(\w+)\}/g, (_, name: string) =>
          name === 'email' ? 'probe@example.test' : '00000000-0000-4000-8000-000000000000',
        );
        const response = await fetch(`${server.url}/api/v1${path}`, {
          method: op.method,
          headers: { accept: 'application/json', ...(op.body ? { 'content-type': 'application/json' } : {}) },
          body: op.body ? '{}' : undefined,
        });
        const problem = response.status >= 400 ? ((await response.json()) as { code: string; detail: string }) : undefined;
        if (op.authz?.scope !== 'public') {
          assert.equal(response.status, 401, `${op.method} ${op.path}: ${JSON.stringify(problem)}`);
        } else {
          assert.ok(
            response.status !== 405 && !(response.status === 404 && /^No route/.test(problem?.detail ?? '')),
            `${op.method} ${op.path}`,
          );
          assert.ok(response.status < 500, `${op.method} ${op.path}: ${response.status}`);
        }
      }
    });
  });
}
