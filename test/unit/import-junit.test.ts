import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { looksLikeJUnit, parseJUnit } from '../../src/import/junit.ts';
import { fullNameOf } from '../../src/import/junit-case.ts';
import { MAX_CELL_CHARS, normaliseTimestamp, secondsToMs } from '../../src/import/junit-values.ts';
import { decodeEntities } from '../../src/import/junit-xml.ts';
import { type ImportedCase, type ImportedReport, ImportInputError } from '../../src/import/model.ts';

// The fixtures and their counts are described in test/fixtures/junit/README.md.

const FIXTURES = new URL('../fixtures/junit/', import.meta.url);
const bytes = (name: string) => new Uint8Array(readFileSync(new URL(name, FIXTURES)));
const parse = (name: string) => parseJUnit(name, bytes(name));
const xml = (text: string) => new TextEncoder().encode(text);

function counts(report: ImportedReport) {
  const found = { passed: 0, failed: 0, broken: 0, skipped: 0 };
  for (const c of report.cases) found[c.verdict] += 1;
  return found;
}

function byName(report: ImportedReport, name: string): ImportedCase {
  // The final attempt: a Surefire rerun's earlier attempts come before it (TRIAGE-11).
  const found = report.cases.findLast((c) => c.name === name);
  assert.ok(found, `no case named ${name} in ${report.file}`);
  return found;
}

const step = (c: ImportedCase) => c.steps[0]!;
const cellText = (cells: { name: string; text: string }[], name: string) => cells.find((cell) => cell.name === name)?.text;

const EXPECTED: Record<string, { passed: number; failed: number; broken: number; skipped: number }> = {
  'node.xml': { passed: 3, failed: 2, broken: 0, skipped: 1 },
  'jest.xml': { passed: 3, failed: 2, broken: 0, skipped: 1 },
  'mocha.xml': { passed: 3, failed: 2, broken: 0, skipped: 1 },
  'vitest.xml': { passed: 3, failed: 2, broken: 0, skipped: 1 },
  'pytest.xml': { passed: 3, failed: 1, broken: 1, skipped: 1 },
  'pytest-xunit2.xml': { passed: 3, failed: 1, broken: 1, skipped: 1 },
  // Surefire's reruns are attempts of their own (TRIAGE-11): one flakyFailure and two rerunFailures.
  'surefire.xml': { passed: 3, failed: 5, broken: 1, skipped: 1 },
  'go-junit-report.xml': { passed: 2, failed: 2, broken: 1, skipped: 1 },
  'jenkins-attachments.xml': { passed: 2, failed: 1, broken: 0, skipped: 0 },
  'nested.xml': { passed: 2, failed: 1, broken: 1, skipped: 1 },
};

describe('JUnit fixtures: verdict counts and the shape of every case', () => {
  for (const [file, expected] of Object.entries(EXPECTED)) {
    test(file, () => {
      const report = parse(file);
      assert.equal(report.format, 'junit');
      assert.deepEqual(counts(report), expected);
      assert.deepEqual(report.warnings, []);
      const attempts = new Map<string, number>();
      for (const c of report.cases) {
        assert.equal(c.attempt, attempts.get(c.fullName) ?? 0, `${c.fullName}: attempts in report order`);
        attempts.set(c.fullName, c.attempt + 1);
        assert.equal(c.steps.length, 1, `${c.fullName} has exactly one step`);
        assert.equal(step(c).title, c.name);
        assert.equal(step(c).status, c.verdict);
        assert.equal(step(c).durationMs, c.durationMs);
        for (const cell of [...c.cells, ...step(c).cells]) assert.notEqual(cell.text.trim(), '', `${c.fullName}: empty ${cell.name} cell`);
      }
    });
  }
});

describe('JUnit dialects produced by real tools', () => {
  test("node's test runner: nested describe suites name the case, the placeholder classname does not", () => {
    const report = parse('node.xml');
    assert.deepEqual(
      report.cases.map((c) => c.fullName),
      [
        'Checkout › cart › adds an item',
        'Checkout › cart › computes the total',
        'Checkout › cart › applies a discount',
        'Checkout › cart › talks to the payment service',
        'Checkout › cart › exports the receipt as PDF',
        'Login › shows the login form',
      ],
    );
    // TCM-6: the enclosing suites file each case; node's placeholder classname is no folder.
    assert.deepEqual(byName(report, 'adds an item').suite, ['Checkout', 'cart']);
    assert.deepEqual(byName(report, 'shows the login form').suite, ['Login']);
    const failed = byName(report, 'applies a discount');
    assert.match(cellText(step(failed).cells, 'failure') ?? '', /testCodeFailure: a 10% discount is applied/);
    assert.match(cellText(step(failed).cells, 'failure') ?? '', /AssertionError \[ERR_ASSERTION\]/);
    assert.equal(cellText(step(byName(report, 'exports the receipt as PDF')).cells, 'skipped'), 'PDF export is not built yet');
  });

  test('jest-junit: the name already holds the classname; suite output goes to the first case only', () => {
    const report = parse('jest.xml');
    assert.equal(report.name, 'jest tests');
    const first = report.cases[0]!;
    assert.equal(first.fullName, 'Checkout cart adds an item');
    assert.match(cellText(first.cells, 'suite stdout') ?? '', /computing total for 2 items/);
    assert.ok(report.cases.slice(1).every((c) => c.cells.length === 0));
    assert.deepEqual(first.labels, { build: '1234', branch: 'main', file: 'checkout.test.js', browser: 'chromium', invocations: '1' });
    // No message attribute: the error is the body's first line.
    assert.equal(
      step(byName(report, 'Checkout cart applies a discount')).error,
      'Error: expect(received).toBe(expected) // Object.is equality',
    );
    assert.match(report.startedAt ?? '', /Z$/);
  });

  test('mocha-junit-reporter: captured console output and the attachment it writes into system-out', () => {
    const report = parse('mocha.xml');
    assert.equal(report.name, 'Checkout app');
    const total = byName(report, 'Checkout cart computes the total');
    assert.equal(cellText(step(total).cells, 'stdout'), 'computing total for 2 items');
    assert.equal(cellText(step(total).cells, 'stderr'), 'warning: currency not set, using EUR');
    const login = byName(report, 'Login shows the login form');
    assert.equal(login.fullName, 'Login shows the login form');
    assert.deepEqual(step(login).attachments, [{ name: 'login.png', path: 'screenshots/login.png', kind: 'screenshot' }]);
    assert.equal(cellText(step(login).cells, 'stdout'), 'login form rendered');
    assert.equal(
      step(byName(report, 'Checkout cart talks to the payment service')).error,
      "Cannot read properties of undefined (reading 'charge')",
    );
    assert.deepEqual(login.labels, { build: '1234', branch: 'main' });
  });

  test('vitest: file classname before the ">"-joined name, annotations as labels, per-test output', () => {
    const report = parse('vitest.xml');
    const first = report.cases[0]!;
    assert.equal(first.fullName, 'checkout.test.mjs › Checkout > cart > adds an item');
    assert.equal(first.labels.browser, 'chromium');
    assert.equal(cellText(step(byName(report, 'Checkout > cart > computes the total')).cells, 'stdout'), 'computing total for 2 items');
    const login = byName(report, 'Login > shows the login form');
    assert.deepEqual(
      step(login).attachments.map((a) => a.path),
      ['screenshots/login.png'],
    );
    assert.equal(cellText(step(login).cells, 'stdout'), undefined, 'the attachment line was the whole output');
    const failure = cellText(step(byName(report, 'Checkout > cart > applies a discount')).cells, 'failure') ?? '';
    assert.match(failure, /^AssertionError: expected 100 to be 90/);
  });

  test('pytest (xunit1): setup error is broken, properties, file and line, empty capture banners dropped', () => {
    const report = parse('pytest.xml');
    const added = byName(report, 'test_adds_an_item');
    assert.equal(added.fullName, 'test_checkout.TestCheckout.TestCart › test_adds_an_item');
    assert.deepEqual(added.labels, {
      hostname: added.labels.hostname,
      build: '1234',
      branch: 'main',
      file: 'test_checkout.py',
      line: '23',
      browser: 'chromium',
    });
    assert.deepEqual(step(added).cells, []);
    const broken = byName(report, 'test_talks_to_the_payment_service');
    assert.equal(broken.verdict, 'broken');
    assert.equal(step(broken).error, 'failed on setup with "ConnectionError: payment sandbox unreachable at 127.0.0.1:9"');
    assert.match(cellText(step(broken).cells, 'error') ?? '', /E {7}ConnectionError: payment sandbox unreachable/);
    const login = byName(report, 'test_shows_the_login_form');
    assert.equal(login.fullName, 'test_checkout.TestLogin › test_shows_the_login_form');
    assert.deepEqual(step(login).attachments, [{ name: 'login.png', path: 'screenshots/login.png', kind: 'screenshot' }]);
    assert.deepEqual(step(login).cells, []);
    assert.match(cellText(step(byName(report, 'test_computes_the_total')).cells, 'stderr') ?? '', /warning: currency not set, using EUR/);
    assert.match(
      cellText(step(byName(report, 'test_exports_the_receipt_as_pdf')).cells, 'skipped') ?? '',
      /^PDF export is not built yet\n/,
    );
  });

  test('pytest (xunit2): suite properties, and record_property written despite its warning', () => {
    const report = parse('pytest-xunit2.xml');
    const added = byName(report, 'test_adds_an_item');
    assert.equal(added.fullName, 'test_checkout.TestCheckout.TestCart › test_adds_an_item');
    assert.equal(added.labels.build, '1234');
    assert.equal(added.labels.browser, 'chromium');
    assert.equal(added.labels.file, undefined, 'xunit2 has no file/line attributes');
    assert.equal(step(byName(report, 'test_applies_a_discount')).error?.split('\n')[0], 'AssertionError: a 10% discount is applied');
  });
});

describe('JUnit dialects written by hand from their schemas', () => {
  test('Surefire: thousands separators in time, flaky reruns pass, rerun failures kept', () => {
    const report = parse('surefire.xml');
    assert.equal(report.startedAt, undefined, 'Surefire writes no timestamp');
    const flaky = byName(report, 'reservesStock');
    assert.equal(flaky.verdict, 'passed');
    // Each rerun is an attempt before the case itself (TRIAGE-11): failed, then passed is flaky.
    const attemptsOf = (name: string) => report.cases.filter((c) => c.name === name).map((c) => [c.attempt, c.verdict]);
    assert.deepEqual(attemptsOf('reservesStock'), [
      [0, 'failed'],
      [1, 'passed'],
    ]);
    assert.equal(
      step(report.cases.find((c) => c.name === 'reservesStock') as (typeof report.cases)[number]).error,
      'expected: <true> but was: <false>',
    );
    assert.deepEqual(attemptsOf('syncsInventory'), [
      [0, 'failed'],
      [1, 'failed'],
      [2, 'failed'],
    ]);
    const flakyText = cellText(step(flaky).cells, 'flaky') ?? '';
    assert.match(flakyText, /^org\.opentest4j\.AssertionFailedError: expected: <true> but was: <false>\n/);
    assert.match(flakyText, /stdout:\nstock service answered 503/);
    const slow = byName(report, 'syncsInventory');
    assert.equal(slow.verdict, 'failed');
    assert.equal(slow.durationMs, 1_203_412);
    assert.match(cellText(step(slow).cells, 'rerun') ?? '', /retry 1 of 2[\s\S]*retry 2 of 2/);
    const npe = byName(report, 'talksToThePaymentService');
    assert.equal(npe.verdict, 'broken');
    assert.match(step(npe).error ?? '', /^Cannot invoke "com\.example\.shop\.Gateway\.charge\(int\)"/);
    assert.equal(npe.fullName, 'com.example.shop.CartTest › talksToThePaymentService');
    assert.equal(npe.labels['java.version'], '17.0.10');
  });

  test('go-junit-report: packages as suites, a package panic as an error case', () => {
    const report = parse('go-junit-report.xml');
    assert.equal(report.startedAt, '2026-03-02T09:14:02.000Z');
    assert.equal(cellText(report.cases[0]!.cells, 'suite stdout'), 'exit status 1');
    assert.equal(byName(report, 'TestCart/applies_a_discount').fullName, 'example.com/shop/cart › TestCart/applies_a_discount');
    assert.equal(
      cellText(step(byName(report, 'TestCart/applies_a_discount')).cells, 'failure'),
      'Failed\n    cart_test.go:21: total = 100, want 90',
    );
    const panic = byName(report, 'Failure');
    assert.equal(panic.verdict, 'broken');
    assert.equal(panic.startedAt, '2026-03-02T09:14:03.000Z');
    assert.match(cellText(step(panic).cells, 'error') ?? '', /^Runtime error\npanic: payment sandbox unreachable/);
  });

  test('Jenkins attachments: property and [[ATTACHMENT|…]] forms, entity decoding, case properties win', () => {
    const report = parse('jenkins-attachments.xml');
    assert.equal(report.name, 'ui-smoke');
    const form = byName(report, 'shows the login form');
    assert.deepEqual(step(form).attachments, [{ name: 'login.png', path: 'attachments/screenshots/login.png', kind: 'screenshot' }]);
    assert.equal(form.labels.browser, 'chromium');
    assert.equal(form.labels.attachment, undefined);
    const wrong = byName(report, 'rejects a wrong password');
    assert.equal(wrong.labels.browser, 'firefox');
    assert.equal(step(wrong).error, 'expected "Wrong password" & a red banner, saw none');
    assert.equal(cellText(step(wrong).cells, 'stdout'), 'navigating to /login as café-user\nsubmitted the form');
    assert.deepEqual(
      step(wrong).attachments.map((a) => a.path),
      ['attachments/screenshots/login.png'],
    );
    assert.equal(byName(report, 'remembers the user').labels.owner, 'team-auth');
    assert.deepEqual(
      report.cases.map((c) => c.startedAt),
      ['2026-03-02T09:14:02.000Z', '2026-03-02T09:14:06.200Z', '2026-03-02T09:14:09.300Z'],
    );
  });

  test('nested suites: the suite path names the case; the suite clock runs on through inner suites', () => {
    const report = parse('nested.xml');
    assert.deepEqual(
      report.cases.map((c) => [c.fullName, c.startedAt]),
      [
        ['e2e › Checkout › cart › adds an item', '2026-03-02T09:14:02.250Z'],
        ['e2e › Checkout › cart › applies a discount', '2026-03-02T09:14:02.750Z'],
        ['e2e › Checkout › pays by card', '2026-03-02T09:14:04.250Z'],
        ['e2e › Login › shows the login form', '2026-03-02T09:14:06.250Z'],
        ['e2e › Login › signs in with SSO', '2026-03-02T09:14:08.750Z'],
      ],
    );
    assert.deepEqual(report.cases[0]!.cells, [{ name: 'suite stdout', text: 'starting the web server on :8080' }]);
    assert.equal(step(byName(report, 'pays by card')).error, 'gateway timeout');
    assert.equal(cellText(step(byName(report, 'pays by card')).cells, 'error'), 'TimeoutError: gateway timeout');
    assert.deepEqual(report.cases[4]!.labels, { hostname: 'runner-1', build: '77', browser: 'webkit' });
  });
});

function rejects(text: string | Uint8Array, pattern: RegExp) {
  assert.throws(
    () => parseJUnit('bad.xml', typeof text === 'string' ? xml(text) : text),
    (error: unknown) => error instanceof ImportInputError && error.file === 'bad.xml' && pattern.test(error.message),
  );
}

describe('JUnit input that is refused', () => {
  test('a DTD (billion laughs) is refused before parsing', () => {
    const laughs = `<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>
<testsuite name="&lol2;"><testcase name="x"/></testsuite>`;
    rejects(laughs, /^bad\.xml: XML with a DTD or entity declarations is refused/);
    rejects('<!doctype testsuite><testsuite/>', /DTD/);
  });

  test('an external entity (XXE) is refused', () => {
    rejects(
      '<?xml version="1.0"?>\n<!DOCTYPE t [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>\n<testsuite><testcase name="&xxe;"/></testsuite>',
      /DTD or entity/,
    );
    rejects('<testsuite><!ENTITY x "y"><testcase name="a"/></testsuite>', /DTD or entity/);
  });

  test('malformed XML names the validator message, line and column', () => {
    rejects(
      '<?xml version="1.0"?>\n<testsuites>\n  <testsuite name="s">\n    <testcase name="a">\n  </testsuite>\n</testsuites>',
      /is not well-formed XML: Expected closing tag 'testcase'.*\(line 5, column \d+\)/,
    );
    rejects('<testsuite name=unquoted><testcase/></testsuite>', /not well-formed/);
    rejects('', /^bad\.xml: is not well-formed XML: .* \(line 1\)$/);
    rejects(new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0, 1, 2, 3]), /not well-formed/);
  });

  test('another XML root is not JUnit', () => {
    rejects('<html><body/></html>', /root element is <html>, not <testsuites> or <testsuite>/);
    rejects('<?xml version="1.0"?><assemblies><assembly/></assemblies>', /root element is <assemblies>/);
  });

  test('limits: suites nested more than 32 deep, elements more than 100 deep', () => {
    const suites = (n: number) => `${'<testsuite name="s">'.repeat(n)}<testcase name="x"/>${'</testsuite>'.repeat(n)}`;
    assert.equal(parseJUnit('ok.xml', xml(suites(32))).cases.length, 1);
    rejects(suites(33), /nests <testsuite> elements more than 32 deep/);
    rejects(`<testsuite>${'<a>'.repeat(200)}${'</a>'.repeat(200)}</testsuite>`, /more than 100 deep/);
  });

  test('truncations of a real report answer a report or an ImportInputError, nothing else', () => {
    const whole = bytes('pytest.xml');
    for (let end = 0; end < whole.length; end += 97) {
      try {
        parseJUnit('cut.xml', whole.subarray(0, end));
      } catch (error) {
        assert.ok(error instanceof ImportInputError, `cut at ${end}: ${error}`);
      }
    }
  });
});

describe('JUnit reading details', () => {
  test('a BOM is stripped, UTF-16 is decoded, and the sniff sees through the prolog', () => {
    const body = '<?xml version="1.0"?>\n<!-- made by hand -->\n<testsuite name="s"><testcase name="é"/></testsuite>';
    const bom = new Uint8Array([0xef, 0xbb, 0xbf, ...xml(body)]);
    assert.equal(parseJUnit('bom.xml', bom).cases[0]!.name, 'é');
    const utf16 = new Uint8Array([0xff, 0xfe, ...new Uint8Array(Buffer.from(body, 'utf16le'))]);
    assert.equal(parseJUnit('u16.xml', utf16).cases[0]!.name, 'é');
    assert.ok(looksLikeJUnit(bom));
    assert.ok(looksLikeJUnit(bytes('nested.xml')));
    assert.ok(looksLikeJUnit(xml('<testsuites/>')));
    assert.ok(looksLikeJUnit(xml('<!DOCTYPE x>\n<testsuite>')), 'sniffed as JUnit so that parsing can refuse it by name');
    assert.ok(!looksLikeJUnit(xml('<testsuitesx/>')));
    assert.ok(!looksLikeJUnit(xml('<html/>')));
    assert.ok(!looksLikeJUnit(xml('{"suites": []}')));
  });

  test('only XML escapes are decoded; CDATA stays as written', () => {
    assert.equal(
      decodeEntities('a &amp; b &lt;c&gt; &quot;&apos; &#233;&#x1F600; &nbsp; &foo; &#0;'),
      'a & b <c> "\' é😀 &nbsp; &foo; &#0;',
    );
    const report = parseJUnit(
      'e.xml',
      xml(
        '<testsuite><testcase name="a &amp;amp; b"><failure message="boom">x &amp; <![CDATA[&amp; <raw>]]></failure></testcase></testsuite>',
      ),
    );
    assert.equal(report.cases[0]!.name, 'a &amp; b');
    assert.equal(cellText(step(report.cases[0]!).cells, 'failure'), 'boom\nx & &amp; <raw>');
  });

  test('odd input: no name, no time, a NaN time, a testcase right under testsuites, huge output', () => {
    const huge = 'y'.repeat(MAX_CELL_CHARS + 10);
    const report = parseJUnit(
      'odd.xml',
      xml(
        `<testsuites><testcase time="abc"/><testsuite><testcase name=" " time=""><system-out>${huge}</system-out></testcase></testsuite></testsuites>`,
      ),
    );
    assert.deepEqual(
      report.cases.map((c) => [c.fullName, c.durationMs]),
      [
        ['(unnamed)', undefined],
        ['(unnamed) › (unnamed)', undefined],
      ],
    );
    const stdout = cellText(step(report.cases[1]!).cells, 'stdout') ?? '';
    assert.ok(stdout.startsWith('y'.repeat(MAX_CELL_CHARS)));
    assert.match(stdout, /\n… \[truncated: 10 more characters not imported\]$/);
    assert.deepEqual(parseJUnit('empty.xml', xml('<testsuites/>')).warnings, ['the report has no testcase']);
  });

  test('suite output with no case to hold it is a warning', () => {
    const report = parseJUnit('w.xml', xml('<testsuites><testsuite name="a"><system-err>boom</system-err></testsuite></testsuites>'));
    assert.deepEqual(report.warnings, [
      'suite "a" has output but no testcase to keep it with; it was not imported',
      'the report has no testcase',
    ]);
  });

  test('attachment kinds follow the extension', () => {
    const lines = ['a/shot.JPG', 'v.webm', 'trace.zip', 'bundle.zip', 'run.log', 'notes.txt', 'data.bin'].map((p) => `[[ATTACHMENT|${p}]]`);
    const report = parseJUnit(
      'k.xml',
      xml(`<testsuite><testcase name="t"><system-out>${lines.join('\n')}</system-out></testcase></testsuite>`),
    );
    assert.deepEqual(
      step(report.cases[0]!).attachments.map((a) => `${a.name}:${a.kind}`),
      ['shot.JPG:screenshot', 'v.webm:video', 'trace.zip:trace', 'bundle.zip:file', 'run.log:log', 'notes.txt:log', 'data.bin:file'],
    );
  });

  test('times, timestamps and the full-name rule', () => {
    assert.equal(secondsToMs('1,234.5'), 1_234_500);
    assert.equal(secondsToMs('0,25'), 250);
    assert.equal(secondsToMs('0.0004'), 0);
    assert.equal(secondsToMs('1e-3'), 1);
    assert.equal(secondsToMs('-1'), undefined);
    assert.equal(secondsToMs('NaN'), undefined);
    assert.equal(normaliseTimestamp('2026-11-25T20:05:08.583782'), '2026-11-25T20:05:08.583Z');
    assert.equal(normaliseTimestamp('2026-03-02T09:14:02+01:00'), '2026-03-02T08:14:02.000Z');
    assert.equal(normaliseTimestamp('2026-03-02 09:14'), '2026-03-02T09:14:00.000Z');
    assert.equal(normaliseTimestamp('yesterday'), undefined);
    assert.equal(normaliseTimestamp('2026-13-45T99:99:99'), undefined);
    assert.equal(fullNameOf(['Suite'], undefined, 'x'), 'Suite › x');
    assert.equal(fullNameOf(['com.A'], 'com.A', 'x'), 'com.A › x');
    assert.equal(fullNameOf(['All', 'Inner'], 'Inner', 'x'), 'All › Inner › x');
    assert.equal(fullNameOf(['All', 'Inner'], 'pkg.Cls', 'x'), 'All › Inner › pkg.Cls › x');
    assert.equal(fullNameOf([], 'test', 'x'), 'x');
  });
});

describe('a test case repeated in one report', () => {
  test('is a rerun: its repetitions are attempts 0, 1, … in report order (TRIAGE-5)', () => {
    const xml =
      '<testsuite name="cart">' +
      '<testcase classname="cart" name="applies a coupon"><failure message="expected 10, got 9"/></testcase>' +
      '<testcase classname="cart" name="adds an item"/>' +
      '<testcase classname="cart" name="applies a coupon"/>' +
      '</testsuite>';
    const report = parseJUnit('rerun.xml', Buffer.from(xml));
    assert.deepEqual(
      report.cases.map((c) => [c.name, c.verdict, c.attempt]),
      [
        ['applies a coupon', 'failed', 0],
        ['adds an item', 'passed', 0],
        ['applies a coupon', 'passed', 1],
      ],
    );
  });
});
