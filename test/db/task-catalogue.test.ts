import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { startTestServer, type TestServer } from '../helpers/server.ts';

// One catalogue of background task kinds (CODE-3, SCALE-5): what the running server registered is what
// services/background-tasks.ts says it registers, no more and no fewer.

const CATALOGUE = new URL('../../src/server/services/background-tasks.ts', import.meta.url);

/** The kinds the catalogue's comment lists, as `- \`kind\`` (or `, \`kind\``) items. */
function documentedKinds(): string[] {
  const text = readFileSync(CATALOGUE, 'utf8');
  return [...text.matchAll(/^ \* - (.+?): /gm)].flatMap((m) => [...(m[1] as string).matchAll(/`([a-z-]+)`/g)].map((k) => k[1] as string));
}

describe('the background task catalogue', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer('sqlite');
  });
  after(() => server.close());

  test('the server registers exactly the kinds the catalogue documents', () => {
    const registered = server.app.attest.background.registeredKinds();
    assert.ok(documentedKinds().length >= 10, `found ${documentedKinds().join(', ')}`);
    assert.deepEqual([...registered].sort(), documentedKinds().sort());
  });
});
