import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

// docs/requirements.md defines every requirement id the repository cites. This test finds the
// citations in code, tests, scripts and documents, and fails naming file:line for an id the document
// does not define, or for a test file the document names that does not exist.

const root = fileURLToPath(new URL('../../', import.meta.url));
const REQUIREMENTS = 'docs/requirements.md';
/** Scanned folders and files, relative to the repository root. */
const SCANNED = ['src', 'test', 'scripts', 'bin', 'docs', 'README.md'];
/** Not citations: the definitions themselves, the generated OpenAPI document, and this file (its samples). */
const SKIPPED = new Set([REQUIREMENTS, 'docs/openapi.json', 'test/unit/requirements.test.ts']);
const TEXT_FILE = /\.(ts|mts|js|mjs|cjs|md|json|txt|ya?ml|sql|sh)$/;

export interface Citation {
  /** Canonical form: `FILE-8`, `DUR-13b`, `I1`, `T-FUZZ`, `SPEC-1.2`, `RELIABILITY-4.3`. */
  id: string;
  line: number;
}

/** Requirement ids of every family docs/requirements.md defines: `AUTH-9`, `SEC-2b`, `DUR-13b`, `SCALE-3`, `TRIAGE-1`, `TCM-1`, `FORGE-1`, `HOOK-1`, `PKG-1`. Upper case only, so `sha-256` or `utf-8` never match, and SHA/UTF/ISO/RFC are not prefixes. */
const LETTER_ID =
  /(?<![\w-])((?:AUTH|SEC|ERR|FILE|DUR|LOAD|EXP|IMP|JOB|PERF|RET|SCALE|TCM|TRIAGE|UI|FORGE|HOOK|PKG)-\d{1,3}[a-z]?)(?![\w-])/g;
/** Test techniques of the bar: `T-FUZZ`, `T-MATRIX`. */
const TECHNIQUE_ID = /(?<![\w-])(T-[A-Z]{4,})(?![\w-])/g;
/** `SPEC 1.2`, `SPEC-1.2`, `SPEC §1.2`, `SPEC section 2.2`, and lists after it: `SPEC 1.2, 1.3`, `SPEC 1.2/1.3`, `SPEC 1.1 (…), 1.2`. */
const SPEC_REF =
  /\bSPEC(?:\s*§\s*|\s+section\s+|\s*-\s*|\s+)(\d+(?:\.\d+)*)((?:(?:\s*\([^()\n]*\))?\s*(?:,|\/|\band\b|&)\s*§?\s*\d+\.\d+(?:\.\d+)*\b)*)/g;
/** Sections of the reliability bar cited by number: `RELIABILITY 4.3`, `RELIABILITY section 8`. */
const RELIABILITY_SECTION = /\bRELIABILITY(?:\s*§\s*|\s+section\s+|\s+)(\d+(?:\.\d+)*)\b/g;
/** A run of invariant names: `I1`, `I1–I6`, `I1, I3, I4`, `I1 and I3`, `I1 (every blob) and I3`. */
const INVARIANT_RUN = /(?<![\w-])I\d{1,2}(?:(?:\s*\([^()]{0,200}\))?\s*(?:,|\band\b|\bor\b|–|-|\.\.)\s*I\d{1,2})*(?![\w-])/g;

function lineAt(text: string, index: number): number {
  let line = 1;
  for (let i = text.indexOf('\n'); i !== -1 && i < index; i = text.indexOf('\n', i + 1)) line++;
  return line;
}

/** An `I<n>` run (`names`: its parentheticals removed) is a citation only in the forms that cannot be anything else. */
function isInvariantCitation(text: string, start: number, end: number, names: string): boolean {
  const before = text.slice(Math.max(0, start - 40), start);
  const after = text.slice(end, end + 2);
  if (/invariants?\s*$/i.test(before)) return true; // "invariant I1", "invariants I1 and I3"
  if (/\(\s*$/.test(before) && /^\s*[),]/.test(after)) return true; // "(I1)", "(I1, ...)"
  if (/^:/.test(after)) return true; // "I3: the database is consistent"
  return /I\d{1,2}\s*(?:,|\band\b|\bor\b|–|-|\.\.)\s*I\d/.test(names); // "I1–I6", "I1 and I3"
}

/** Every requirement citation in `text`, in canonical form with its line. */
export function findCitations(text: string): Citation[] {
  const found: { id: string; index: number }[] = [];
  for (const m of text.matchAll(LETTER_ID)) found.push({ id: m[1] as string, index: m.index });
  for (const m of text.matchAll(TECHNIQUE_ID)) found.push({ id: m[1] as string, index: m.index });
  for (const m of text.matchAll(SPEC_REF)) {
    found.push({ id: `SPEC-${m[1]}`, index: m.index });
    for (const more of (m[2] ?? '').replace(/\([^()\n]*\)/g, '').matchAll(/\d+\.\d+(?:\.\d+)*/g)) {
      found.push({ id: `SPEC-${more[0]}`, index: m.index });
    }
  }
  for (const m of text.matchAll(RELIABILITY_SECTION)) found.push({ id: `RELIABILITY-${m[1]}`, index: m.index });
  for (const m of text.matchAll(INVARIANT_RUN)) {
    const names = m[0].replace(/\([^()]*\)/g, '');
    if (!isInvariantCitation(text, m.index, m.index + m[0].length, names)) continue;
    for (const name of names.matchAll(/I\d{1,2}/g)) found.push({ id: name[0], index: m.index });
  }
  return found.map(({ id, index }) => ({ id, line: lineAt(text, index) })).sort((a, b) => a.line - b.line);
}

/** Canonical form of a definition key: `SPEC 1.2` → `SPEC-1.2`, `RELIABILITY 4.3` → `RELIABILITY-4.3`. */
function canonical(key: string): string {
  return key
    .replace(/[`*]/g, '')
    .trim()
    .replace(/^(SPEC|RELIABILITY)(?:\s*§\s*|\s+section\s+|\s*-\s*|\s+)(\d)/, '$1-$2');
}

/** Ids defined in the requirements document (first word of a heading, or first cell of a table row), with how often each is. */
export function definedIds(doc: string): Map<string, number> {
  const defined = new Map<string, number>();
  const add = (key: string) => {
    const id = canonical(key);
    if (/^(?:[A-Z]+-[\w.]+|I\d{1,2})$/.test(id)) defined.set(id, (defined.get(id) ?? 0) + 1);
  };
  for (const text of doc.split('\n')) {
    const heading = /^#{2,6}\s+`?([A-Z][\w.-]*)`?(?:\s|$)/.exec(text);
    if (heading) add(heading[1] as string);
    const row = /^\|\s*([^|]+?)\s*\|/.exec(text);
    if (row && !/^[-: ]+$/.test(row[1] as string)) add(row[1] as string);
  }
  return defined;
}

function scannedFiles(): string[] {
  const files: string[] = [];
  const walk = (rel: string) => {
    const full = path.join(root, rel);
    if (!existsSync(full)) return;
    if (statSync(full).isDirectory()) {
      for (const entry of readdirSync(full).sort()) {
        if (entry === 'node_modules' || entry.startsWith('.')) continue;
        walk(path.posix.join(rel, entry));
      }
    } else if (TEXT_FILE.test(rel) && !SKIPPED.has(rel)) {
      files.push(rel);
    }
  };
  for (const rel of SCANNED) walk(rel);
  return files;
}

describe('docs/requirements.md', () => {
  const doc = readFileSync(path.join(root, REQUIREMENTS), 'utf8');
  const defined = definedIds(doc);

  test('defines every requirement id the repository cites', () => {
    const files = scannedFiles();
    assert.ok(files.length > 50, `only ${files.length} files scanned`);
    const undefinedCitations: string[] = [];
    let citations = 0;
    for (const rel of files) {
      for (const { id, line } of findCitations(readFileSync(path.join(root, rel), 'utf8'))) {
        citations++;
        if (!defined.has(id)) undefinedCitations.push(`${rel}:${line}: ${id}`);
      }
    }
    assert.ok(citations > 100, `only ${citations} citations found: is the matcher broken?`);
    assert.deepEqual(undefinedCitations, [], `cited but not defined in ${REQUIREMENTS}`);
  });

  test('defines each id once', () => {
    assert.ok(defined.size > 50, `only ${defined.size} ids defined`);
    assert.deepEqual(
      [...defined].filter(([, n]) => n > 1).map(([id]) => id),
      [],
    );
  });

  test('names only test files that exist', () => {
    const missing: string[] = [];
    doc.split('\n').forEach((text, i) => {
      for (const m of text.matchAll(/\btest\/[\w./-]+?\.ts\b/g)) {
        if (!existsSync(path.join(root, m[0]))) missing.push(`${REQUIREMENTS}:${i + 1}: ${m[0]}`);
      }
    });
    assert.deepEqual(missing, []);
  });
});

describe('findCitations', () => {
  const ids = (text: string) => findCitations(text).map((c) => c.id);

  test('finds ids with or without the RELIABILITY prefix, and sub-items', () => {
    assert.deepEqual(ids('(RELIABILITY FILE-8) and DUR-13b, SEC-2b; AUTH-1..AUTH-4'), ['FILE-8', 'DUR-13b', 'SEC-2b', 'AUTH-1', 'AUTH-4']);
    assert.deepEqual(ids('see T-FUZZ and T-MATRIX'), ['T-FUZZ', 'T-MATRIX']);
  });

  test('finds SPEC sections in every form, lists included, also across a line break', () => {
    assert.deepEqual(ids('SPEC 1.2'), ['SPEC-1.2']);
    assert.deepEqual(ids('SPEC-1.3.'), ['SPEC-1.3']);
    assert.deepEqual(ids('SPEC §1.4 #1'), ['SPEC-1.4']);
    assert.deepEqual(ids('(SPEC 1.2, 1.3)'), ['SPEC-1.2', 'SPEC-1.3']);
    assert.deepEqual(ids('SPEC 1.2/1.3 say'), ['SPEC-1.2', 'SPEC-1.3']);
    assert.deepEqual(ids('SPEC 1.1 (versioning and addressing), 1.2 (headers) and'), ['SPEC-1.1', 'SPEC-1.2']);
    assert.deepEqual(ids('manager, since SPEC\n  2.2)'), ['SPEC-2.2']);
    assert.deepEqual(ids('RELIABILITY 4.3; RELIABILITY section 8 asks'), ['RELIABILITY-4.3', 'RELIABILITY-8']);
  });

  test('finds invariants only where they are cited as such', () => {
    assert.deepEqual(ids('breaks durability invariant I1: report'), ['I1']);
    assert.deepEqual(ids('the database is sound (I3); orphans are counted (I5).'), ['I3', 'I5']);
    assert.deepEqual(ids('invariants I1 (every blob exists with its size\n// and SHA-256) and I3 (integrity) hold'), ['I1', 'I3']);
    assert.deepEqual(ids('I1–I6, and (I1, I3)'), ['I1', 'I6', 'I1', 'I3']);
    assert.deepEqual(ids("'I3: the database is consistent'"), ['I3']);
    assert.deepEqual(ids('const I1 = 2; an I2C bus'), []);
  });

  test('ignores what only looks like an id', () => {
    assert.deepEqual(
      ids('SHA-256, UTF-8, ISO-8601, RFC 9457, RFC-9110, CWE-204, sha-256, X-FILE-8, file-8, ERR_HTTP_TIMEOUT, SPEC v2'),
      [],
    );
  });

  test('reports the line of each citation', () => {
    assert.deepEqual(findCitations('a\nb FILE-2\n\nc DUR-6'), [
      { id: 'FILE-2', line: 2 },
      { id: 'DUR-6', line: 4 },
    ]);
  });
});

describe('definedIds', () => {
  test('reads headings and the first cells of table rows, in canonical form', () => {
    const defined = definedIds(
      '### FILE-8 Sizes\n#### SEC-2b Throttling\n### SPEC-1.2 Headers\n| I1 | x |\n|---|---|\n| RELIABILITY 4.3 | y |\n## Durability',
    );
    assert.deepEqual([...defined.keys()], ['FILE-8', 'SEC-2b', 'SPEC-1.2', 'I1', 'RELIABILITY-4.3']);
  });
});
