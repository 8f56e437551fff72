import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, test } from 'node:test';
import { bodyFingerprint, canonicalJson, fingerprintMatches } from '../../src/server/services/triage/fingerprint.ts';

describe('canonicalJson (RFC 8785)', () => {
  test('sorts members by UTF-16 code units at every depth, as the RFC example does', () => {
    // RFC 8785 section 3.2.3's sorting example (keys in UTF-16 order: "\r", "1", "\u0080", "ö", "€", "😀", "דּ").
    const input = JSON.parse(
      '{"\\u20ac":"Euro Sign","\\r":"Carriage Return","\\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One","\\ud83d\\ude00":"Emoji: Grinning Face","\\u0080":"Control","\\u00f6":"Latin Small Letter O With Diaeresis"}',
    );
    const keys = Object.keys(JSON.parse(canonicalJson(input)) as object);
    // Integer-like keys always come first in a JS object, so compare the text instead.
    assert.equal(
      canonicalJson(input),
      '{"\\r":"Carriage Return","1":"One","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis","\u20ac":"Euro Sign","\ud83d\ude00":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}',
    );
    assert.equal(keys.length, 7);
  });

  test('writes numbers, literals and nesting as the RFC prescribes, without whitespace', () => {
    // RFC 8785 section 3.2.2's example, minus the numbers JSON.parse already normalises identically.
    const input = JSON.parse(
      '{ "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001], "string": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/", "literals": [null, true, false] }',
    );
    assert.equal(
      canonicalJson(input),
      '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}',
    );
    assert.equal(canonicalJson({ b: [{ z: 1, a: 2 }], a: {} }), '{"a":{},"b":[{"a":2,"z":1}]}');
  });
});

describe('bodyFingerprint', () => {
  test('is the same for the same content in any key order, and differs for other content', () => {
    const a = { idempotencyKey: 'k', steps: [{ title: 't', status: 'passed' }] };
    const b = { steps: [{ status: 'passed', title: 't' }], idempotencyKey: 'k' };
    assert.equal(bodyFingerprint(a), bodyFingerprint(b));
    assert.notEqual(bodyFingerprint(a), bodyFingerprint({ ...a, steps: [{ title: 't', status: 'failed' }] }));
    // Array order is content.
    assert.notEqual(bodyFingerprint({ x: [1, 2] }), bodyFingerprint({ x: [2, 1] }));
  });

  test('a fingerprint stored before the upgrade (SHA-256 of JSON.stringify) still matches the same bytes resent', () => {
    const body = { steps: [{ title: 't', status: 'passed' }], idempotencyKey: 'k' };
    const legacy = createHash('sha256').update(JSON.stringify(body)).digest('hex');
    assert.notEqual(legacy, bodyFingerprint(body), 'the two forms differ for this body');
    assert.equal(fingerprintMatches(legacy, body), true);
    assert.equal(fingerprintMatches(bodyFingerprint(body), { idempotencyKey: 'k', steps: [{ status: 'passed', title: 't' }] }), true);
    assert.equal(fingerprintMatches(legacy, { ...body, idempotencyKey: 'other' }), false);
    assert.equal(fingerprintMatches(null, body), false);
  });
});
