import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, test } from 'node:test';
import { parseFrame, projectFrames, relativeFile } from '../../src/server/failures/frames.ts';
import { LIMITS, normaliseFailure } from '../../src/server/failures/normalise.ts';
import { placeholders, stripAnsi, templatePath, withoutReceived } from '../../src/server/failures/placeholders.ts';
import { TABLE } from './failure-messages.ts';

// TRIAGE-1: the failure normaliser, on a table of real messages and rule by rule.

describe('the table of real failure messages (TRIAGE-1)', () => {
  const results = TABLE.map((entry) => ({ entry, result: normaliseFailure(entry) }));

  test('holds at least 60 messages from at least 6 frameworks', () => {
    assert.ok(TABLE.length >= 60, `${TABLE.length} entries`);
    assert.ok(new Set(TABLE.map((e) => e.framework)).size >= 6);
  });

  test('messages of one group share a fingerprint: they differ only in numbers, ids, times, ports, temp paths or lines', () => {
    const byGroup = new Map<string, Set<string>>();
    for (const { entry, result } of results) byGroup.set(entry.group, (byGroup.get(entry.group) ?? new Set()).add(result.fingerprint));
    const split = [...byGroup].filter(([, fingerprints]) => fingerprints.size > 1).map(([group]) => group);
    assert.deepEqual(split, []);
    assert.ok([...byGroup.values()].length < TABLE.length / 1.4, 'most groups have more than one message');
  });

  test('messages of different groups do not: another assertion, expected value, target or place in the code', () => {
    const owner = new Map<string, string>();
    const merged: string[] = [];
    for (const { entry, result } of results) {
      const group = owner.get(result.fingerprint);
      if (group !== undefined && group !== entry.group) merged.push(`${group} = ${entry.group}`);
      owner.set(result.fingerprint, entry.group);
    }
    assert.deepEqual(merged, []);
  });

  test('the signature (category, action, target) is as expected for most of the table', () => {
    const checked = results.filter(({ entry }) => entry.signature !== undefined);
    assert.ok(checked.length >= TABLE.length * 0.75, `${checked.length} of ${TABLE.length} checked`);
    for (const { entry, result } of checked) assert.deepEqual(result.signature, entry.signature, entry.group);
  });

  test('every category is met, and fingerprints are hex SHA-256', () => {
    assert.deepEqual([...new Set(results.map(({ result }) => result.signature.category))].sort(), [
      'assertion',
      'crash',
      'element',
      'network',
      'other',
      'timeout',
    ]);
    for (const { result } of results) assert.match(result.fingerprint, /^[0-9a-f]{64}$/);
  });

  test('the title is the first lines of the normalised message, without the received value or the call log', () => {
    const first = results[0]?.result;
    assert.equal(
      first?.title,
      "Error: expect(locator).toHaveText(expected) failed\nLocator: getByRole('heading', { name: 'Greeting' })\nExpected string: \"Welcome, Alice\"",
    );
    assert.equal(normaliseFailure({ message: '' }).title, '(no message)');
  });

  test('the target is read from the trace when the message has none, and is part of the fingerprint; without one the fingerprint is that of the message and frames alone', () => {
    const junit = (locator: string) => ({
      message: 'Error: locator.click: Test timeout of 30000ms exceeded.',
      trace: `Call log:\n  - waiting for ${locator}\n\n    at /home/runner/work/shop/shop/tests/checkout.spec.ts:12:50`,
    });
    const pay = normaliseFailure(junit("getByRole('button', { name: 'Pay now' })"));
    const checkout = normaliseFailure(junit("getByRole('link', { name: 'Checkout' })"));
    assert.equal(pay.signature.target, "getByRole('button', { name: 'Pay now' })");
    assert.equal(checkout.signature.target, "getByRole('link', { name: 'Checkout' })");
    assert.notEqual(pay.fingerprint, checkout.fingerprint);
    assert.equal(pay.message, checkout.message);
    const base = (result: ReturnType<typeof normaliseFailure>) =>
      createHash('sha256')
        .update(`${result.message}\n\n${result.frames.map((frame) => `${frame.file} ${frame.function}`).join('\n')}`)
        .digest('hex');
    assert.equal(
      pay.fingerprint,
      createHash('sha256')
        .update(`${base(pay)}\ntarget ${pay.signature.target}`)
        .digest('hex'),
    );
    const untargeted = normaliseFailure({ message: 'TypeError: cart is undefined', trace: '    at pay (/ci/shop/src/cart.ts:3:1)' });
    assert.equal(untargeted.signature.target, null);
    assert.equal(untargeted.fingerprint, base(untargeted));
  });

  test("a JUnit message that is the first line of its body's error (without `Error: `) states what the whole error states", () => {
    // Playwright's JUnit reporter: the `message` attribute, and the body of the <failure> as the import's trace.
    const statement =
      'Error: expect(locator).toHaveText(expected) failed\n\nLocator: locator(\'h1\')\nExpected string: "Welcome"\nReceived string: "Hello"\nTimeout: 5000ms\n\nCall log:\n  - waiting for locator(\'h1\')\n';
    const stack = '    at /home/runner/work/shop/shop/tests/home.spec.ts:8:44';
    const live = normaliseFailure({ message: `${statement}\n${stack}` });
    const junit = normaliseFailure({
      message: 'expect(locator).toHaveText(expected) failed',
      trace: `  home.spec.ts:3:1 › greets › Check the heading \n\n    ${statement.replace(/\n/g, '\n    ')}\n${stack}`,
    });
    assert.equal(junit.message, live.message);
    assert.deepEqual(junit.frames, live.frames);
    assert.equal(junit.signature.target, "locator('h1')");
    assert.equal(junit.fingerprint, live.fingerprint);
    // A message the trace does not restate, or one of several lines, is the message as it was.
    const other = normaliseFailure({ message: 'expect(locator).toHaveText(expected) failed', trace: stack });
    assert.equal(other.message, 'expect(locator).toHaveText(expected) failed');
    const java = normaliseFailure({
      message: 'expected: <1> but was: <2>',
      trace: 'expected: <1> but was: <2>\n\tat com.acme.CartTest.adds(CartTest.java:9)',
    });
    assert.equal(java.message, normaliseFailure({ message: 'expected: <1> but was: <2>' }).message);
  });

  test('is deterministic: the same input gives the same answer', () => {
    for (const entry of TABLE.slice(0, 10)) assert.deepEqual(normaliseFailure(entry), normaliseFailure(entry));
  });
});

describe('each normalisation rule on its own', () => {
  test('ANSI colours, cursor moves and hyperlinks are stripped', () => {
    const esc = String.fromCharCode(27);
    assert.equal(stripAnsi(`${esc}[31mError${esc}[39m: ${esc}[2K${esc}]8;;http://x${esc}\\link${esc}]8;;${esc}\\`), 'Error: link');
  });

  test('numbers become <n>, but not inside names (h1, v8, ERR_HTTP2)', () => {
    assert.equal(
      placeholders('Expected 3 items, got 1,204 in h1 on v8 ERR_HTTP2 row-42'),
      'Expected <n> items, got <n> in h1 on v8 ERR_HTTP2 row-<n>',
    );
  });

  test('hex: 0x addresses, identity hashes, long hex words', () => {
    assert.equal(
      placeholders('object at 0x7f3a2c1b9d90, Object@6d06d69c, commit 866c76ca80f1'),
      'object at <hex>, Object@<hex>, commit <hex>',
    );
  });

  test('UUIDs', () => {
    assert.equal(placeholders('run 7F3A9C2E-1B4D-4E8A-9F00-3C2D1E0B9A77 failed'), 'run <uuid> failed');
  });

  test('ISO, HTTP, clock and slash dates and times', () => {
    assert.equal(
      placeholders(
        'at 2024-05-01T12:34:56.789Z, 2024-05-01 12:34:56+02:00, Wed, 01 May 2024 12:34:56 GMT, 12:34:56.1, 05/01/2024, 2024-05-01',
      ),
      'at <time>, <time>, <time>, <time>, <time>, <time>',
    );
  });

  test('durations in every unit', () => {
    assert.equal(
      placeholders('Timeout 30000ms, 5000 ms, 30s, 1.5s, 2 minutes, 10 seconds, >10.0s, 250µs'),
      'Timeout <duration>, <duration>, <duration>, <duration>, <duration>, <duration>, <duration>, <duration>',
    );
  });

  test('ports and addresses: loopback stays, other IPv4 addresses go, host names stay; file:line is not a port', () => {
    assert.equal(
      placeholders('127.0.0.1:5432 10.1.2.3:443 10.1.2.3 localhost:3000 db.internal:6379'),
      '127.0.0.1:<port> <ip>:<port> <ip> localhost:<port> db.internal:<port>',
    );
    assert.equal(placeholders('cart.spec.ts:42'), 'cart.spec.ts:<n>');
  });

  test('temp paths of Linux, macOS and Windows become <tmp>, keeping a plain file name', () => {
    assert.equal(placeholders("open '/tmp/upload-8f3a/report.json'"), "open '<tmp>/report.json'");
    assert.equal(placeholders('/var/folders/xy/k2_9bz1n4g/T/playwright-artifacts-Xy12/trace.zip'), '<tmp>/trace.zip');
    assert.equal(placeholders('C:\\Users\\ci\\AppData\\Local\\Temp\\tmp4F2A.tmp is missing'), '<tmp> is missing');
    assert.equal(placeholders('/tmp/pytest-of-ci/pytest-12/test_export0'), '<tmp>');
  });

  test('home folders and the given project roots are removed from paths', () => {
    assert.equal(placeholders('/Users/alice/code/shop/fixtures/a.json'), '~/code/shop/fixtures/a.json');
    assert.equal(placeholders('/srv/ci/shop/fixtures/a.json', ['/srv/ci/shop']), 'fixtures/a.json');
  });

  test('URLs become scheme, host and a path template: ids are placeholders, the query and fragment go', () => {
    assert.equal(
      placeholders('at http://user:pw@localhost:3000/orders/1234/items/7f3a9c2e-1b4d-4e8a-9f00-3c2d1e0b9a77?x=1#top.'),
      'at http://localhost:<port>/orders/<id>/items/<uuid>.',
    );
    assert.equal(placeholders('https://10.0.0.7/blobs/866c76ca80f1ab/raw'), 'https://<ip>/blobs/<hex>/raw');
    assert.equal(templatePath('/api/users/42?expand=true'), '/api/users/<id>');
  });

  test('the received side of a comparison is a value; the expected side is what the test states and stays', () => {
    assert.equal(withoutReceived('Received string: "Error 500"'), 'Received string: <value>');
    assert.equal(withoutReceived('  But was:  4'), '  But was: <value>');
    assert.equal(withoutReceived('Actual:   "Error"'), 'Actual: <value>');
    assert.equal(withoutReceived('expected: <200> but was: <500>'), 'expected: <200> but was: <value>');
    assert.equal(
      withoutReceived('Assert.AreEqual failed. Expected:<5>. Actual:<4>.'),
      'Assert.AreEqual failed. Expected:<5>. Actual:<value>.',
    );
    assert.equal(
      withoutReceived("AssertionError: expected 'Error 500' to be 'Welcome'"),
      "AssertionError: expected <value> to be 'Welcome'",
    );
    assert.equal(withoutReceived("assert 'Error 500' == 'Welcome'"), "assert <value> == 'Welcome'");
    assert.equal(withoutReceived('Expected string: "Welcome, Alice"'), 'Expected string: "Welcome, Alice"');
  });

  test('Playwright call logs, source excerpts, carets and the received side of a diff are not part of the message', () => {
    const { message } = normaliseFailure({
      message:
        'Error: expect(received).toBe(expected)\n\nExpected: 1\nReceived: 2\n- 1\n+ 2\n  12 |   x();\n> 13 |   expect(a).toBe(1);\n     |             ^\nCall log:\n  - waiting for x',
    });
    assert.equal(message, 'Error: expect(received).toBe(expected)\nExpected: <n>\nReceived: <value>\n- <n>');
  });
});

describe('stack frames', () => {
  test('are read from Node, Vitest, Java, .NET, Python and pytest lines, without line numbers', () => {
    assert.deepEqual(parseFrame('    at async Cart.add (/app/src/cart.ts:12:5)'), {
      language: 'js',
      function: 'Cart.add',
      file: '/app/src/cart.ts',
    });
    assert.deepEqual(parseFrame('    at file:///app/tests/a.spec.ts:3:1'), {
      language: 'js',
      function: '',
      file: 'file:///app/tests/a.spec.ts',
    });
    assert.deepEqual(parseFrame(' ❯ src/sum.test.ts:6:17'), { language: 'js', function: '', file: 'src/sum.test.ts' });
    assert.deepEqual(parseFrame('\tat com.acme.CartTest.adds(CartTest.java:42)'), {
      language: 'java',
      function: 'com.acme.CartTest.adds',
      file: 'CartTest.java',
    });
    assert.deepEqual(parseFrame('   at Shop.Cart.<Add>d__4.MoveNext() in C:\\src\\Shop\\Cart.cs:line 42'), {
      language: 'dotnet',
      function: 'Shop.Cart.Add',
      file: 'C:\\src\\Shop\\Cart.cs',
    });
    assert.deepEqual(parseFrame('  File "/app/tests/test_a.py", line 3, in test_a'), {
      language: 'python',
      function: 'test_a',
      file: '/app/tests/test_a.py',
    });
    assert.deepEqual(parseFrame('tests/test_a.py:3: in test_a'), { language: 'python', function: 'test_a', file: 'tests/test_a.py' });
    assert.equal(parseFrame('Expected: 5'), undefined);
  });

  test('frames of dependencies, runtimes and test frameworks are dropped; the first 3 project frames are kept, innermost first', () => {
    const trace = [
      '    at Object.toBe (/ci/shop/node_modules/expect/build/index.js:1:1)',
      '    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)',
      '    at a (/ci/shop/src/a.ts:1:1)',
      '    at b (/ci/shop/src/b.ts:2:2)',
      '    at c (/ci/shop/src/c.ts:3:3)',
      '    at d (/ci/shop/src/d.ts:4:4)',
    ];
    assert.deepEqual(projectFrames(trace, ['/ci/shop'], 3), [
      { file: 'src/a.ts', function: 'a' },
      { file: 'src/b.ts', function: 'b' },
      { file: 'src/c.ts', function: 'c' },
    ]);
    const python = [
      '  File "/ci/shop/tests/test_a.py", line 3, in test_a',
      '  File "/usr/lib/python3.12/site-packages/x/y.py", line 9, in f',
      '  File "/ci/shop/shop/a.py", line 5, in g',
    ];
    assert.deepEqual(projectFrames(python, ['/ci/shop'], 3), [
      { file: 'shop/a.py', function: 'g' },
      { file: 'tests/test_a.py', function: 'test_a' },
    ]);
  });

  test('paths are made relative: project roots, CI workspaces, then the first usual project folder', () => {
    assert.equal(relativeFile('/srv/build/7/shop/lib/a.ts', ['/srv/build/7/shop']), 'lib/a.ts');
    assert.equal(relativeFile('/home/runner/work/shop/shop/lib/a.ts', []), 'lib/a.ts');
    assert.equal(relativeFile('D:\\a\\shop\\shop\\lib\\a.ts', []), 'lib/a.ts');
    assert.equal(relativeFile('file:///Users/alice/code/shop/tests/a.spec.ts', []), 'tests/a.spec.ts');
    assert.equal(relativeFile('./tests/a.spec.ts', []), 'tests/a.spec.ts');
  });
});

describe('bounded input', () => {
  test('a 1 MB message with a 10,000-line stack is read only up to the limits, and what is kept is bounded', () => {
    const message = `Error: boom ${'x'.repeat(1024 * 1024)}`;
    const trace = Array.from({ length: 10_000 }, (_, i) => `    at f${i} (/ci/shop/src/f${i}.ts:${i}:1)`).join('\n');
    const result = normaliseFailure({ message, trace, projectRoots: ['/ci/shop'] });
    assert.ok(result.message.length <= LIMITS.messageLines * (LIMITS.lineChars + 1));
    assert.ok(result.title.length <= LIMITS.titleChars);
    assert.equal(result.frames.length, LIMITS.frames);
    assert.deepEqual(result.frames[0], { file: 'src/f0.ts', function: 'f0' });
    // The same head with a different far end of the message gives the same answer: the rest is never read.
    const other = normaliseFailure({
      message: `${message.slice(0, LIMITS.messageChars)}${'y'.repeat(500_000)}`,
      trace,
      projectRoots: ['/ci/shop'],
    });
    assert.equal(other.fingerprint, result.fingerprint);
  });

  test('a long line is cut before its placeholders are made (some rules take time with the square of its length), and what is kept is bounded', () => {
    // One 8 KiB line each: a dotted name that never ends in a port, a scheme that never reaches `://`.
    for (const message of ['a.'.repeat(4000), 'a1-'.repeat(2667)]) {
      const result = normaliseFailure({ message });
      assert.equal(result.message.split('\n').length, 1);
      assert.ok(result.message.length <= LIMITS.lineChars, `${result.message.length} characters kept`);
      assert.ok(result.title.length <= LIMITS.titleChars);
      // Only the head of the line is read: another far end gives the same group.
      const other = normaliseFailure({ message: `${message.slice(0, LIMITS.lineReadChars)}${'zz'.repeat(2000)}` });
      assert.equal(other.fingerprint, result.fingerprint);
    }
    // A line whose ids shorten to placeholders still fills what is kept, the same on every run.
    const ids = (seed: number) => Array.from({ length: 40 }, (_, i) => `order ${seed * 1000 + i * 7} failed`).join(', ');
    const a = normaliseFailure({ message: ids(1) });
    assert.equal(a.message.length, LIMITS.lineChars);
    assert.equal(normaliseFailure({ message: ids(123_456) }).fingerprint, a.fingerprint);
  });

  test('a message of many lines keeps at most the first lines that state the failure', () => {
    const message = Array.from({ length: 5000 }, (_, i) => `line ${i} of the story`).join('\n');
    const result = normaliseFailure({ message });
    assert.equal(result.message.split('\n').length, LIMITS.messageLines);
    assert.equal(result.title.split('\n').length, LIMITS.titleLines);
  });
});
