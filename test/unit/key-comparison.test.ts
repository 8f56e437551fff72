import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { readFileSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { after, before, describe, mock, test } from 'node:test';
import ts from 'typescript';
import { digestsMatch, emailDigest, generateKey, keyDigest } from '../../src/server/security/api-key.ts';

// AUTH-4: after the indexed lookup by digest, the key (or the old-format e-mail) is
// confirmed with crypto.timingSafeEqual on two 32-byte digests, for a hit and a miss alike (a miss
// compares against a dummy digest), and no secret is ever compared with `===`. The API test
// `test/api/auth.test.ts` checks the same through real requests.

describe('digestsMatch (AUTH-4)', () => {
  let spy: ReturnType<typeof mock.method<typeof crypto, 'timingSafeEqual'>>;
  before(() => {
    spy = mock.method(crypto, 'timingSafeEqual');
    // api-key.ts imports timingSafeEqual by name; this points that binding at the spy.
    syncBuiltinESMExports();
  });
  after(() => {
    spy.mock.restore();
    syncBuiltinESMExports();
  });

  /** Calls digestsMatch and answers its result with the one timingSafeEqual call it made. */
  function compare(actual: string, expected: string | null | undefined): { result: boolean; a: Buffer; b: Buffer } {
    spy.mock.resetCalls();
    const result = digestsMatch(actual, expected);
    assert.equal(spy.mock.callCount(), 1, `timingSafeEqual ran ${spy.mock.callCount()} times`);
    const [a, b] = (spy.mock.calls[0]?.arguments ?? []) as unknown[];
    assert.ok(Buffer.isBuffer(a) && Buffer.isBuffer(b), 'it compares buffers');
    assert.equal(a.length, 32, 'the presented digest is 32 bytes');
    assert.equal(b.length, 32, 'the stored digest is 32 bytes');
    return { result, a, b };
  }

  const key = generateKey('standard');
  const digest = keyDigest(key, 'standard');
  const flip = (hex: string, at: number) => hex.slice(0, at) + (hex[at] === '0' ? '1' : '0') + hex.slice(at + 1);

  test('a hit compares the two equal digests in constant time', () => {
    const hit = compare(digest, digest);
    assert.equal(hit.result, true);
    assert.ok(hit.a.equals(hit.b));
    assert.equal(compare(emailDigest('Ada@Example.Test '), emailDigest('ada@example.test')).result, true, 'e-mails are normalised');
  });

  test('a miss in the first or the last byte runs the same comparison', () => {
    for (const at of [0, 63]) {
      const miss = compare(digest, flip(digest, at));
      assert.equal(miss.result, false);
      assert.ok(!miss.a.equals(miss.b));
    }
    assert.equal(compare(emailDigest('ada@example.test'), emailDigest('eve@example.test')).result, false);
  });

  test('no stored digest (no such key) or a malformed one compares against a dummy of the same length, and never matches', () => {
    for (const stored of [null, undefined, '', 'ab', `${digest}00`, 'z'.repeat(64), `${digest.slice(0, 62)}zz`]) {
      const miss = compare(digest, stored);
      assert.equal(miss.result, false, `stored ${String(stored).slice(0, 10)}`);
    }
  });
});

describe('no secret is compared with == or === (AUTH-4)', () => {
  const FILES = [
    'src/server/security/api-key.ts',
    'src/server/security/password.ts',
    'src/server/security/image-links.ts',
    'src/server/services/access/authenticate.ts',
  ];
  const SECRET = /digest|secret|token|password|hash|key_?value/i;
  const EQUALITY = new Set([
    ts.SyntaxKind.EqualsEqualsEqualsToken,
    ts.SyntaxKind.ExclamationEqualsEqualsToken,
    ts.SyntaxKind.EqualsEqualsToken,
    ts.SyntaxKind.ExclamationEqualsToken,
  ]);
  /**
   * Comparisons that name a secret-looking value without comparing secret content, each with why:
   * - the CRC32 check recomputes the checksum from the presented token itself; no stored secret takes part;
   * - `expected !== DUMMY_DIGEST` is object identity (was a stored digest there at all), not content.
   */
  const ALLOWED = new Set(['checksum(token.slice(0, split)) === token.slice(split)', 'expected !== DUMMY_DIGEST']);

  /** A side that cannot carry a secret: a literal, `undefined`, or a `.length`. */
  const harmless = (node: ts.Expression): boolean =>
    ts.isLiteralExpression(node) ||
    node.kind === ts.SyntaxKind.NullKeyword ||
    node.kind === ts.SyntaxKind.TrueKeyword ||
    node.kind === ts.SyntaxKind.FalseKeyword ||
    (ts.isIdentifier(node) && node.text === 'undefined') ||
    (ts.isPropertyAccessExpression(node) && node.name.text === 'length');

  function suspiciousComparisons(file: string, text: string): string[] {
    const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
    const found: string[] = [];
    const visit = (node: ts.Node) => {
      if (ts.isBinaryExpression(node) && EQUALITY.has(node.operatorToken.kind)) {
        const text = node.getText(source);
        const mentionsSecret = SECRET.test(node.left.getText(source)) || SECRET.test(node.right.getText(source));
        if (mentionsSecret && !harmless(node.left) && !harmless(node.right) && !ALLOWED.has(text)) {
          const { line } = source.getLineAndCharacterOfPosition(node.getStart(source));
          found.push(`${file}:${line + 1}: ${text}`);
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
    return found;
  }

  test('the authentication modules confirm secrets only with timingSafeEqual', () => {
    const found = FILES.flatMap((file) => suspiciousComparisons(file, readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8')));
    assert.deepEqual(found, []);
  });

  test('the check catches the comparisons it exists for, and lets checks of presence and length pass', () => {
    const caught = [
      'const ok = row.key_digest === digest;',
      'if (storedHash != presented) fail();',
      'return token !== expectedToken;',
      'if (password == user.password_hash) ok();',
    ];
    for (const line of caught) assert.equal(suspiciousComparisons('x.ts', line).length, 1, line);
    const passed = [
      'if (token === undefined) fail();',
      'if (digest.length !== 64) fail();',
      "if (scheme !== 'scrypt') fail();",
      'a === b;',
    ];
    for (const line of passed) assert.deepEqual(suspiciousComparisons('x.ts', line), [], line);
  });
});
