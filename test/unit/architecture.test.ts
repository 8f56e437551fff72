import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

// The layering docs/ARCHITECTURE.md describes, checked on the source text so it stays true.

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SERVER = path.join(ROOT, 'src', 'server');
const SRC = path.join(ROOT, 'src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return sourceFiles(full);
    return name.endsWith('.ts') ? [full] : [];
  });
}

const rel = (file: string) => path.relative(ROOT, file);
const FILES = sourceFiles(path.join(ROOT, 'src'));
const TEXT = new Map(FILES.map((file) => [file, readFileSync(file, 'utf8')]));

/** Every module a file imports (static, re-exported, dynamic), as written. */
function importsOf(file: string): { specifier: string; typeOnly: boolean }[] {
  const text = TEXT.get(file) ?? readFileSync(file, 'utf8');
  const found: { specifier: string; typeOnly: boolean }[] = [];
  for (const m of text.matchAll(/^\s*(import|export)\s+(type\s+)?[^'";]*?\bfrom\s+'([^']+)'/gm)) {
    found.push({ specifier: m[3] as string, typeOnly: m[2] !== undefined });
  }
  for (const m of text.matchAll(/^\s*import\s+'([^']+)'/gm)) found.push({ specifier: m[1] as string, typeOnly: false });
  for (const m of text.matchAll(/\bimport\(\s*'([^']+)'\s*\)/g)) found.push({ specifier: m[1] as string, typeOnly: false });
  return found;
}

/** The file a relative specifier names, or undefined for a package. */
function resolve(file: string, specifier: string): string | undefined {
  return specifier.startsWith('.') ? path.resolve(path.dirname(file), specifier) : undefined;
}

const under = (folder: string) => FILES.filter((file) => file.startsWith(path.join(SERVER, folder) + path.sep));

const isInDb = (file: string) => file.startsWith(path.join(SERVER, 'db') + path.sep);

/**
 * The lines of a file outside db/ that run SQL or reach a database themselves: a Kysely query or
 * transaction, a `sql` template, a driver's `query`, `prepare` or `pragma` of a statement,
 * or an import of Kysely or a driver (Redis, which holds no SQL, is not one).
 */
function sqlOffences(file: string, text: string): string[] {
  const offences: string[] = [];
  text.split('\n').forEach((line, i) => {
    if (
      /\.(selectFrom|insertInto|updateTable|deleteFrom|replaceInto|transaction)\(|\bsql`|\.execute\(\)|\.(query|prepare|pragma)\(\s*([`'"]|$)|\bfrom\s+'(kysely|pg|better-sqlite3)'/.test(
        line,
      )
    ) {
      offences.push(`${file}:${i + 1}: ${line.trim()}`);
    }
  });
  return offences;
}

describe('the layers of src/server', () => {
  test('SQL only in db/: no query builder, transaction, statement or database driver in any folder of src outside src/server/db', () => {
    const scanned = FILES.filter((file) => !isInDb(file));
    // Every folder of src and of src/server but db/ is scanned, the cluster's included.
    const folders = new Set(scanned.map((file) => path.relative(SRC, path.dirname(file)).split(path.sep).slice(0, 2).join('/')));
    for (const folder of ['server/cluster', 'server/backup', 'server/routes', 'server/services', 'server/http', 'server/plugins', 'cli'])
      assert.ok(folders.has(folder), `${folder} is not scanned`);
    assert.deepEqual(
      scanned.flatMap((file) => sqlOffences(rel(file), TEXT.get(file) as string)),
      [],
    );
  });

  test('the SQL scan catches a statement planted in cluster/ or backup/, and leaves db/ alone', () => {
    const planted = [
      "await sql`DELETE FROM shared_limits WHERE subject = 'x'`.execute(this.db);",
      "await client.query('SELECT pg_notify($1, $2)', [CHANNEL, text]);",
      "import pg from 'pg';",
      "import { Kysely, PostgresDialect } from 'kysely';",
      "const rows = db.prepare('SELECT sha256 FROM artifacts').all();",
      "live.pragma('busy_timeout = 5000');",
      '    .prepare(',
      "await this.db.selectFrom('shared_limits').selectAll().execute();",
    ];
    for (const line of planted) {
      assert.equal(sqlOffences('src/server/cluster/planted.ts', line).length, 1, line);
      assert.equal(sqlOffences('src/server/backup/planted.ts', line).length, 1, line);
    }
    assert.ok(isInDb(path.join(SERVER, 'db', 'repositories', 'shared-limits.ts')));
    assert.ok(!isInDb(path.join(SERVER, 'cluster', 'pg-shared-counts.ts')));
  });

  test('routes and services import no Kysely, driver, database module or node:fs', () => {
    const banned = (specifier: string, target: string | undefined) =>
      ['kysely', 'pg', 'better-sqlite3', 'node:fs', 'fs', 'node:fs/promises', 'fs/promises'].includes(specifier) ||
      (target !== undefined && /[/\\]db[/\\](database|backup|chunks|dialect)\.ts$|[/\\]db[/\\]migrations[/\\]/.test(target));
    const offences = [...under('routes'), ...under('services')].flatMap((file) =>
      importsOf(file)
        .filter(({ specifier }) => banned(specifier, resolve(file, specifier)))
        .map(({ specifier }) => `${rel(file)} imports ${specifier}`),
    );
    assert.deepEqual(offences, []);
  });

  test('dependencies point down: storage knows nothing of HTTP, services nothing of routes, presenters only rows and the contract', () => {
    const rules: { from: string; forbidden: RegExp; why: string }[] = [
      {
        from: 'db',
        forbidden: /[/\\]server[/\\](routes|services|presenters|http|plugins|media)[/\\]|^fastify$/,
        why: 'storage is the bottom layer',
      },
      { from: 'services', forbidden: /[/\\]server[/\\](routes|plugins|http)[/\\]|^fastify$/, why: 'use cases know nothing of HTTP' },
      {
        from: 'presenters',
        forbidden: /[/\\]server[/\\](routes|plugins|http|db[/\\]repositories)[/\\]|^fastify$|^kysely$/,
        why: 'presenters map rows',
      },
      { from: 'media', forbidden: /[/\\]server[/\\](routes|plugins|http|services|db)[/\\]|^fastify$/, why: 'media parsing is pure' },
      {
        from: 'blob',
        forbidden: /[/\\]server[/\\](routes|plugins|http|services|presenters)[/\\]|^fastify$/,
        why: 'the blob store is storage',
      },
    ];
    const offences: string[] = [];
    for (const { from, forbidden, why } of rules) {
      for (const file of under(from)) {
        for (const { specifier } of importsOf(file)) {
          const target = resolve(file, specifier) ?? specifier;
          if (forbidden.test(target)) offences.push(`${rel(file)} imports ${specifier} (${why})`);
        }
      }
    }
    assert.deepEqual(offences, []);
  });

  test('services are handed the ServiceContext, never the AppContext with the answers the HTTP layer keeps', () => {
    const offences = under('services')
      .filter((file) => /\bAppContext\b/.test(TEXT.get(file) as string))
      .map(rel);
    assert.deepEqual(offences, []);
  });

  test('no import cycles, type-only imports included', () => {
    const graph = new Map(
      FILES.map((file) => [
        file,
        importsOf(file)
          .map(({ specifier }) => resolve(file, specifier))
          .filter((target): target is string => target !== undefined && TEXT.has(target)),
      ]),
    );
    const cycles: string[] = [];
    const state = new Map<string, 'visiting' | 'done'>();
    const visit = (file: string, trail: string[]) => {
      if (state.get(file) === 'done') return;
      if (state.get(file) === 'visiting') {
        cycles.push([...trail.slice(trail.indexOf(file)), file].map(rel).join(' → '));
        return;
      }
      state.set(file, 'visiting');
      for (const next of graph.get(file) ?? []) visit(next, [...trail, file]);
      state.set(file, 'done');
    };
    for (const file of FILES) visit(file, []);
    assert.deepEqual(cycles, []);
  });

  test('app.ts only assembles (under 150 lines)', () => {
    const lines = (TEXT.get(path.join(SERVER, 'app.ts')) as string).split('\n').length;
    assert.ok(lines < 150, `app.ts has ${lines} lines`);
  });

  test('every folder of src/server says in a README what belongs there', () => {
    const folders = (dir: string): string[] =>
      readdirSync(dir)
        .map((name) => path.join(dir, name))
        .filter((full) => statSync(full).isDirectory())
        .flatMap((full) => [full, ...folders(full)]);
    assert.deepEqual(
      folders(SERVER)
        .filter((folder) => !existsSync(path.join(folder, 'README.md')))
        .map(rel),
      [],
    );
  });
});

/**
 * The floors of src, bottom first: a module may import only from floors below its own (and from its
 * own folder). docs/ARCHITECTURE.md draws the same picture; each folder README says what its floor
 * may import. A unit is a folder of src/server (repositories apart from db), a file directly in
 * src/server, or a folder of src.
 */
const FLOORS: string[][] = [
  ['api', 'server/errors', 'server/crash-points', 'server/version', 'server/env-file'],
  ['client', 'server/config', 'server/validation', 'server/failures'],
  [
    'export',
    'import',
    'server/db',
    'server/blob',
    'server/media',
    'server/security',
    'server/background',
    'server/changes',
    'server/openapi',
    'server/outgoing',
  ],
  ['server/db/repositories', 'server/backup', 'server/http'],
  ['server/cluster'],
  ['server/context'],
  ['server/services'],
  ['server/presenters'],
  ['server/routes'],
  ['server/plugins'],
  ['server/app'],
  ['server/main'],
  ['cli'],
];
const FLOOR = new Map(FLOORS.flatMap((units, floor) => units.map((unit) => [unit, floor] as const)));

/** The unit a file belongs to (see FLOORS). */
function unitOf(file: string): string {
  const parts = path.relative(SRC, file).split(path.sep);
  if (parts[0] !== 'server') return parts[0] as string;
  if (parts.length === 2) return `server/${(parts[1] as string).replace(/\.tsx?$/, '')}`;
  if (parts[1] === 'db' && parts[2] === 'repositories') return 'server/db/repositories';
  return `server/${parts[1]}`;
}

/** Every import between two units that does not go down a floor; units without a floor are named too. */
function upwardImports(edges: { from: string; to: string }[]): string[] {
  const offences: string[] = [];
  for (const { from, to } of edges) {
    const [a, b] = [unitOf(from), unitOf(to)];
    if (a === b) continue;
    const [fa, fb] = [FLOOR.get(a), FLOOR.get(b)];
    if (fa === undefined || fb === undefined)
      offences.push(`${rel(from)} → ${rel(to)}: ${fa === undefined ? a : b} has no floor in FLOORS`);
    else if (fa <= fb) offences.push(`${rel(from)} (${a}, floor ${fa}) imports ${rel(to)} (${b}, floor ${fb})`);
  }
  return offences;
}

/** Imports from src to src, and from src to anything else in the repository that is not a package. */
const EDGES = FILES.flatMap((file) =>
  importsOf(file)
    .map(({ specifier }) => resolve(file, specifier))
    .filter((target): target is string => target !== undefined)
    .map((to) => ({ from: file, to })),
);

describe('the floors of src: no import goes up or across, folders included', () => {
  test('every import between two units goes down a floor', () => {
    assert.deepEqual(upwardImports(EDGES.filter(({ to }) => to.startsWith(SRC + path.sep))), []);
  });

  test('the check catches a reintroduced upward import: db → blob, blob → db, security or http → context, services → presenters', () => {
    const planted = [
      { from: path.join(SERVER, 'db', 'backup.ts'), to: path.join(SERVER, 'blob', 'blob-store.ts') },
      { from: path.join(SERVER, 'blob', 'create-blob-store.ts'), to: path.join(SERVER, 'db', 'database.ts') },
      { from: path.join(SERVER, 'security', 'roles.ts'), to: path.join(SERVER, 'context.ts') },
      { from: path.join(SERVER, 'http', 'blob-download.ts'), to: path.join(SERVER, 'context.ts') },
      { from: path.join(SERVER, 'services', 'records', 'jobs.ts'), to: path.join(SERVER, 'presenters', 'jobs.ts') },
      { from: path.join(SERVER, 'db', 'database.ts'), to: path.join(SERVER, 'db', 'repositories', 'users.ts') },
    ];
    assert.equal(upwardImports(planted).length, planted.length);
    assert.deepEqual(
      upwardImports([{ from: path.join(SERVER, 'services', 'records', 'jobs.ts'), to: path.join(SERVER, 'db', 'types.ts') }]),
      [],
    );
  });

  test('src reaches nothing else in the repository by path: shared code comes through a package export', () => {
    const outside = EDGES.filter(({ to }) => !to.startsWith(SRC + path.sep)).map(({ from, to }) => `${rel(from)} → ${rel(to)}`);
    assert.deepEqual(outside, []);
  });

  test('every unit of src has a floor', () => {
    const units = new Set(FILES.map(unitOf));
    assert.deepEqual(
      [...units].filter((unit) => !FLOOR.has(unit)),
      [],
    );
  });
});

describe('biome.json noRestrictedImports', () => {
  test('fails the lint on a route or service that imports Kysely or the database module', { timeout: 60_000 }, () => {
    // A planted violation, linted with the project's own configuration: the rule must catch it. It is
    // written outside src/ with an old modification time and then moved in, so that a test starting
    // the built server meanwhile never sees source newer than dist/ (test/helpers/built.ts).
    const outside = mkdtempSync(path.join(ROOT, '.planted-'));
    writeFileSync(
      path.join(outside, 'planted.ts'),
      "import { sql } from 'kysely';\nimport { createDatabase } from '../../db/database.ts';\n\nexport const planted = [sql, createDatabase];\n",
    );
    utimesSync(path.join(outside, 'planted.ts'), 0, 0);
    const dir = path.join(SERVER, 'services', path.basename(outside));
    renameSync(outside, dir);
    const planted = path.join(dir, 'planted.ts');
    try {
      let output = '';
      try {
        execFileSync(path.join(ROOT, 'node_modules', '.bin', 'biome'), ['lint', '--max-diagnostics=20', planted], {
          cwd: ROOT,
          encoding: 'utf8',
          stdio: 'pipe',
        });
      } catch (error) {
        output = `${(error as { stdout?: string }).stdout ?? ''}${(error as { stderr?: string }).stderr ?? ''}`;
      }
      assert.match(output, /noRestrictedImports[\s\S]*kysely/);
      assert.match(output, /db\/database\.ts/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
