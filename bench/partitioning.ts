// The scale round's partitioning question: should PostgreSQL partition runs and results by month,
// so that retention drops partitions instead of deleting rows? Measured on a copy of the
// 1,000,000-run scale data set (bench/scale, `npm run bench -- --scale` builds it): the same rows
// as today's tables and as tables partitioned by month, retention both ways, and the reads every
// page makes both ways. docs/decisions.md records the decision, docs/performance.md the figures.
//
//   node --import tsx bench/partitioning.ts [template database]
//
// The template defaults to the newest `attest_scale_1000000_*` database. Nothing of the template is
// changed: the work happens in a copy (`attest_partitioning_experiment`), dropped at the end.
import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import cliProgress from 'cli-progress';
import pg from 'pg';

const SERVER = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432';
const COPY = 'attest_partitioning_experiment';
/** Runs the retention comparison deletes row by row, in the sweep's batches. */
const EXPIRED = 100_000;
const BATCH = 1000;
/** Reads per query and layout. */
const READS = 2000;

const admin = new pg.Client({ connectionString: `${SERVER}/postgres` });
await admin.connect();
const template = process.argv[2] ?? (await newestScaleDatabase());
console.log(`template ${template}; copy ${COPY}`);
await admin.query(`DROP DATABASE IF EXISTS ${COPY}`);
await copyOf(template);
const db = new pg.Client({ connectionString: `${SERVER}/${COPY}` });
await db.connect();

const bar = new cliProgress.SingleBar({ format: 'partitioning [{bar}] {value}/{total} {step}' }, cliProgress.Presets.shades_classic);
bar.start(6, 0, { step: 'partitioned copies of runs, steps and text cells' });
const buildSeconds = await timed(buildPartitioned);
bar.increment({ step: 'reads, both layouts' });
const reads = await readFigures();
bar.increment({ step: `retention by rows: the ${EXPIRED.toLocaleString('en')} oldest runs` });
const byRows = await deleteOldestRuns();
bar.increment({ step: 'retention by partitions' });
const byPartitions = await dropOldestMonths();
bar.increment({ step: 'sizes' });
const sizes = await db.query<{ name: string; bytes: string }>(
  `SELECT c.relname AS name, pg_total_relation_size(c.oid)::bigint AS bytes FROM pg_class c
   WHERE c.relname IN ('test_runs', 'steps', 'text_cells') ORDER BY 1`,
);
bar.increment({ step: 'drop the copy' });
await db.end();
await admin.query(`DROP DATABASE ${COPY}`);
await admin.end();
bar.stop();

console.log(
  `\nPartitioned copies built in ${buildSeconds.toFixed(0)} s (INSERT … SELECT of every run, step and text cell, then ANALYZE).\n`,
);
console.log('| Read (2,000 each, one connection) | Today: p50 / p99 | Partitioned by month: p50 / p99 |');
console.log('|---|---|---|');
for (const read of reads) console.log(`| ${read.name} | ${ms(read.today)} | ${ms(read.partitioned)} |`);
console.log('\n| Retention | Runs | Seconds | Per 1,000 runs |');
console.log('|---|---|---|---|');
console.log(
  `| DELETE in batches of ${BATCH} (cascade to steps, text cells, artifacts, occurrences; usage triggers) | ${byRows.runs.toLocaleString('en')} | ${byRows.seconds.toFixed(1)} | ${((byRows.seconds * 1000 * 1000) / byRows.runs).toFixed(0)} ms |`,
);
for (const month of byPartitions)
  console.log(
    `| DROP TABLE of ${month.month}'s partitions (runs, steps, text cells) | ${month.runs.toLocaleString('en')} | ${month.seconds.toFixed(3)} | ${((month.seconds * 1000 * 1000) / Math.max(1, month.runs)).toFixed(2)} ms |`,
  );
console.log(`\nSizes after: ${sizes.rows.map((r) => `${r.name} ${(Number(r.bytes) / 2 ** 20).toFixed(0)} MiB`).join(', ')}`);

async function newestScaleDatabase(): Promise<string> {
  const found = await admin.query<{ datname: string }>(
    `SELECT datname FROM pg_database WHERE datname LIKE 'attest\\_scale\\_1000000\\_%' ORDER BY oid DESC LIMIT 1`,
  );
  const name = found.rows[0]?.datname;
  if (!name) throw new Error('no attest_scale_1000000_* database: run `npm run bench -- --scale` first');
  return name;
}

/** CREATE DATABASE … TEMPLATE, again while another session (the scale bench making its own copy) holds the template. */
async function copyOf(name: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await admin.query(`CREATE DATABASE ${COPY} TEMPLATE ${name}`);
      return;
    } catch (error) {
      if (attempt >= 60 || !String(error).includes('being accessed by other users')) throw error;
      await new Promise((resolve) => setTimeout(resolve, 5000));
    }
  }
}

async function timed(work: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await work();
  return (performance.now() - start) / 1000;
}

/**
 * `p_runs`, `p_steps` and `p_cells`: the same rows, partitioned by the month of the run's creation.
 * A partitioned table's keys must hold its partition key, so each child row carries its run's
 * `run_created_at` (a column today's schema does not have), and keys become (id, month column).
 */
async function buildPartitioned(): Promise<void> {
  const months = (
    await db.query<{ month: string }>(`SELECT DISTINCT substr(created_at, 1, 7) AS month FROM test_runs ORDER BY 1`)
  ).rows.map((r) => r.month);
  await db.query(`CREATE TABLE p_runs (LIKE test_runs INCLUDING DEFAULTS) PARTITION BY RANGE (created_at)`);
  await db.query(`CREATE TABLE p_steps (LIKE steps INCLUDING DEFAULTS, run_created_at text NOT NULL) PARTITION BY RANGE (run_created_at)`);
  await db.query(
    `CREATE TABLE p_cells (LIKE text_cells INCLUDING DEFAULTS, run_created_at text NOT NULL) PARTITION BY RANGE (run_created_at)`,
  );
  for (const month of months) {
    const [year, number] = month.split('-').map(Number) as [number, number];
    const next = number === 12 ? `${year + 1}-01` : `${year}-${String(number + 1).padStart(2, '0')}`;
    const suffix = month.replace('-', '_');
    for (const table of ['p_runs', 'p_steps', 'p_cells'])
      await db.query(`CREATE TABLE ${table}_${suffix} PARTITION OF ${table} FOR VALUES FROM ('${month}') TO ('${next}')`);
  }
  await db.query(`INSERT INTO p_runs SELECT * FROM test_runs`);
  await db.query(`INSERT INTO p_steps SELECT s.*, r.created_at FROM steps s JOIN test_runs r ON r.id = s.run_id`);
  await db.query(`INSERT INTO p_cells SELECT c.*, r.created_at FROM text_cells c JOIN test_runs r ON r.id = c.run_id`);
  await db.query(`ALTER TABLE p_runs ADD PRIMARY KEY (id, created_at)`);
  await db.query(`CREATE INDEX p_runs_project ON p_runs (project_id, created_at, id)`);
  await db.query(`CREATE INDEX p_runs_test ON p_runs (test_id, created_at, id)`);
  await db.query(`ALTER TABLE p_steps ADD PRIMARY KEY (id, run_created_at)`);
  await db.query(`CREATE INDEX p_steps_run ON p_steps (run_id, position)`);
  await db.query(`ALTER TABLE p_cells ADD PRIMARY KEY (id, run_created_at)`);
  await db.query(`CREATE INDEX p_cells_run ON p_cells (run_id, position)`);
  await db.query(`ANALYZE`);
}

interface Latency {
  p50: number;
  p99: number;
}
function ms(latency: Latency): string {
  return `${latency.p50.toFixed(2)} / ${latency.p99.toFixed(2)} ms`;
}

/** p50 and p99 of `READS` executions, the parameters drawn from `samples` in turn. */
async function latency(text: string, samples: readonly unknown[][]): Promise<Latency> {
  // A prepared statement's name (PostgreSQL keeps 63 characters of it).
  const name = `q${createHash('sha1').update(text).digest('hex').slice(0, 16)}`;
  const times: number[] = [];
  for (let i = 0; i < READS + 100; i++) {
    const start = performance.now();
    await db.query({ name, text, values: samples[i % samples.length] as unknown[] });
    if (i >= 100) times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  return { p50: times[Math.floor(times.length * 0.5)] as number, p99: times[Math.floor(times.length * 0.99)] as number };
}

/**
 * What pages read, on both layouts: a run by its id (the API's addresses carry no month, so the
 * partitioned table probes each partition's index), a project's newest runs, a deep page of them,
 * a test's history, and a run's steps and text cells by the run's id.
 */
async function readFigures(): Promise<{ name: string; today: Latency; partitioned: Latency }[]> {
  const runs = (
    await db.query<{ id: string; project_id: string; test_id: string; created_at: string }>(
      `SELECT id, project_id, test_id, created_at FROM test_runs TABLESAMPLE SYSTEM (1) REPEATABLE (33) LIMIT 500`,
    )
  ).rows;
  const projects = [...new Set(runs.map((r) => r.project_id))];
  const deep = (
    await db.query<{ created_at: string; id: string }>(
      `SELECT created_at, id FROM test_runs WHERE project_id = $1 ORDER BY created_at DESC, id DESC OFFSET 150000 LIMIT 1`,
      [projects[0]],
    )
  ).rows[0];
  const figures = [
    {
      name: 'a run by its id',
      sql: (runs_: string) => `SELECT * FROM ${runs_} WHERE id = $1`,
      values: runs.map((r) => [r.id]),
      table: 'runs',
    },
    {
      name: "a project's newest 50 runs",
      sql: (runs_: string) => `SELECT * FROM ${runs_} WHERE project_id = $1 ORDER BY created_at DESC, id DESC LIMIT 50`,
      values: projects.map((p) => [p]),
      table: 'runs',
    },
    {
      name: 'a deep page of them (150,000 runs in, by cursor)',
      sql: (runs_: string) =>
        `SELECT * FROM ${runs_} WHERE project_id = $1 AND (created_at, id) < ($2, $3) ORDER BY created_at DESC, id DESC LIMIT 50`,
      values: [[projects[0], deep?.created_at, deep?.id]],
      table: 'runs',
    },
    {
      name: "a test's newest 50 runs",
      sql: (runs_: string) => `SELECT * FROM ${runs_} WHERE test_id = $1 ORDER BY created_at DESC, id DESC LIMIT 50`,
      values: runs.map((r) => [r.test_id]),
      table: 'runs',
    },
    {
      name: "a run's steps, by its id",
      sql: (steps_: string) => `SELECT * FROM ${steps_} WHERE run_id = $1 ORDER BY position`,
      values: runs.map((r) => [r.id]),
      table: 'steps',
    },
    {
      name: "a run's text cells, by its id",
      sql: (cells: string) => `SELECT * FROM ${cells} WHERE run_id = $1 ORDER BY position`,
      values: runs.map((r) => [r.id]),
      table: 'cells',
    },
  ];
  const tables = { runs: ['test_runs', 'p_runs'], steps: ['steps', 'p_steps'], cells: ['text_cells', 'p_cells'] } as const;
  const out = [];
  for (const figure of figures) {
    const [plain, partitioned] = tables[figure.table as keyof typeof tables];
    // Interleaved, twice each, the better of two kept: the machine is shared.
    const a1 = await latency(figure.sql(plain), figure.values);
    const b1 = await latency(figure.sql(partitioned), figure.values);
    const a2 = await latency(figure.sql(plain), figure.values);
    const b2 = await latency(figure.sql(partitioned), figure.values);
    out.push({ name: figure.name, today: a1.p99 < a2.p99 ? a1 : a2, partitioned: b1.p99 < b2.p99 ? b1 : b2 });
  }
  return out;
}

/** Today's retention: the oldest runs deleted in batches, each batch a transaction, with every cascade and trigger. */
async function deleteOldestRuns(): Promise<{ runs: number; seconds: number }> {
  const projects = (await db.query<{ id: string }>(`SELECT id FROM projects ORDER BY id`)).rows.map((r) => r.id);
  const perProject = Math.ceil(EXPIRED / projects.length);
  let runs = 0;
  const seconds = await timed(async () => {
    // Project by project, oldest first through the retention index (project_id, finished_at), as the sweep goes.
    for (const project of projects) {
      let deleted = 0;
      while (deleted < perProject) {
        const result = await db.query(
          `DELETE FROM test_runs WHERE id IN (
             SELECT id FROM test_runs WHERE project_id = $1 AND finished_at IS NOT NULL ORDER BY finished_at LIMIT ${BATCH}
           ) AND keep = 0`,
          [project],
        );
        if (!result.rowCount) break;
        deleted += result.rowCount;
      }
      runs += deleted;
    }
  });
  return { runs, seconds };
}

/** Partitioned retention: the oldest whole months of runs, steps and text cells dropped. */
async function dropOldestMonths(): Promise<{ month: string; runs: number; seconds: number }[]> {
  const partitions = (
    await db.query<{ name: string }>(
      `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
       WHERE i.inhparent = 'p_runs'::regclass ORDER BY c.relname LIMIT 2`,
    )
  ).rows.map((r) => r.name);
  const out = [];
  for (const name of partitions) {
    const suffix = name.replace('p_runs_', '');
    const runs = Number((await db.query<{ n: string }>(`SELECT count(*) AS n FROM ${name}`)).rows[0]?.n);
    const seconds = await timed(async () => {
      await db.query('BEGIN');
      for (const table of ['p_cells', 'p_steps', 'p_runs']) await db.query(`DROP TABLE ${table}_${suffix}`);
      await db.query('COMMIT');
    });
    out.push({ month: suffix.replace('_', '-'), runs, seconds });
  }
  return out;
}
