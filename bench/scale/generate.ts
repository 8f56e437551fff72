import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { deflateSync } from 'node:zlib';
import SQLite from 'better-sqlite3';
import { type Insertable, Kysely } from 'kysely';
import pg from 'pg';
import { TRIAGE_DEFAULTS } from '../../src/api/v1/projects.ts';
import { loadConfig } from '../../src/server/config.ts';
import { insertRows } from '../../src/server/db/chunks.ts';
import { createDatabase } from '../../src/server/db/database.ts';
import { newRunRow } from '../../src/server/db/repositories/runs.ts';
import { CachingSqliteDialect } from '../../src/server/db/sqlite-driver.ts';
import type {
  Database,
  FailureGroupsTable,
  FailureOccurrencesTable,
  RunDaysTable,
  TestHealthTable,
  TestRunsTable,
} from '../../src/server/db/types.ts';
import { normaliseFailure } from '../../src/server/failures/normalise.ts';
import { DEFAULT_BRANCH_JOBS } from '../../src/server/services/triage/default-branch.ts';
import { groupRowOf } from '../../src/server/services/triage/failure-recording.ts';
import { RUNS_MARGIN, scoreHealth, widestWindow } from '../../src/server/services/triage/health.ts';
import { type HealthRun, healthOutcomes } from '../../src/server/services/triage/outcomes.ts';
import { prng } from '../prng.ts';
import { failureOf } from '../suite.ts';

// The scale data set of `npm run bench -- --scale`: one project family filled to N runs,
// reproducibly from a seed, straight into the schema the server's own migrations make
// (bench/README.md, "The scale data set").
//
// 5 projects × 400 tests (2,000), 20 branches (`main` takes 40% of the runs), 60 days. In the full
// set (SHAPE.fullRuns, a million) every day each project runs its suite as jobs of at most 400 runs
// (one run per test per job, so a job's runs are distinct tests, as a CI job's are): on `main` four
// jobs of about 333 runs, on each other branch one of about 105. A smaller set runs the same jobs,
// of the same sizes, on fewer days (`jobsOn`), so its jobs and its busy days look like the full
// set's and a figure compares like with like; its run count is near the one asked for (10,000
// asks give 9,877), not exactly it. Each run has 10 steps and 2 text cells (its stdout,
// and the failing step's stack or the first step's log); about 7% fail (broken, flaky, regressed,
// fixed and noisy tests, as bench/suite.ts's) with bench/suite.ts's 60 causes, whose messages vary
// by port, id, UUID, duration, time and line. Failed runs and one in ten passed runs carry a
// screenshot; the screenshots share BLOBS distinct PNGs, written to the data folder's blob store.
//
// What completing a run records is recorded as the server does it: error groups from the server's
// own normaliser (first and last seen, occurrences, affected tests and branches, status), the
// occurrences, each failed step's and run's group, each test's health from the server's own
// `healthOutcomes` and `scoreHealth` over its latest runs. test/db/scale-generator.test.ts replays
// a small set through the server's `onRunsCompleted` and proves the same rows come out.
//
// Speed: rows go in through `insertRows` (SQLite: one prepared INSERT run per row) or, on
// PostgreSQL, one `INSERT … SELECT FROM unnest(…)` of thousands of rows, a day per transaction.
// With `triggers: 'bypass'` (the default) the triggers of migrations 0006 (usage counters), 0007
// (artifact_count), 0021 (flaky_milli), 0023 (run_days) and 0025 (group_days) do not fire during
// the load (SQLite: dropped and made again from their own text; PostgreSQL: session_replication_role
// = replica, which also skips the foreign-key checks); the generator writes what they would have,
// and the test proves it equal to what `triggers: 'fire'` leaves. With bypass the indexes that no
// primary key or unique constraint makes are dropped for the load and built again after it, one
// sorted build each instead of a million random inserts into each.

export const SHAPE = {
  projects: 5,
  testsPerProject: 400,
  branches: 20,
  days: 60,
  steps: 10,
  cells: 2,
  blobs: 3000,
  jobMaxRuns: 400,
  devices: 10,
  /** The set whose jobs run every day; a smaller set runs the same jobs on fewer days. */
  fullRuns: 1_000_000,
} as const;

const PROJECT_KEYS = ['SHOP', 'CART', 'AUTH', 'SRCH', 'PROF'];
const BRANCHES = ['main', ...Array.from({ length: SHAPE.branches - 1 }, (_, i) => `feature/f${i + 1}`)];
const ENVIRONMENTS = ['staging', 'qa', 'production'];
const STEP_TITLES = [
  'open the start page',
  'sign in as a customer',
  'search for the product',
  'open the product page',
  'add the product to the cart',
  'open the cart',
  'enter the delivery address',
  'choose the payment method',
  'submit the order',
  'check the confirmation',
];
const DAY = 86_400_000;
const HEALTH = { ...TRIAGE_DEFAULTS };
/** The latest runs of a test the server reads to score its health (health.ts). */
const HEALTH_RUNS = widestWindow(HEALTH) + RUNS_MARGIN;

/**
 * A project's default branch as the server infers it with none set (TRIAGE-16,
 * repositories/branches.ts): the branch most of its latest jobs ran on, ties to the branch whose
 * first job among them came first, then by name.
 */
function defaultBranchOfJobs(jobs: readonly { createdAt: string; id: string; branch: string }[]): string | null {
  const latest = [...jobs]
    .sort((a, b) => (a.createdAt !== b.createdAt ? (a.createdAt < b.createdAt ? 1 : -1) : a.id < b.id ? 1 : -1))
    .slice(0, DEFAULT_BRANCH_JOBS);
  const counts = new Map<string, { jobs: number; first: string }>();
  for (const job of latest) {
    const count = counts.get(job.branch) ?? { jobs: 0, first: job.createdAt };
    count.jobs++;
    if (job.createdAt < count.first) count.first = job.createdAt;
    counts.set(job.branch, count);
  }
  const ranked = [...counts].sort(([a, x], [b, y]) => y.jobs - x.jobs || x.first.localeCompare(y.first) || a.localeCompare(b));
  return ranked[0]?.[0] ?? null;
}

export interface ScaleOptions {
  runs: number;
  seed?: number;
  dataDir: string;
  /** PostgreSQL: the (empty) database to fill; else SQLite in dataDir. */
  databaseUrl?: string;
  /** When the newest runs finish (default: now, to the hour). */
  endsAt?: Date;
  triggers?: 'bypass' | 'fire';
  /** Distinct screenshot blobs (default SHAPE.blobs; tests use fewer). */
  blobs?: number;
  progress?: (runsDone: number) => void;
}

/** What a bench needs to know of a generated set. */
export interface ScaleMeta {
  runs: number;
  seed: number;
  endsAt: string;
  seconds: number;
  projects: { id: string; key: string }[];
  /** Project 0's: its largest job of the last day on main, a test, a failed run with a screenshot, a device. */
  sample: { projectId: string; jobId: string; testId: string; runId: string; deviceId: string };
  counts: Record<string, number>;
}

/** A day's row of the dashboard's rollup, counted in JS (migration 0023's triggers do it in SQL). */
type RunDay = { [K in keyof RunDaysTable]: K extends 'project_id' | 'day' | 'branch' ? string : number };

/** Adds a completed run's share to its day's row of the rollup. */
function addToRunDays(runDays: Map<string, RunDay>, row: TestRunsTable): void {
  const day = (row.finished_at as string).slice(0, 10);
  const branch = row.branch ?? '';
  const key = `${row.project_id}\u0000${day}\u0000${branch}`;
  let d = runDays.get(key);
  if (!d) {
    d = { project_id: row.project_id, day, branch, runs: 0, passed: 0, failed: 0, skipped: 0, duration_sum: 0, durations: 0 };
    runDays.set(key, d);
  }
  d.runs++;
  if (row.verdict === 'passed') d.passed++;
  if (row.verdict === 'failed' || row.verdict === 'broken') d.failed++;
  if (row.verdict === 'skipped') d.skipped++;
  if (row.started_at !== null) {
    d.duration_sum += Date.parse(row.finished_at as string) - Date.parse(row.started_at);
    d.durations++;
  }
}

/**
 * How many jobs of `stream` (a project's branch's job slot) run on `day`, at `rate` times the full
 * set's runs: at rate 1 one a day, at 0.01 one every hundred days (so one in 0.6 streams runs at all
 * in 60 days), counted back from the last day. A stream's phase (golden-ratio spaced, 0 for stream
 * 0) spreads the smaller sets' jobs over the days; stream 0, the sample job's, runs on the last day.
 */
export function jobsOn(stream: number, day: number, rate: number): number {
  const phase = (stream * 0.618_033_988_749_895) % 1;
  const back = SHAPE.days - 1 - day;
  return Math.ceil(rate * (back + 1) - phase) - Math.ceil(rate * back - phase);
}

/** `total` split into `parts` near-equal whole parts; part `k`. */
const share = (total: number, parts: number, k: number) => Math.floor((total * (k + 1)) / parts) - Math.floor((total * k) / parts);

const iso = (ms: number) => new Date(ms).toISOString();

/** A PNG of `width` × `height` pseudo-random pixels: distinct bytes for every `n`. */
function pngOf(n: number, width: number, height: number): Buffer {
  const random = prng(0x5ca1e + n);
  const raw = Buffer.alloc((width * 3 + 1) * height);
  for (let y = 0; y < height; y++) for (let x = 0; x < width * 3; x++) raw[y * (width * 3 + 1) + 1 + x] = random.int(256);
  const crcTable = Array.from({ length: 256 }, (_, c) => {
    let v = c;
    for (let k = 0; k < 8; k++) v = v & 1 ? 0xedb88320 ^ (v >>> 1) : v >>> 1;
    return v >>> 0;
  });
  const crc = (bytes: Buffer) => {
    let c = 0xffffffff;
    for (const byte of bytes) c = (crcTable[(c ^ byte) & 0xff] as number) ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (type: string, data: Buffer) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
    const sum = Buffer.alloc(4);
    sum.writeUInt32BE(crc(body));
    return Buffer.concat([length, body, sum]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 8;
  header[9] = 2; // truecolour
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', deflateSync(raw)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

type Row = Record<string, unknown>;

/** Where rows go: buffered per table, written in big statements inside the open transaction. */
interface Sink {
  add(table: keyof Database & string, row: Row): Promise<void>;
  begin(): Promise<void>;
  commit(): Promise<void>;
  exec(statement: string): Promise<void>;
  close(): Promise<void>;
}

const FLUSH_ROWS = 20_000;

/**
 * A sink that keeps each table's rows until FLUSH_ROWS of them wait, then inserts them with the
 * dialect's `insert`; every statement, commit and close first flushes what waits. With `overlap`
 * (PostgreSQL) a batch's insert is chained after the one before without being waited for, so the
 * database works on one batch while the generator makes the next (node was idle 58% of a
 * generation, waiting for PostgreSQL); every statement, commit and close waits for the chain first,
 * and a failed insert fails it there.
 */
function bufferedSink(dialect: {
  insert(table: string, rows: Row[]): Promise<void>;
  run(statement: string): Promise<void>;
  close(): Promise<void>;
  overlap?: boolean;
}): Sink {
  const buffers = new Map<string, Row[]>();
  let chain: Promise<void> = Promise.resolve();
  const flush = async (table: string) => {
    const rows = buffers.get(table);
    if (!rows?.length) return;
    buffers.set(table, []);
    if (!dialect.overlap) return dialect.insert(table, rows);
    chain = chain.then(() => dialect.insert(table, rows));
    // Thrown when the chain is next waited for; until then a failure must not go unhandled.
    chain.catch(() => {});
  };
  const flushAll = async () => {
    for (const table of buffers.keys()) await flush(table);
    await chain;
  };
  return {
    async add(table, row) {
      let rows = buffers.get(table);
      if (!rows) {
        rows = [];
        buffers.set(table, rows);
      }
      rows.push(row);
      if (rows.length >= FLUSH_ROWS) await flush(table);
    },
    begin: () => dialect.run('BEGIN'),
    async commit() {
      await flushAll();
      await dialect.run('COMMIT');
    },
    async exec(statement) {
      await flushAll();
      await dialect.run(statement);
    },
    async close() {
      await flushAll();
      await dialect.close();
    },
  };
}

async function sqliteSink(dataDir: string, bypass: boolean): Promise<Sink> {
  const sqlite = new SQLite(path.join(dataDir, 'attest.db'));
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = OFF');
  sqlite.pragma('cache_size = -4000000');
  sqlite.pragma('temp_store = MEMORY');
  sqlite.pragma(`foreign_keys = ${bypass ? 'OFF' : 'ON'}`);
  const db = new Kysely<Database>({ dialect: new CachingSqliteDialect({ database: sqlite }) });
  // The triggers the load bypasses, made again afterwards from their own text.
  const triggers = bypass
    ? (sqlite
        .prepare(
          "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name IN ('test_runs', 'artifacts', 'artifact_images', 'test_health', 'failure_occurrences')",
        )
        .all() as { name: string; sql: string }[])
    : [];
  for (const trigger of triggers) sqlite.exec(`DROP TRIGGER ${trigger.name}`);
  // As on PostgreSQL (postgresSink), the indexes no constraint makes wait for the end of the load.
  const deferred = bypass
    ? (sqlite.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL").all() as {
        name: string;
        sql: string;
      }[])
    : [];
  for (const index of deferred) sqlite.exec(`DROP INDEX "${index.name}"`);
  return bufferedSink({
    insert: (table, rows) => insertRows(db, 'sqlite', table as keyof Database & string, rows as Insertable<Database[keyof Database]>[]),
    run: async (statement) => {
      sqlite.exec(statement);
    },
    async close() {
      for (const index of deferred) sqlite.exec(index.sql);
      for (const trigger of triggers) sqlite.exec(trigger.sql);
      sqlite.exec('ANALYZE');
      sqlite.pragma('optimize');
      sqlite.pragma('wal_checkpoint(TRUNCATE)');
      sqlite.close();
    },
  });
}

async function postgresSink(databaseUrl: string, bypass: boolean): Promise<Sink> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  // The load's own session: no synchronous commit (the set is rebuilt, not recovered), and with
  // `bypass` no triggers (user and foreign-key ones) fire; the generator writes what they would.
  await client.query('SET synchronous_commit = off');
  if (bypass) await client.query('SET session_replication_role = replica');
  // The indexes no constraint needs are dropped for the load and built again after it from their
  // own definitions: one sorted build per index costs less than a million runs' random keys
  // inserted into B-trees that outgrow shared_buffers (1M runs: 298 → 249 s). Primary keys and
  // unique constraints stay (foreign keys need them).
  const deferred = bypass
    ? (
        await client.query<{ name: string; definition: string }>(
          `SELECT i.indexname AS name, i.indexdef AS definition FROM pg_indexes i
           WHERE i.schemaname = 'public'
             AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = format('%I.%I', i.schemaname, i.indexname)::regclass)`,
        )
      ).rows
    : [];
  for (const index of deferred) await client.query(`DROP INDEX "${index.name}"`);
  const types = new Map<string, { columns: Map<string, string> }>();
  const { rows: columns } = await client.query<{ table_name: string; column_name: string; data_type: string; is_generated: string }>(
    "SELECT table_name, column_name, data_type, is_generated FROM information_schema.columns WHERE table_schema = 'public'",
  );
  for (const column of columns) {
    if (column.is_generated === 'ALWAYS') continue;
    let table = types.get(column.table_name);
    if (!table) {
      table = { columns: new Map() };
      types.set(column.table_name, table);
    }
    table.columns.set(column.column_name, column.data_type);
  }
  return bufferedSink({
    overlap: true,
    async insert(table, rows) {
      const names = Object.keys(rows[0] as Row);
      const known = types.get(table)?.columns;
      const arrays = names.map((name) => rows.map((row) => row[name] ?? null));
      const casts = names.map((name, i) => {
        const type = known?.get(name);
        if (!type) throw new Error(`${table}.${name} is not a column the migrations made`);
        return `$${i + 1}::${type === 'character varying' ? 'text' : type}[]`;
      });
      await client.query(`INSERT INTO ${table} (${names.join(', ')}) SELECT * FROM unnest(${casts.join(', ')})`, arrays);
    },
    run: async (statement) => {
      await client.query(statement);
    },
    async close() {
      await client.query('SET session_replication_role = origin');
      await client.query("SET maintenance_work_mem = '1GB'");
      for (const index of deferred) await client.query(index.definition);
      await client.query('ANALYZE');
      await client.end();
    },
  });
}

/** A group as the generator keeps it while the runs complete (failure-recording.ts's `newGroup` and `counting`). */
interface GroupState {
  row: FailureGroupsTable;
  tests: Set<string>;
  branches: Set<string>;
}

/** One run in memory, until its day is written. */
interface Run {
  row: TestRunsTable;
  test: number;
  project: number;
  cause?: number;
  failure?: { message: string; stack: string };
  failedStep?: number;
}

type Blob = { sha256: string; size: number; imageId: string };
type Usage = { runs: number; artifacts: number; logical: number; blobRefs: Map<number, number> };
type HealthState = { project: number; rings: Map<string, HealthRun[]>; lastFinished: string };

/** Everything a generation keeps between its steps: where rows go, what it made so far, and what the triggers would keep. */
interface Generation {
  options: ScaleOptions;
  seed: number;
  bypass: boolean;
  random: ReturnType<typeof prng>;
  endsAt: Date;
  firstDay: number;
  /** When the projects, devices, tests and images were made: the day before the first. */
  createdAt: string;
  sink: Sink;
  counts: Record<string, number>;
  projects: { id: string; key: string }[];
  deviceIds: string[];
  tests: { id: string; name: string; fullName: string }[][];
  blobs: Blob[];
  blobCount: number;
  /** Usage as migration 0006's triggers keep it, artifact counts as 0007's. */
  usage: Usage[];
  /** The dashboard's rollup as migration 0023's triggers keep it (no retries here: nothing is superseded). */
  runDays: Map<string, RunDay>;
  groups: Map<string, GroupState>;
  /** Each test's latest runs on each branch: health is scored on the project's default branch (TRIAGE-11). */
  health: Map<string, HealthState>;
  /** Each project's jobs (created, id, branch): its default branch is inferred from the latest of them (TRIAGE-16). */
  projectJobs: { createdAt: string; id: string; branch: string }[][];
  failureRows: Map<string, ReturnType<typeof normaliseFailure>>;
  /** job → group → failed tests */
  jobFailures: Map<string, Map<string, Set<string>>>;
  /** Kept until the groups they reference are written, at the end (with their final counters). */
  occurrences: FailureOccurrencesTable[];
  sample: ScaleMeta['sample'] | undefined;
  done: number;
  sequence: number;
}

/** Counts the row and hands it to the sink. */
function add(gen: Generation, table: keyof Database & string, row: Row): Promise<void> {
  gen.counts[table] = (gen.counts[table] ?? 0) + 1;
  return gen.sink.add(table, row);
}

/** The schema, as the server makes it, and the generation's state before any row. */
async function startGeneration(options: ScaleOptions): Promise<Generation> {
  const seed = options.seed ?? 33;
  const bypass = (options.triggers ?? 'bypass') === 'bypass';
  const endsAt = options.endsAt ?? new Date(Math.floor(Date.now() / 3_600_000) * 3_600_000);
  const firstDay = Math.floor(endsAt.getTime() / DAY) * DAY - (SHAPE.days - 1) * DAY;
  fs.mkdirSync(options.dataDir, { recursive: true });
  const config = loadConfig({
    ATTEST_DATA_DIR: options.dataDir,
    ...(options.databaseUrl ? { ATTEST_DATABASE_URL: options.databaseUrl } : {}),
  });
  await (await createDatabase(config)).close();
  const sink = options.databaseUrl ? await postgresSink(options.databaseUrl, bypass) : await sqliteSink(options.dataDir, bypass);
  return {
    options,
    seed,
    bypass,
    random: prng(seed),
    endsAt,
    firstDay,
    createdAt: iso(firstDay - DAY),
    sink,
    counts: {},
    projects: [],
    deviceIds: [],
    tests: [],
    blobs: [],
    blobCount: options.blobs ?? SHAPE.blobs,
    usage: [],
    runDays: new Map(),
    groups: new Map(),
    health: new Map(),
    projectJobs: [],
    failureRows: new Map(),
    jobFailures: new Map(),
    occurrences: [],
    sample: undefined,
    done: 0,
    sequence: 0,
  };
}

/** Projects with their triggers (their usage row), in a transaction of their own. */
async function writeProjects(gen: Generation): Promise<void> {
  gen.projects = PROJECT_KEYS.map((key) => ({ id: gen.random.uuid(), key }));
  gen.usage = gen.projects.map(() => ({ runs: 0, artifacts: 0, logical: 0, blobRefs: new Map<number, number>() }));
  gen.projectJobs = gen.projects.map(() => []);
  await gen.sink.begin();
  for (const project of gen.projects)
    await add(gen, 'projects', {
      id: project.id,
      key: project.key,
      name: `Shop ${project.key.toLowerCase()}`,
      description: 'The scale data set (SCALE-8)',
      created_at: gen.createdAt,
      updated_at: gen.createdAt,
      created_by: null,
      retention: null,
      quota_bytes: null,
      failure_rules: null,
      triage_settings: null,
    });
  await gen.sink.commit();
  if (gen.bypass && gen.options.databaseUrl) {
    // Replica mode skipped the projects' own trigger too: their usage rows, as it makes them.
    await gen.sink.begin();
    for (const project of gen.projects)
      await add(gen, 'project_usage', { project_id: project.id, runs: 0, artifacts: 0, logical_bytes: 0, stored_bytes: 0 });
    await gen.sink.commit();
  }
}

async function writeDevices(gen: Generation): Promise<void> {
  for (let d = 0; d < SHAPE.devices; d++) {
    const id = `device-${String(d + 1).padStart(2, '0')}`;
    gen.deviceIds.push(id);
    const labels = [d % 2 ? 'android' : 'ios', `lab-${d % 3}`];
    await add(gen, 'devices', {
      id,
      name: `Phone ${d + 1}`,
      platform: d % 2 ? 'android' : 'ios',
      os_version: `${14 + (d % 4)}`,
      model: `Model ${d}`,
      manufacturer: d % 2 ? 'Acme' : 'Fruit',
      status: 'available',
      labels: JSON.stringify(labels),
      last_seen_at: gen.createdAt,
      created_at: gen.createdAt,
      updated_at: gen.createdAt,
    });
    for (const label of labels) await add(gen, 'device_labels', { device_id: id, label });
  }
}

async function writeTests(gen: Generation): Promise<void> {
  gen.tests = gen.projects.map((project) =>
    Array.from({ length: SHAPE.testsPerProject }, (_, t) => ({
      id: gen.random.uuid(),
      name: `case ${t}`,
      fullName: `com.example.${project.key.toLowerCase()}.Suite${Math.floor(t / 20)} › case ${t}`,
    })),
  );
  for (const [p, project] of gen.projects.entries())
    for (const test of gen.tests[p] ?? [])
      await add(gen, 'tests', {
        id: test.id,
        project_id: project.id,
        name: test.name,
        description: '',
        steps: '[]',
        tags: '[]',
        source_format: 'json',
        source: null,
        full_name: test.fullName,
        created_at: gen.createdAt,
        created_by: null,
        suite: test.fullName.split(' › ')[0],
        links: '[]',
        version: 1,
        updated_at: gen.createdAt,
        updated_by: null,
        // 0 until their health is scored (migration 0021).
        flaky_milli: 0,
      });
}

/** The blobs: real files in the store, their image rows. */
async function writeBlobs(gen: Generation): Promise<void> {
  for (let b = 0; b < gen.blobCount; b++) {
    const bytes = pngOf(gen.seed * 10_000 + b, 24 + (b % 41), 16 + (b % 23));
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    const file = path.join(gen.options.dataDir, 'blobs', sha256.slice(0, 2), sha256.slice(2, 4), sha256);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, bytes);
    const imageId = gen.random.uuid();
    gen.blobs.push({ sha256, size: bytes.length, imageId });
    await add(gen, 'images', {
      id: imageId,
      sha256,
      content_type: 'image/png',
      width: 24 + (b % 41),
      height: 16 + (b % 23),
      size: bytes.length,
      thumbnail_sha256: null,
      created_at: gen.createdAt,
    });
  }
}

/** One job of a day as it is planned: where it runs, and what its runs share. */
interface PlannedJob {
  p: number;
  b: number;
  day: number;
  nth: number;
  size: number;
}

/**
 * The day's jobs, in the order they are made: for each project and branch the day's runs at full
 * size, cut into jobs of at most `jobMaxRuns`; each job keeps that size at every set size, and a
 * smaller set runs fewer of them (`jobsOn`).
 */
function jobsOfDay(gen: Generation, day: number, visit: (job: PlannedJob) => void): void {
  for (let p = 0; p < SHAPE.projects; p++) {
    const ofDay = share(SHAPE.fullRuns, SHAPE.days * SHAPE.projects, day * SHAPE.projects + p);
    const main = Math.round(ofDay * 0.4);
    for (let b = 0; b < SHAPE.branches; b++) {
      let nth = 0;
      const n = b === 0 ? main : share(ofDay - main, SHAPE.branches - 1, b - 1);
      const parts = Math.ceil(n / SHAPE.jobMaxRuns);
      for (let part = 0; part < parts; part++) {
        const stream = (p * SHAPE.branches + b) * Math.ceil(SHAPE.fullRuns / SHAPE.jobMaxRuns) + part;
        for (let j = 0; j < jobsOn(stream, day, gen.options.runs / SHAPE.fullRuns); j++) {
          nth++;
          visit({ p, b, day, nth, size: share(n, parts, part) });
        }
      }
    }
  }
}

/** What a job's runs share. */
interface JobLabels {
  jobId: string;
  branch: string;
  environment: string;
  build: string;
  commit: string;
  jobStart: number;
}

/** The `k`th run of a job: its test, times and verdict (broken, flaky, regressed, fixed and noisy tests, as bench/suite.ts's). */
function runOfJob(gen: Generation, job: PlannedJob, labels: JobLabels, offset: number, k: number): Run {
  const { random } = gen;
  const t = (offset + k * 7) % SHAPE.testsPerProject;
  const test = gen.tests[job.p]?.[t] as { id: string; name: string };
  const created = labels.jobStart + k * 2500 + random.int(1000);
  const finished = created + 200 + random.int(1200);
  const i = job.p * SHAPE.testsPerProject + t;
  const cause = Math.floor(i / 25) % 60;
  const slot = i % 25;
  const turn = Math.floor(i / 25) % SHAPE.days;
  const fails =
    slot === 0 ||
    (slot === 7 && random.next() < 0.5) ||
    (slot === 13 && job.day >= turn) ||
    (slot === 19 && job.day < turn) ||
    random.next() < 0.01;
  const skipped = !fails && slot === 22 && random.next() < 0.3;
  const verdict = fails ? (Math.floor(cause / 5) === 4 ? 'broken' : 'failed') : skipped ? 'skipped' : 'passed';
  const run: Run = {
    test: t,
    project: job.p,
    row: newRunRow({
      id: random.uuid(),
      project_id: gen.projects[job.p]?.id as string,
      test_id: test.id,
      job_id: labels.jobId,
      name: test.name,
      status: 'completed',
      verdict,
      environment: labels.environment,
      branch: labels.branch,
      build: labels.build,
      commit_sha: labels.commit,
      created_at: iso(created),
      started_at: iso(created + 5),
      finished_at: iso(finished),
      test_version: 1,
    }),
  };
  if (fails) {
    run.cause = cause;
    run.failure = failureOf(cause, gen.sequence++, i);
    run.failedStep = 3 + (cause % 6);
  }
  return run;
}

/** A planned job's runs (pushed to `runs`) and its row. */
function makeJob(gen: Generation, job: PlannedJob, dayStart: number, runs: Run[]): Row {
  const { random } = gen;
  const { p, b, day, nth } = job;
  const jobId = random.uuid();
  const branch = BRANCHES[b] as string;
  const jobStart = dayStart + Math.floor(random.next() * 20 * 3_600_000);
  const commit = createHash('sha1').update(`${p}:${b}:${day}`).digest('hex');
  const environment = ENVIRONMENTS[(b + nth - 1) % ENVIRONMENTS.length] as string;
  const build = `${day + 1}.${nth}`;
  const labels = { jobId, branch, environment, build, commit, jobStart };
  const offset = random.int(SHAPE.testsPerProject);
  let last = jobStart;
  for (let k = 0; k < job.size; k++) {
    const run = runOfJob(gen, job, labels, offset, k);
    last = Math.max(last, Date.parse(run.row.finished_at as string));
    runs.push(run);
  }
  gen.projectJobs[p]?.push({ createdAt: iso(jobStart), id: jobId, branch });
  if (p === 0 && b === 0 && day === SHAPE.days - 1 && nth === 1)
    gen.sample = {
      projectId: gen.projects[0]?.id as string,
      jobId,
      testId: gen.tests[0]?.[0]?.id as string,
      runId: '',
      deviceId: gen.deviceIds[0] as string,
    };
  return {
    id: jobId,
    project_id: gen.projects[p]?.id,
    name: `${branch} ${environment} ${build}`,
    request: JSON.stringify({ testIds: [], deviceIds: [], deviceLabels: [], environment, branch, build, commit, repository: null }),
    cancelled_at: null,
    created_at: iso(jobStart),
    created_by: null,
    idempotency_key: null,
    idempotency_fingerprint: null,
    closed_at: iso(last + 1000),
    ci_url: `https://ci.example.com/${gen.projects[p]?.key}/${day + 1}/${b}/${nth}`,
    incident_group_id: null,
    incident_failed_runs: null,
  };
}

/** A failed run's group (made or counted) and its occurrence, as failure-recording.ts records them. */
function recordFailure(gen: Generation, row: TestRunsTable, failure: { message: string; stack: string }): FailureOccurrencesTable {
  const at = row.finished_at as string;
  const key = `${failure.message}\u0000${failure.stack}`;
  let normalised = gen.failureRows.get(key);
  if (!normalised) {
    normalised = normaliseFailure({ message: failure.message, trace: failure.stack });
    gen.failureRows.set(key, normalised);
  }
  const groupKey = `${row.project_id}\u0000${normalised.fingerprint}`;
  let group = gen.groups.get(groupKey);
  if (!group) {
    group = {
      tests: new Set(),
      branches: new Set(),
      row: groupRowOf(gen.random.uuid(), row, { message: failure.message, normalised }, undefined, at),
    };
    gen.groups.set(groupKey, group);
  }
  const g = group.row;
  if (at > g.last_seen_at || (g.occurrences === 0 && row.id !== g.last_seen_run_id))
    Object.assign(g, { last_seen_at: at, last_seen_run_id: row.id, last_seen_job_id: row.job_id });
  if (g.status === 'new' && row.id !== g.first_seen_run_id && (g.first_seen_job_id === null || row.job_id !== g.first_seen_job_id))
    g.status = 'known';
  g.occurrences++;
  g.updated_at = at;
  group.tests.add(row.test_id as string);
  if (row.branch !== null) group.branches.add(row.branch);
  g.affected_tests = group.tests.size;
  g.affected_branches = group.branches.size;
  row.failure_group_id = g.id;
  const byGroup = gen.jobFailures.get(row.job_id as string) ?? new Map<string, Set<string>>();
  gen.jobFailures.set(row.job_id as string, byGroup);
  const failedTests = byGroup.get(g.id) ?? new Set<string>();
  byGroup.set(g.id, failedTests);
  failedTests.add(row.test_id as string);
  // step_id is set when the day is written, once the step has its id.
  return {
    group_id: g.id,
    run_id: row.id,
    project_id: row.project_id,
    job_id: row.job_id,
    step_id: null,
    test_key: row.test_id as string,
    branch: row.branch,
    at,
  };
}

/** The run joins its test's latest runs on its branch, which its health is scored on. */
function recordHealthRun(gen: Generation, run: Run): void {
  const { row } = run;
  const testId = row.test_id as string;
  const at = row.finished_at as string;
  const state = gen.health.get(testId) ?? { project: run.project, rings: new Map(), lastFinished: at };
  gen.health.set(testId, state);
  const ring = state.rings.get(row.branch ?? '') ?? [];
  state.rings.set(row.branch ?? '', ring);
  ring.push({
    id: row.id,
    job_id: row.job_id,
    device_id: row.device_id,
    status: row.status,
    verdict: row.verdict,
    attempt: row.attempt,
    created_at: row.created_at,
    branch: row.branch,
    commit_sha: row.commit_sha,
  });
  if (ring.length > HEALTH_RUNS * 2) ring.splice(0, HEALTH_RUNS);
  state.lastFinished = at;
}

/** Completion, in the order the runs finished: groups, occurrences, health (failure-recording.ts, health.ts); answers the day's occurrences. */
function completeRuns(gen: Generation, runs: Run[]): FailureOccurrencesTable[] {
  runs.sort((a, b) => (a.row.finished_at as string).localeCompare(b.row.finished_at as string) || a.row.id.localeCompare(b.row.id));
  const ofDay: FailureOccurrencesTable[] = [];
  for (const run of runs) {
    if (gen.bypass) addToRunDays(gen.runDays, run.row);
    if (run.failure) ofDay.push(recordFailure(gen, run.row, run.failure));
    recordHealthRun(gen, run);
  }
  return ofDay;
}

/** A run's ten steps, the failed one failed and those after it skipped. */
async function writeSteps(gen: Generation, run: Run, stepIds: readonly string[]): Promise<void> {
  const { row } = run;
  const created = Date.parse(row.created_at);
  for (let s = 0; s < SHAPE.steps; s++) {
    const status =
      row.verdict === 'skipped'
        ? 'skipped'
        : run.failedStep === undefined || s < run.failedStep
          ? 'passed'
          : s === run.failedStep
            ? (row.verdict as 'failed' | 'broken')
            : 'skipped';
    await add(gen, 'steps', {
      id: stepIds[s],
      run_id: row.id,
      parent_id: null,
      depth: 1,
      client_key: null,
      position: s,
      title: STEP_TITLES[s],
      status,
      started_at: iso(created + 5 + s * 50),
      duration_ms: status === 'skipped' ? 0 : 20 + ((s * 37 + created) % 400),
      error_message: s === run.failedStep ? (run.failure?.message ?? null) : null,
      created_at: row.created_at,
      failure_group_id: s === run.failedStep ? row.failure_group_id : null,
    });
  }
}

/** A run's two text cells: its stdout, and the failing step's stack or the first step's log. */
async function writeCells(gen: Generation, run: Run, stepIds: readonly string[]): Promise<void> {
  const { row } = run;
  const created = Date.parse(row.created_at);
  await add(gen, 'text_cells', {
    id: gen.random.uuid(),
    run_id: row.id,
    step_id: null,
    client_key: null,
    position: SHAPE.steps,
    name: 'stdout',
    media_type: 'text/plain',
    text: `${row.name} ran on ${row.environment} (${row.branch} ${row.build})\nbrowser: chromium 131, viewport 1280x720\n`,
    created_at: row.created_at,
  });
  await add(gen, 'text_cells', {
    id: gen.random.uuid(),
    run_id: row.id,
    step_id: run.failure ? stepIds[run.failedStep as number] : stepIds[0],
    client_key: null,
    position: SHAPE.steps + 1,
    name: run.failure ? 'trace' : 'log',
    media_type: 'text/plain',
    text: run.failure ? run.failure.stack : `GET /start 200 in ${(created % 90) + 10} ms`,
    created_at: row.created_at,
  });
}

/** A run's screenshot on step `shot`: the artifact, its image link and their share of the project's usage. */
async function writeScreenshot(gen: Generation, run: Run, blob: Blob, stepId: string | undefined, day: number): Promise<void> {
  const { row } = run;
  const u = gen.usage[run.project] as Usage;
  const artifactId = gen.random.uuid();
  const blobIndex = gen.blobs.indexOf(blob);
  await add(gen, 'artifacts', {
    id: artifactId,
    project_id: row.project_id,
    run_id: row.id,
    step_id: stepId,
    kind: 'screenshot',
    name: run.failure ? 'failure.png' : 'final.png',
    content_type: 'image/png',
    size: blob.size,
    sha256: blob.sha256,
    idempotency_key: null,
    created_at: row.finished_at,
    created_by: null,
  });
  await add(gen, 'artifact_images', { artifact_id: artifactId, image_id: blob.imageId, role: 'screenshot', position: 0 });
  u.artifacts++;
  u.logical += blob.size;
  // The artifact's own content, then its image link: two references to the one blob.
  u.blobRefs.set(blobIndex, (u.blobRefs.get(blobIndex) ?? 0) + 2);
  const { sample } = gen;
  if (sample && !sample.runId && row.project_id === sample.projectId && day === SHAPE.days - 1 && run.failure) sample.runId = row.id;
}

/** The day's rows: its jobs, then each run with its steps, cells, occurrence and screenshot. */
async function writeDay(
  gen: Generation,
  day: number,
  jobs: readonly Row[],
  runs: readonly Run[],
  ofDay: FailureOccurrencesTable[],
): Promise<void> {
  const { random } = gen;
  for (const job of jobs) await add(gen, 'jobs', job);
  let occurrence = 0;
  for (const run of runs) {
    const { row } = run;
    (gen.usage[run.project] as Usage).runs++;
    const stepIds: string[] = [];
    for (let s = 0; s < SHAPE.steps; s++) stepIds.push(random.uuid());
    const shot = run.failure ? run.failedStep : random.next() < 0.1 ? SHAPE.steps - 1 : undefined;
    const blob = shot === undefined ? undefined : (gen.blobs[random.int(gen.blobCount)] as Blob);
    if (blob) row.artifact_count = gen.bypass ? 1 : 0;
    await add(gen, 'test_runs', row as unknown as Row);
    await writeSteps(gen, run, stepIds);
    await writeCells(gen, run, stepIds);
    if (run.failure) {
      const entry = ofDay[occurrence++] as FailureOccurrencesTable;
      entry.step_id = stepIds[run.failedStep as number] as string;
      gen.occurrences.push(entry);
    }
    if (blob && shot !== undefined) await writeScreenshot(gen, run, blob, stepIds[shot], day);
    gen.done++;
  }
}

/** The groups and their reach, the occurrences; answers each job's incident (TRIAGE-8), set on its row. */
async function writeGroups(gen: Generation): Promise<Map<string, { groupId: string; tests: number }>> {
  for (const group of gen.groups.values()) {
    await add(gen, 'failure_groups', group.row as unknown as Row);
    for (const test of group.tests) await add(gen, 'failure_group_tests', { group_id: group.row.id, test_key: test });
    for (const branch of group.branches) await add(gen, 'failure_group_branches', { group_id: group.row.id, branch });
  }
  for (const entry of gen.occurrences) await add(gen, 'failure_occurrences', entry as unknown as Row);
  const incidents = new Map<string, { groupId: string; tests: number }>();
  for (const [jobId, byGroup] of gen.jobFailures) {
    let total = 0;
    let top: { groupId: string; tests: number } | undefined;
    for (const [groupId, failed] of byGroup) {
      total += failed.size;
      if (!top || failed.size > top.tests) top = { groupId, tests: failed.size };
    }
    if (top && total >= TRIAGE_DEFAULTS.incidentMinFailures && top.tests > TRIAGE_DEFAULTS.incidentShare * total) incidents.set(jobId, top);
  }
  for (const [jobId, incident] of incidents)
    await gen.sink.exec(
      `UPDATE jobs SET incident_group_id = '${incident.groupId}', incident_failed_runs = ${incident.tests} WHERE id = '${jobId}'`,
    );
  return incidents;
}

/** Each test's health, scored on its project's default branch over its latest runs outside incidents. */
async function writeHealth(gen: Generation, incidents: ReadonlyMap<string, unknown>): Promise<void> {
  const defaultBranches = gen.projectJobs.map(defaultBranchOfJobs);
  for (const [testId, state] of gen.health) {
    const branch = defaultBranches[state.project] ?? null;
    const runs = branch === null ? [...state.rings.values()].flat() : (state.rings.get(branch) ?? []);
    const latest = runs
      .filter((run) => run.job_id === null || !incidents.has(run.job_id))
      .sort((a, b) => (a.created_at !== b.created_at ? (a.created_at < b.created_at ? 1 : -1) : a.id < b.id ? 1 : -1))
      .slice(0, HEALTH_RUNS);
    const score = scoreHealth(healthOutcomes(latest), HEALTH);
    const row: TestHealthTable = {
      test_id: testId,
      project_id: gen.projects[state.project]?.id as string,
      state: score.state,
      flaky_score: score.flakyScore,
      runs_considered: score.runsConsidered,
      failing_streak: score.failingStreak,
      updated_at: state.lastFinished,
      monitor: score.monitor,
      branch,
      evidence: score.evidence === null ? null : JSON.stringify(score.evidence),
    };
    await add(gen, 'test_health', row as unknown as Row);
  }
  // What 0021's trigger writes on each test_health insert with a score that is not 0.
  if (gen.bypass)
    await gen.sink.exec(
      'UPDATE tests SET flaky_milli = (SELECT cast(round(h.flaky_score * 1000) AS integer) FROM test_health h WHERE h.test_id = tests.id) ' +
        'WHERE EXISTS (SELECT 1 FROM test_health h WHERE h.test_id = tests.id AND h.flaky_score <> 0)',
    );
}

/** With the triggers bypassed, what they would have kept: the two rollups (0023, 0025), the blobs' references and the usage (0006). */
async function writeRollups(gen: Generation): Promise<void> {
  for (const day of gen.runDays.values()) await add(gen, 'run_days', day);
  const groupDays = new Map<string, { project_id: string; day: string; group_id: string; occurrences: number }>();
  for (const entry of gen.occurrences) {
    const day = entry.at.slice(0, 10);
    const key = `${entry.group_id}\u0000${day}`;
    const row = groupDays.get(key) ?? { project_id: entry.project_id, day, group_id: entry.group_id, occurrences: 0 };
    row.occurrences++;
    groupDays.set(key, row);
  }
  for (const row of groupDays.values()) await add(gen, 'group_days', row);
  for (const [p, project] of gen.projects.entries()) {
    const u = gen.usage[p] as Usage;
    let stored = 0;
    for (const [blobIndex, refs] of u.blobRefs) {
      const blob = gen.blobs[blobIndex] as Blob;
      stored += blob.size;
      await add(gen, 'project_blobs', { project_id: project.id, sha256: blob.sha256, size: blob.size, refs });
    }
    await gen.sink.exec(
      `UPDATE project_usage SET runs = ${u.runs}, artifacts = ${u.artifacts}, logical_bytes = ${u.logical}, stored_bytes = ${stored} WHERE project_id = '${project.id}'`,
    );
  }
}

/** Fills an empty database (migrated here first, by the server's own code) to `runs` runs. */
export async function generateScale(options: ScaleOptions): Promise<ScaleMeta> {
  const started = performance.now();
  const gen = await startGeneration(options);
  await writeProjects(gen);
  // The rest of the load: the fixtures in one transaction, then one per day.
  await gen.sink.begin();
  await writeDevices(gen);
  await writeTests(gen);
  await writeBlobs(gen);
  await gen.sink.commit();
  await gen.sink.begin();
  for (let day = 0; day < SHAPE.days; day++) {
    const dayStart = gen.firstDay + day * DAY;
    const runs: Run[] = [];
    const jobs: Row[] = [];
    jobsOfDay(gen, day, (job) => jobs.push(makeJob(gen, job, dayStart, runs)));
    const ofDay = completeRuns(gen, runs);
    await writeDay(gen, day, jobs, runs, ofDay);
    await gen.sink.commit();
    options.progress?.(gen.done);
    await gen.sink.begin();
  }
  // What completing the runs left behind, beside them: the groups and their reach, each test's health.
  const incidents = await writeGroups(gen);
  await writeHealth(gen, incidents);
  if (gen.bypass) await writeRollups(gen);
  await gen.sink.commit();
  await gen.sink.close();
  if (!gen.sample) throw new Error('no sample job: too few runs for one on the last day');
  return {
    runs: gen.done,
    seed: gen.seed,
    endsAt: gen.endsAt.toISOString(),
    seconds: (performance.now() - started) / 1000,
    projects: gen.projects,
    sample: gen.sample,
    counts: gen.counts,
  };
}
