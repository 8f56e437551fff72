import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
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

const ROOT = new URL('../../', import.meta.url);
const read = (file: string) => readFileSync(new URL(file, ROOT), 'utf8');

/** The floors of `FLOORS` in the architecture test, read from its source (importing it would run its tests). */
function floorsOfArchitectureTest(): string[][] {
  const source = read('test/unit/architecture.test.ts');
  const literal = /const FLOORS: string\[\]\[\] = (\[[\s\S]*?\n\]);/.exec(source)?.[1];
  assert.ok(literal, 'FLOORS not found in test/unit/architecture.test.ts');
  return JSON.parse(literal.replace(/'/g, '"').replace(/,(\s*\])/g, '$1')) as string[][];
}

/** A unit as the docs write it (`db/repositories/`, `main.ts`, `src/export/`) as `FLOORS` names it. */
const unitOfDocName = (name: string) =>
  name.startsWith('src/') ? name.slice(4).replace(/\/$/, '') : `server/${name.replace(/\/$/, '').replace(/\.ts$/, '')}`;

const sortedFloors = (floors: string[][]) => floors.map((units) => [...units].sort());

describe('docs/ARCHITECTURE.md and src/server/README.md draw the floors the architecture test holds', () => {
  const FLOORS = floorsOfArchitectureTest();

  test('the picture in ARCHITECTURE.md has every floor of FLOORS, with the same units', () => {
    const drawn: string[][] = [];
    for (const m of read('docs/ARCHITECTURE.md').matchAll(/^floor +(\d+) {2}(.*)$/gm)) {
      const units = (m[2] as string)
        .replace(/\(.*\)/, '')
        .trim()
        .split(/\s+/);
      drawn[Number(m[1])] = units.map(unitOfDocName);
    }
    assert.ok(FLOORS.length > 10);
    assert.deepEqual(sortedFloors(drawn), sortedFloors(FLOORS));
  });

  test("the table in src/server/README.md has every floor of FLOORS but the CLI's, with the same units", () => {
    const table: string[][] = [];
    for (const m of read('src/server/README.md').matchAll(/^\| (\d+) \| (.*) \|$/gm)) {
      table[Number(m[1])] = [...(m[2] as string).matchAll(/`([^`]+)`/g)].map((unit) => unitOfDocName(unit[1] as string));
    }
    assert.deepEqual(sortedFloors(table), sortedFloors(FLOORS.filter((units) => !units.includes('cli'))));
  });
});

describe('the plugin lists of docs/ARCHITECTURE.md and src/server/plugins/README.md', () => {
  const app = read('src/server/app.ts');
  const fileOf = new Map(
    [...app.matchAll(/import \{[^}]*\b(\w+Plugin)\b[^}]*\} from '\.\/plugins\/([\w-]+)\.ts'/g)].map((m) => [m[1], m[2]]),
  );
  const registered = [...app.matchAll(/app\.register\((\w+Plugin)\b/g)].map((m) => fileOf.get(m[1] as string) ?? `${m[1]} (no file)`);
  const files = readdirSync(new URL('src/server/plugins/', ROOT))
    .filter((name) => name.endsWith('.ts'))
    .map((name) => name.replace(/\.ts$/, ''));

  test('app.ts registers every file of plugins/ once, but access.ts, the hooks contract.ts installs', () => {
    assert.ok(registered.length > 10);
    assert.deepEqual([...registered].sort(), files.filter((file) => file !== 'access').sort());
    assert.match(read('src/server/plugins/contract.ts'), /from '\.\/access\.ts'/);
  });

  test('ARCHITECTURE.md lists the plugins in the order app.ts registers them', () => {
    const doc = read('docs/ARCHITECTURE.md');
    const section = doc.slice(doc.indexOf('\n## Plugins\n'), doc.indexOf('\n## ', doc.indexOf('\n## Plugins\n') + 1));
    assert.deepEqual(
      [...section.matchAll(/^\d+\. `([\w-]+)`/gm)].map((m) => m[1]),
      registered,
    );
  });

  test('plugins/README.md names the plugins in the order app.ts registers them', () => {
    const readme = read('src/server/plugins/README.md');
    const named = [...readme.slice(0, readme.indexOf('May import')).matchAll(/`([\w-]+)`/g)]
      .map((m) => m[1] as string)
      .filter((name) => registered.includes(name));
    assert.deepEqual(named, registered);
  });
});

describe('no issue numbers in code or docs: requirement ids are the vocabulary', () => {
  const tracked = execFileSync('git', ['ls-files', '-z'], { cwd: fileURLToPath(ROOT), encoding: 'utf8' })
    .split('\0')
    // This file is left out: its own examples are what it looks for.
    .filter((file) => /\.(ts|tsx|mjs|js|md|json|css|html|yml|yaml|sh)$|^\.ci\//.test(file) && !file.endsWith('package-lock.json'))
    .filter((file) => file !== 'test/unit/docs.test.ts');

  /**
   * The word issue followed by a number anywhere; a number after `#` in prose (Markdown outside code
   * and quotes, comments in code), where colours and code literals are not.
   */
  function citations(file: string, text: string): string[] {
    const found: string[] = [];
    const markdown = file.endsWith('.md');
    let fenced = false;
    text.split('\n').forEach((line, i) => {
      if (markdown && /^\s*```/.test(line)) fenced = !fenced;
      if (/\bissues?\s+#?\d+/i.test(line)) found.push(`${file}:${i + 1}: ${line.trim()}`);
      const prose = markdown
        ? fenced
          ? ''
          : line.replace(/`[^`]*`|"[^"]*"/g, '')
        : (/(^\s*(\/\/|\*|\/\*)|\s\/\/\s)(.*)$/.exec(line)?.[3] ?? '');
      // A numbered item of a requirement (`SPEC-1.4 #1`) is the requirement's own vocabulary.
      if (/(^|[\s(])#\d+\b(?![0-9a-f])/i.test(prose.replace(/\b[A-Z][A-Z0-9]*-[\d.]+ #\d+/g, '')))
        found.push(`${file}:${i + 1}: ${line.trim()}`);
    });
    return found;
  }

  test('no tracked source, test, script or document cites one', () => {
    assert.ok(tracked.length > 300);
    assert.deepEqual(
      tracked.flatMap((file) => citations(file, read(file))),
      [],
    );
  });

  test('the check catches one in code, a comment and a document, and leaves colours and code literals alone', () => {
    // The planted citations are put together here, so this file's own text cites nothing.
    const word = ['iss', 'ue'].join('');
    assert.equal(citations('src/x.ts', `const reason = 'moved for ${word} 43';`).length, 1);
    assert.equal(citations('src/x.ts', '// split off, see #43').length, 1);
    assert.equal(citations('docs/x.md', `As filed in ${word}s 12 and 13.`).length, 1);
    assert.equal(citations('docs/x.md', 'Fixed (#43).').length, 1);
    assert.equal(citations('src/x.css', 'color: #111820;').length, 0);
    assert.equal(citations('docs/x.md', 'The GitHub issue number (`#12`).').length, 0);
    assert.equal(citations('docs/x.md', 'the test "real device id shapes (SPEC-1.4 #1)"').length, 0);
    assert.equal(citations('docs/x.md', 'real device id shapes (SPEC-1.4 #1)').length, 0);
  });
});
