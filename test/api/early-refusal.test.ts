import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { DIALECTS } from '../helpers/dialects.ts';
import { jsonHeaders, rawRequest } from '../helpers/http.ts';
import { assertProblem } from '../helpers/problems.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

// Bad input refused early and precisely: deep bodies, long pointers, early refusals that close.

/** `{"a":{"a":…{"a":"x\u0000y"}…}}`, `depth` objects deep. */
const nestedWithNul = (depth: number): string => `${'{"a":'.repeat(depth)}"x\\u0000y"${'}'.repeat(depth)}`;

for (const dialect of DIALECTS) {
  describe(`[${dialect}] bad input refused early and precisely`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer(dialect);
    });
    after(() => server.close());

    describe('POST /projects', () => {
      test('a NUL 5 000 levels deep is a 400 INVALID_INPUT naming the field, not MALFORMED_JSON', async () => {
        const response = await rawRequest(`${server.url}/api/v1/projects`, {
          method: 'POST',
          headers: jsonHeaders(server.admin.key),
          body: nestedWithNul(5000),
        });
        assertProblem(response, 400, 'INVALID_INPUT');
        const [error] = response.json.errors as { pointer: string; message: string }[];
        assert.match(error?.pointer ?? '', /^\/body\/a\/a\/a/);
        assert.match(error?.message ?? '', /NUL/);
      });

      test('a pointer 1 000 levels deep is echoed cut to 200 characters, ending in an ellipsis', async () => {
        const response = await rawRequest(`${server.url}/api/v1/projects`, {
          method: 'POST',
          headers: jsonHeaders(server.admin.key),
          body: nestedWithNul(1000),
        });
        assertProblem(response, 400, 'INVALID_INPUT');
        const [error] = response.json.errors as { pointer: string }[];
        const pointer = error?.pointer ?? '';
        assert.equal(pointer.length, 200, `pointer of ${pointer.length} characters`);
        assert.ok(pointer.startsWith('/body/a/a/'));
        assert.ok(pointer.endsWith('…'));
        assert.ok((response.json.detail as string).length < 300, 'the detail does not repeat the whole pointer either');
      });

      test('a validation error at a long property name is cut the same way', async () => {
        // A body that parses, holds no NUL, and fails the schema at a long path: an unknown property with a long name.
        const response = await rawRequest(`${server.url}/api/v1/projects`, {
          method: 'POST',
          headers: jsonHeaders(server.admin.key),
          body: JSON.stringify({ key: 'LONG', name: 'p', ['x'.repeat(1000)]: 1 }),
        });
        assertProblem(response, 400, 'INVALID_INPUT');
        const [error] = response.json.errors as { pointer: string }[];
        assert.equal(error?.pointer.length, 200);
        assert.ok(error?.pointer.startsWith('/body/xxx'));
        assert.ok(error?.pointer.endsWith('…'));
      });
    });
  });
}
