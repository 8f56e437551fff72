import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import type { BodyOf } from '../../src/api/endpoint.ts';
import { ApiError, type AttestClient, v1 } from '../../src/client/index.ts';
import { loadConfig } from '../../src/server/config.ts';
import type { CrashPoint } from '../../src/server/crash-points.ts';
import { generateKey } from '../../src/server/security/api-key.ts';
import { blobFile, sha256, sha256OfFile } from '../helpers/blob-files.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { randomPng } from '../helpers/png.ts';
import { startRun } from '../helpers/records.ts';
import { createStorage, type ServerStorage, type SpawnedServer, spawnServer } from '../helpers/spawned-server.ts';
import { filesUnder, upload } from '../helpers/uploads.ts';

// DUR-13b: the real server, killed (SIGKILL, no cleanup) exactly at each durability
// step of an upload or a delete, then restarted on the same data: every row still points at an
// intact blob (I1), acknowledged uploads are all there (I2), the database is consistent (I3),
// tmp/ is empty (I4), and the server takes new writes (I6). Killed inside a results post, none of
// that post is stored and every acknowledged one is (DUR-4).

/** Reads the records beside the running server: rows that reference blobs, and the database's own consistency checks. */
async function inspectRecords(
  storage: ServerStorage,
): Promise<{ blobs: { table: string; sha256: string; size: number | null }[]; problems: string[]; artifactIds: string[] }> {
  const referencing = [
    "SELECT 'artifacts' AS tbl, sha256, size FROM artifacts",
    "SELECT 'images' AS tbl, sha256, size FROM images",
    "SELECT 'thumbnails' AS tbl, thumbnail_sha256 AS sha256, NULL AS size FROM images WHERE thumbnail_sha256 IS NOT NULL",
  ].join(' UNION ALL ');
  const orphans = [
    'SELECT COUNT(*) AS n FROM artifact_images ai LEFT JOIN artifacts a ON a.id = ai.artifact_id WHERE a.id IS NULL',
    'SELECT COUNT(*) AS n FROM artifact_images ai LEFT JOIN images i ON i.id = ai.image_id WHERE i.id IS NULL',
    'SELECT COUNT(*) AS n FROM artifacts a LEFT JOIN test_runs r ON r.id = a.run_id WHERE r.id IS NULL',
    'SELECT COUNT(*) AS n FROM steps s LEFT JOIN test_runs r ON r.id = s.run_id WHERE r.id IS NULL',
    'SELECT COUNT(*) AS n FROM steps s LEFT JOIN steps p ON p.id = s.parent_id WHERE s.parent_id IS NOT NULL AND p.id IS NULL',
    'SELECT COUNT(*) AS n FROM text_cells c LEFT JOIN steps s ON s.id = c.step_id WHERE c.step_id IS NOT NULL AND s.id IS NULL',
  ];
  type Row = { tbl: string; sha256: string; size: number | string | null };
  const toBlobs = (rows: Row[]) => rows.map((r) => ({ table: r.tbl, sha256: r.sha256, size: r.size === null ? null : Number(r.size) }));
  if (storage.dialect === 'sqlite') {
    const db = new SQLite(path.join(storage.dataDir, 'attest.db'), { readonly: true });
    try {
      const problems: string[] = [];
      const integrity = db.pragma('integrity_check', { simple: true });
      if (integrity !== 'ok') problems.push(`integrity_check: ${String(integrity)}`);
      const fk = db.pragma('foreign_key_check') as unknown[];
      if (fk.length > 0) problems.push(`foreign_key_check: ${JSON.stringify(fk)}`);
      for (const q of orphans) {
        const n = (db.prepare(q).get() as { n: number }).n;
        if (n > 0) problems.push(`${n} rows: ${q}`);
      }
      const artifactIds = (db.prepare('SELECT id FROM artifacts').all() as { id: string }[]).map((r) => r.id);
      return { blobs: toBlobs(db.prepare(referencing).all() as Row[]), problems, artifactIds };
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: storage.databaseUrl });
  await client.connect();
  try {
    const problems: string[] = [];
    for (const q of orphans) {
      const n = Number((await client.query<{ n: string }>(q)).rows[0]?.n);
      if (n > 0) problems.push(`${n} rows: ${q}`);
    }
    const artifactIds = (await client.query<{ id: string }>('SELECT id FROM artifacts')).rows.map((r) => r.id);
    return { blobs: toBlobs((await client.query<Row>(referencing)).rows), problems, artifactIds };
  } finally {
    await client.end();
  }
}

/** I1, I3, I4: every referenced blob is there with its size and digest; the database is consistent; tmp/ is empty. */
async function assertInvariants(storage: ServerStorage) {
  const records = await inspectRecords(storage);
  assert.deepEqual(records.problems, [], 'I3: the database is consistent');
  for (const blob of records.blobs) {
    const file = blobFile(storage.dataDir, blob.sha256);
    assert.ok(fs.existsSync(file), `I1: ${blob.table} row points at a missing blob ${blob.sha256}`);
    if (blob.size !== null) assert.equal(fs.statSync(file).size, blob.size, `I1: size of ${blob.sha256}`);
    assert.equal(await sha256OfFile(file), blob.sha256, `I1: content of ${blob.sha256}`);
  }
  assert.deepEqual(filesUnder(path.join(storage.dataDir, 'tmp')), [], 'I4: tmp/ is empty after recovery');
  return records;
}

/** The result rows of one run as stored, counted beside the running server, and the position its next item takes. */
async function storedResults(storage: ServerStorage, runId: string): Promise<{ steps: number; cells: number; nextPosition: number }> {
  const queries = {
    steps: 'SELECT COUNT(*) AS n FROM steps WHERE run_id = $1',
    cells: 'SELECT COUNT(*) AS n FROM text_cells WHERE run_id = $1',
    nextPosition: `SELECT 1 + coalesce(max(p), -1) AS n FROM (
      SELECT position AS p FROM steps WHERE run_id = $1 UNION ALL SELECT position FROM text_cells WHERE run_id = $1
    ) AS positions`,
  };
  const counts = { steps: 0, cells: 0, nextPosition: 0 };
  if (storage.dialect === 'sqlite') {
    const db = new SQLite(path.join(storage.dataDir, 'attest.db'), { readonly: true });
    try {
      for (const [name, q] of Object.entries(queries) as [keyof typeof counts, string][]) {
        counts[name] = Number((db.prepare(q.replaceAll('$1', '@run')).get({ run: runId }) as { n: number }).n);
      }
    } finally {
      db.close();
    }
    return counts;
  }
  const client = new pg.Client({ connectionString: storage.databaseUrl });
  await client.connect();
  try {
    for (const [name, q] of Object.entries(queries) as [keyof typeof counts, string][]) {
      counts[name] = Number((await client.query<{ n: string }>(q, [runId])).rows[0]?.n);
    }
  } finally {
    await client.end();
  }
  return counts;
}

type ResultsBody = NonNullable<BodyOf<typeof v1.results.appendResults>>;

/**
 * A results post of `count` steps keyed `<prefix>-<i>`: every tenth one a top-level step, the nine
 * after it nested under it, each step with one inline text cell; and one run-level cell.
 */
function resultsPost(prefix: string, count: number): ResultsBody {
  return {
    steps: Array.from({ length: count }, (_, i) => {
      const group = i - (i % 10);
      return {
        key: `${prefix}-${i}`,
        title: `${prefix} step ${i}`,
        status: i % 7 === 3 ? ('failed' as const) : ('passed' as const),
        durationMs: i,
        ...(i === group ? {} : { parentKey: `${prefix}-${group}` }),
        cells: [{ key: `${prefix}-${i}-log`, name: 'log', text: `log of ${prefix} step ${i}`, mediaType: 'text/plain' as const }],
      };
    }),
    cells: [{ key: `${prefix}-summary`, name: 'summary', text: `**${count}** steps`, mediaType: 'text/markdown' }],
  };
}

const itemsOf = (post: ResultsBody) =>
  (post.steps ?? []).reduce((sum, step) => sum + 1 + (step.cells?.length ?? 0), 0) + (post.cells ?? []).length;

/** What reading the run back must show after the given posts, each stored whole, in order. */
function expectedResults(posts: ResultsBody[]) {
  const cell = ({ key, name, text, mediaType }: { key?: string; name: string; text: string; mediaType?: string }) => ({
    key: key ?? null,
    name,
    text,
    mediaType: mediaType ?? 'text/plain',
  });
  return {
    cells: posts.flatMap((post) => (post.cells ?? []).map(cell)),
    steps: posts.flatMap((post) =>
      (post.steps ?? []).map((step) => ({
        key: step.key ?? null,
        title: step.title,
        status: step.status,
        durationMs: step.durationMs ?? null,
        parentKey: step.parentKey ?? null,
        cells: (step.cells ?? []).map(cell),
      })),
    ),
  };
}

/** The run's results as the API reads them back (partial: the run is still running), in the shape of {@link expectedResults}. */
async function readBack(client: AttestClient, testRunId: string) {
  const results = await client.call(v1.results.getResults, { params: { testRunId }, query: { partial: true } });
  const keyOf = new Map(results.steps.map((step) => [step.id, step.key]));
  const cell = ({ key, name, text, mediaType }: { key: string | null; name: string; text: string; mediaType: string }) => ({
    key,
    name,
    text,
    mediaType,
  });
  return {
    cells: results.cells.map(cell),
    steps: results.steps.map((step) => ({
      key: step.key,
      title: step.title,
      status: step.status,
      durationMs: step.durationMs,
      parentKey: step.parentId === null ? null : (keyOf.get(step.parentId) ?? `unknown parent ${step.parentId}`),
      cells: step.cells.map(cell),
    })),
  };
}

interface Scenario {
  point: CrashPoint;
  hit: number;
  /** What the killed request was, and whether its artifact must exist after the restart. */
  killed: 'first screenshot' | 'visual diff' | 'delete';
  committed: boolean;
}

// Each upload reaches the three blob points once per file: the screenshot once, the visual diff
// three times (baseline, actual, diff). Hit 3 lands in the visual diff's second image, with one of
// its blobs durable and no row yet; hit 1 in the very first upload, before anything was acknowledged.
const SCENARIOS: Scenario[] = [
  { point: 'after-fsync-file', hit: 1, killed: 'first screenshot', committed: false },
  { point: 'after-fsync-file', hit: 3, killed: 'visual diff', committed: false },
  { point: 'after-rename', hit: 3, killed: 'visual diff', committed: false },
  { point: 'after-dir-fsync', hit: 3, killed: 'visual diff', committed: false },
  { point: 'before-commit', hit: 2, killed: 'visual diff', committed: false },
  { point: 'after-commit-before-response', hit: 2, killed: 'visual diff', committed: true },
  { point: 'after-row-delete', hit: 1, killed: 'delete', committed: true },
];

/**
 * The blob points behave the same whatever database holds the rows (no row exists yet there), so
 * PostgreSQL runs the points around its own COMMIT and one blob point as a control.
 */
const POSTGRES_POINTS: CrashPoint[] = ['after-dir-fsync', 'before-commit', 'after-commit-before-response', 'after-row-delete'];
const scenariosFor = (dialect: string) => (dialect === 'sqlite' ? SCENARIOS : SCENARIOS.filter((s) => POSTGRES_POINTS.includes(s.point)));

const tempDirs: string[] = [];
after(() => {
  for (const dir of tempDirs) fs.rmSync(dir, { recursive: true, force: true });
});

for (const dialect of DIALECTS) {
  describe(`[${dialect}] crash points (DUR-13b)`, () => {
    for (const scenario of scenariosFor(dialect)) {
      const { point, hit } = scenario;
      test(`killed at ${point}:${hit} (during the ${scenario.killed}), the restarted server keeps every invariant`, async () => {
        const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'attest-crash-'));
        tempDirs.push(dataDir);
        const storage = await createStorage(dialect, dataDir, generateKey('standard'));
        let crashing: SpawnedServer | undefined;
        try {
          crashing = await spawnServer(storage, { ATTEST_CRASH_AT: `${point}:${hit}` });
          const key = storage.adminKey;
          const project = await crashing.admin.call(v1.projects.createProject, {
            body: { key: `C${randomBytes(3).toString('hex').toUpperCase()}`, name: 'Crash' },
          });
          const runId = (await startRun(crashing.admin, project.id)).id;
          const acked = new Map<string, string>(); // artifact id → sha256 of its content
          const screenshotPng = await randomPng();
          const diffParts = {
            baseline: { bytes: await randomPng() },
            actual: { bytes: await randomPng() },
            diff: { bytes: await randomPng() },
          };
          const diffMetadata = { testRunId: runId, kind: 'visual-diff', name: 'diff', idempotencyKey: 'the-diff' };
          /** A screenshot of the run, uploaded through the server at `baseUrl`. */
          const uploadScreenshot = (baseUrl: string, name: string, bytes: Uint8Array) =>
            upload(baseUrl, key, project.id, { testRunId: runId, kind: 'screenshot', name }, { file: { bytes } });

          const first = await uploadScreenshot(crashing.url, 'a.png', screenshotPng).catch((error: unknown) => error);
          if (scenario.killed === 'first screenshot') {
            assert.ok(first instanceof Error, 'the first upload never got an answer');
          } else {
            assert.equal((first as { status: number }).status, 201);
            acked.set(String((first as { body: { id: string } }).body.id), sha256(screenshotPng));
            if (scenario.killed === 'visual diff') {
              await assert.rejects(upload(crashing.url, key, project.id, diffMetadata, diffParts), 'the visual diff never got an answer');
            } else {
              const diff = await upload(crashing.url, key, project.id, diffMetadata, diffParts);
              assert.equal(diff.status, 201);
              const [deleted] = [...acked.keys()];
              await assert.rejects(crashing.admin.call(v1.artifacts.deleteArtifact, { params: { artifactId: deleted as string } }));
              acked.delete(deleted as string);
              acked.set(String(diff.body.id), sha256(diffParts.diff.bytes));
            }
          }
          const death = await crashing.exited;
          assert.equal(death.signal, 'SIGKILL', `the server died at the crash point: ${crashing.output.slice(-5).join('\n')}`);
          if (point === 'after-fsync-file') {
            assert.ok(filesUnder(path.join(dataDir, 'tmp')).length > 0, 'the killed upload left its temp file behind');
          }

          const restarted = await spawnServer(storage);
          try {
            const records = await assertInvariants(storage);
            // I2: every acknowledged artifact is there and downloads byte-identical.
            for (const [artifactId, sha] of acked) {
              const response = await restarted.admin.fetchRaw('GET', `/artifact/artifacts/${artifactId}/content`);
              assert.equal(response.status, 200, `acknowledged artifact ${artifactId}`);
              assert.equal(sha256(Buffer.from(await response.arrayBuffer())), sha);
            }
            // The killed request: committed (or deleted) only when the crash came after COMMIT.
            const unacknowledged = records.artifactIds.filter((id) => !acked.has(id));
            if (scenario.killed === 'delete') {
              assert.deepEqual(unacknowledged, [], 'the deleted row stays deleted');
            } else {
              assert.equal(
                unacknowledged.length,
                scenario.committed ? 1 : 0,
                `rows beyond the acknowledged ones: ${unacknowledged.join(', ')}`,
              );
            }
            if (scenario.killed === 'visual diff') {
              // The reporter retries with its idempotency key: it gets the committed artifact, or stores it now; never two.
              const retry = await upload(restarted.url, key, project.id, diffMetadata, diffParts);
              assert.equal(retry.status, scenario.committed ? 200 : 201, JSON.stringify(retry.body));
              const details = await restarted.admin.call(v1.artifacts.getArtifacts, { query: { ids: String(retry.body.id) } });
              assert.deepEqual(
                details.items[0]?.images.map((i) => i.role),
                ['baseline', 'actual', 'diff'],
              );
            }
            // I6: the restarted server takes a new write and reads it back.
            const fresh = await randomPng();
            const late = await uploadScreenshot(restarted.url, 'after.png', fresh);
            assert.equal(late.status, 201);
            const image = await restarted.admin.fetchRaw('GET', `/images/${(late.body.images as { id: string }[])[0]?.id}`);
            assert.equal(sha256(Buffer.from(await image.arrayBuffer())), sha256(fresh));
            await assertInvariants(storage);
          } finally {
            await restarted.stop();
          }
        } finally {
          // When it did not die where it should have (a failed assertion above), it must not outlive the test.
          await crashing?.stop();
          await storage.drop();
        }
      });
    }

    // DUR-4: a results post is one transaction. The crash point sits after its step rows are inserted
    // and before its text cells and COMMIT; hit 2 is the second post, so the first is acknowledged.
    test('killed at results-mid-transaction:2 (inside a 1 000-step results post), the restart has none of that post and all of the acknowledged one', {
      timeout: 180_000,
    }, async () => {
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'attest-crash-'));
      tempDirs.push(dataDir);
      const storage = await createStorage(dialect, dataDir, generateKey('standard'));
      let crashing: SpawnedServer | undefined;
      try {
        crashing = await spawnServer(storage, { ATTEST_CRASH_AT: 'results-mid-transaction:2' });
        const project = await crashing.admin.call(v1.projects.createProject, {
          body: { key: `R${randomBytes(3).toString('hex').toUpperCase()}`, name: 'Crash results' },
        });
        const testRunId = (await startRun(crashing.admin, project.id)).id;
        const earlier = resultsPost('early', 10);
        // With an idempotency key: the key commits with the steps, so the killed post left no trace of it.
        const big = { ...resultsPost('big', 1000), idempotencyKey: 'big-post' };

        const acked = await crashing.admin.call(v1.results.appendResults, { params: { testRunId }, body: earlier });
        assert.equal(acked.steps.filter((step) => step.created).length, 10, 'the earlier post was acknowledged whole');
        const killed = await crashing.admin.call(v1.results.appendResults, { params: { testRunId }, body: big }).then(
          (reply) => reply,
          (error: unknown) => error,
        );
        assert.ok(
          killed instanceof Error && !(killed instanceof ApiError),
          `the 1 000-step post got no answer at all, got: ${killed instanceof Error ? killed.message : `an answer ${JSON.stringify(killed).slice(0, 80)}`}`,
        );
        const death = await crashing.exited;
        assert.equal(death.signal, 'SIGKILL', `the server died at the crash point: ${crashing.output.slice(-5).join('\n')}`);
        assert.ok(
          crashing.output.some((line) => line.includes('ATTEST_CRASH_AT reached results-mid-transaction:2')),
          'it was killed inside the transaction of the 1 000-step post',
        );

        const restarted = await spawnServer(storage);
        try {
          assert.deepEqual((await inspectRecords(storage)).problems, [], 'I3: the database is consistent');
          // All or nothing, and here nothing (the kill came before COMMIT): exactly the acknowledged post is stored.
          assert.deepEqual(
            await storedResults(storage, testRunId),
            { steps: 10, cells: 11, nextPosition: itemsOf(earlier) },
            'stored steps and cells of the run: only the acknowledged post',
          );
          assert.deepEqual(
            await readBack(restarted.admin, testRunId),
            expectedResults([earlier]),
            'the acknowledged post reads back whole',
          );

          // The reporter posts the same 1 000 steps again, same key: all are new (neither they nor the key
          // were half-stored), and all are there.
          const retry = await restarted.admin.call(v1.results.appendResults, { params: { testRunId }, body: big });
          assert.equal(retry.steps.length, 1000);
          assert.deepEqual(
            retry.steps.filter((step) => !step.created || step.cells.some((cell) => !cell.created)).map((step) => step.key),
            [],
            'every step and cell of the retried post is stored by it',
          );
          assert.deepEqual(await readBack(restarted.admin, testRunId), expectedResults([earlier, big]));
          assert.deepEqual(await storedResults(storage, testRunId), {
            steps: 1010,
            cells: 1012,
            nextPosition: itemsOf(earlier) + itemsOf(big),
          });
          assert.deepEqual((await inspectRecords(storage)).problems, []);
        } finally {
          await restarted.stop();
        }
      } finally {
        await crashing?.stop();
        await storage.drop();
      }
    });
  });
}

describe('ATTEST_CRASH_AT', () => {
  test('is honoured only with NODE_ENV=test: anywhere else the configuration is refused', () => {
    assert.deepEqual(loadConfig({ NODE_ENV: 'test', ATTEST_CRASH_AT: 'before-commit:2' }).crashAt, { point: 'before-commit', hit: 2 });
    assert.equal(loadConfig({ NODE_ENV: 'test' }).crashAt, undefined);
    assert.throws(() => loadConfig({ NODE_ENV: 'production', ATTEST_CRASH_AT: 'before-commit:1' }), /only accepted with NODE_ENV=test/);
    assert.throws(() => loadConfig({ ATTEST_CRASH_AT: 'before-commit:1' }), /only accepted with NODE_ENV=test/);
    assert.throws(() => loadConfig({ NODE_ENV: 'test', ATTEST_CRASH_AT: 'somewhere:1' }), /must be <point>:<n>/);
    assert.throws(() => loadConfig({ NODE_ENV: 'test', ATTEST_CRASH_AT: 'after-rename:0' }), /must be <point>:<n>/);
  });
});
