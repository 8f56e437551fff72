import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { ERRORS, problemType } from '../../src/server/errors.ts';

describe('docs/errors.md', () => {
  const doc = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8');

  test('documents every error code of the catalogue with its status', () => {
    for (const [code, { status }] of Object.entries(ERRORS)) {
      assert.match(doc, new RegExp(`\\| \`${code}\` \\| ${status} \\|`), `${code} (${status}) is missing from docs/errors.md`);
    }
  });

  test('documents no code the catalogue does not have', () => {
    const documented = [...doc.matchAll(/^\| `([A-Z_]+)` \|/gm)].map((m) => m[1]);
    assert.deepEqual(
      documented.filter((c) => !(c && c in ERRORS)),
      [],
    );
  });

  test('problem types are stable URNs independent of the host', () => {
    assert.equal(problemType('NOT_FOUND'), 'urn:attest:problem:not-found');
  });
});

describe('.env.example and docs/configuration.md', () => {
  const example = readFileSync(new URL('../../.env.example', import.meta.url), 'utf8');
  const configDoc = readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8');
  const source = readFileSync(new URL('../../src/server/config.ts', import.meta.url), 'utf8');
  const variables = [...new Set([...source.matchAll(/'((?:ATTEST_[A-Z_]+)|PORT|HOST)'/g)].map((m) => m[1] as string))];

  test('list every variable the configuration reads', () => {
    assert.ok(variables.length > 20);
    for (const name of variables) {
      assert.match(example, new RegExp(`^${name}=`, 'm'), `${name} is missing from .env.example`);
      assert.ok(configDoc.includes(`\`${name}\``), `${name} is missing from docs/configuration.md`);
    }
  });
});
