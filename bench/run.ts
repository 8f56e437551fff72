// `npm run bench` (add `-- --quick` for about a minute): the figures F1–F6, F7 (the export), F8
// (imports), F9 (the S3 blob store) and F10–F11 (answers across runs), each against a baseline
// measured in the same run, written to bench/results/ and docs/performance.md.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import cliProgress from 'cli-progress';
import pg from 'pg';
import { ADMIN_EMAIL, Api, startAttest, stepsOf, tempFolders } from './attest.ts';
import { exportFigure } from './export.ts';
import { peakRss, png, prepareReads, readFigures, type Settings, writeFigures } from './figures.ts';
import { send } from './http-client.ts';
import { importFigures } from './import.ts';
import { dialectSpeedRow, importedFigures, importedSizes, type Row, writeImported } from './imported/figures.ts';
import { answers, freePort, hasCommand, median, PINNED, pinSelf, rssMb, sleep, startPinned } from './lib.ts';
import { type Figure, judge, markdown, write } from './report.ts';
import { s3Figures } from './s3.ts';
import { scaleFigures } from './scale/figures.ts';
import { f10Figures, f11Figures } from './triage.ts';
import { webScaleFigures } from './web-scale.ts';

const quick = process.argv.includes('--quick');
// `--only F1,F3`: just those figures, printed and not written (a partial table would replace the full one).
const onlyAt = process.argv.findIndex((arg) => arg === '--only' || arg.startsWith('--only='));
const onlyList = onlyAt < 0 ? undefined : (process.argv[onlyAt]?.split('=')[1] ?? process.argv[onlyAt + 1] ?? '');
const only = onlyList === undefined ? undefined : new Set(onlyList.toUpperCase().split(','));
const wants = (id: string) => only === undefined || only.has(id.toUpperCase());
const updateDocs = !process.argv.includes('--no-docs') && only === undefined;
if (!hasCommand('wrk')) {
  console.error('npm run bench needs wrk (and nginx for the image baseline): apt-get install -y wrk nginx-light');
  process.exit(1);
}
pinSelf();
const STEPS = 22;
const bar = new cliProgress.SingleBar(
  { format: 'bench [{bar}] {value}/{total} {step}', hideCursor: true },
  cliProgress.Presets.shades_classic,
);
bar.start(STEPS, 0, { step: 'build' });
const settings: Settings = {
  seconds: quick ? 2 : 5,
  repetitions: quick ? 1 : 3,
  step: (label) => bar.increment({ step: label }),
  wants,
};
const figures: Figure[] = [];
const temp = tempFolders();

execFileSync('npm', ['run', 'build', '--silent'], { stdio: 'ignore' });

// BENCH_SCALE_DIALECTS=sqlite (or postgres) measures one of the two, for --scale and --imported.
const dialects = (process.env.BENCH_SCALE_DIALECTS ?? 'sqlite,postgres').split(',') as ('sqlite' | 'postgres')[];

// `--imported` (SCALE-8, also part of `--scale`): the set filled only through the import endpoint, S18–S36, its own table.
async function importedRun(): Promise<void> {
  const sizes = importedSizes(process.argv);
  // The machine may be shared: the 1-minute load before and after goes with the figures.
  const loadBefore = os.loadavg()[0] ?? 0;
  const rows: Row[] = [];
  const speeds: Partial<Record<'sqlite' | 'postgres', number>> = {};
  for (const dialect of dialects) {
    const measured = await importedFigures(settings, dialect, temp, sizes);
    rows.push(...measured.rows);
    speeds[dialect] = measured.speed;
  }
  if (speeds.sqlite !== undefined && speeds.postgres !== undefined) rows.push(dialectSpeedRow(speeds.sqlite, speeds.postgres));
  const machine = { ...machineOf(), load: `${loadBefore.toFixed(2)} before, ${(os.loadavg()[0] ?? 0).toFixed(2)} after` };
  const table = only ? undefined : writeImported(rows, machine, sizes, { updateDocs });
  console.log(`\n${table ?? JSON.stringify(rows, null, 2)}`);
  for (const row of rows) if (row.notes) console.log(`${row.id} ${row.title} (${row.dialect}): ${row.notes}`);
}
if (process.argv.includes('--imported') && !process.argv.includes('--scale')) {
  bar.setTotal(5 * dialects.length);
  await importedRun();
  bar.stop();
  process.exit(0);
}

// `--scale` (SCALE-8): the S figures alone, on the 10,000 and 1,000,000-run sets, in their own table; then `--imported`'s.
if (process.argv.includes('--scale')) {
  bar.setTotal(8 + 5 * dialects.length);
  for (const dialect of dialects) figures.push(...(await scaleFigures(settings, dialect, temp)));
  const machine = machineOf();
  if (only) {
    console.log(markdown(figures, machine));
    for (const figure of figures) if (figure.notes) console.log(`${figure.id} ${figure.title} (${figure.dialect}): ${figure.notes}`);
  } else {
    write(figures, machine, { updateDocs, section: 'scale' });
    console.log(fs.readFileSync('bench/results/scale.md', 'utf8'));
    for (const figure of figures) if (figure.notes) console.log(`${figure.id} ${figure.title} (${figure.dialect}): ${figure.notes}`);
  }
  // `--only S3` asks for a scale figure alone: the imported set is filled only when one of its figures is asked for.
  if (only === undefined || [...only].some((id) => /^S(1[89]|2\d|3[0-6])$/.test(id))) await importedRun();
  bar.stop();
  process.exit(0);
}

// SQLite: reads, writes, the run workload and memory.
const sqlite = await startAttest({ dataDir: temp('attest-bench-sqlite-') });
const reads = await prepareReads(sqlite);
let underLoad = rssMb(sqlite.pid);
const sampler = setInterval(() => {
  underLoad = Math.max(underLoad, rssMb(sqlite.pid));
}, 100);
figures.push(...(await readFigures(sqlite, reads, 'sqlite', settings)));
clearInterval(sampler);
if (wants('F4')) figures.push(...(await writeFigures(sqlite, settings)));

settings.step('F5 100 runs × 20 steps × 20 cells × 2 screenshots');
if (wants('F5')) figures.push(...(await runWorkload(sqlite)));

settings.step('F7 export of a 300-screenshot run');
if (wants('F7')) figures.push(await exportFigure(sqlite, settings));

settings.step('F8 import of a 5,000-test JUnit file');
if (wants('F8')) figures.push(...(await importFigures(sqlite, settings)));

settings.step('F6 200 MB upload');
if (wants('F6')) await largeUpload();
await sqlite.stop();

// The S3 blob store beside the disk store: servers of their own, one bucket of s3rver.
if (wants('F9')) figures.push(...(await s3Figures(settings, temp)));

settings.step('F6 start-up with 10,000 runs');
if (wants('F6')) figures.push(...(await startupFigures()));

// F10 and F11 (TRIAGE-*): answers across 100,000 runs, and what recording failures costs the writes.
if (wants('F10')) figures.push(...(await f10Figures(settings, temp)));
if (wants('F11')) figures.push(...(await f11Figures(settings, temp)));

// W1: the web pages at scale (SCALE-8) in Chromium (bench/web-scale.ts).
if (wants('W1')) figures.push(...(await webScaleFigures(settings, temp)));

// PostgreSQL, when one answers: the read figures only.
settings.step('PostgreSQL');
if (wants('F1') || wants('F2')) await postgresFigures();
bar.stop();

const machine = machineOf();
function machineOf() {
  return {
    date: new Date().toISOString(),
    cpu: os.cpus()[0]?.model ?? 'unknown',
    cores: os.cpus().length,
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    node: process.version,
    kernel: os.release(),
    commit: execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim(),
    mode: quick
      ? `--quick (1 × ${settings.seconds} s per sample)`
      : `${settings.repetitions} × ${settings.seconds} s per sample, A/B interleaved`,
    pinning: PINNED
      ? 'servers (Attest and the baseline servers) on CPU 0; wrk, the Node clients and the in-process baselines on CPU 1 (taskset)'
      : 'not pinned (no taskset or one core)',
    settings: 'npm start defaults, ATTEST_LOG_LEVEL=warn, ATTEST_RATE_LIMIT_PER_MINUTE=10000000 (installed, never reached)',
  };
}
if (only) {
  console.log(markdown(figures, machine));
  // Nothing is written, so the notes (p99s, CPU per request, paired ratios) are printed here.
  for (const figure of figures) if (figure.notes) console.log(`${figure.id} ${figure.title} (${figure.dialect}): ${figure.notes}`);
} else {
  write(figures, machine, { updateDocs });
  console.log(fs.readFileSync('bench/results/latest.md', 'utf8'));
}
process.exit(0);

/** F6: RSS growth during a 200 MB upload, and the peak RSS seen under the read load. */
async function largeUpload(): Promise<void> {
  const api = new Api(sqlite.url, sqlite.key);
  const project = await api.project();
  const run = await api.call<{ id: string }>('POST', '/testmgmt/testruns', { projectId: project.id, name: 'large upload' });
  const large = Buffer.alloc(200 * 1024 * 1024, 7);
  await sleep(1000);
  const before = rssMb(sqlite.pid);
  const peak = await peakRss(sqlite.pid, () =>
    api.upload(project.id, { testRunId: run.id, kind: 'video', name: 'screen.mp4' }, large, 'video/mp4'),
  );
  figures.push(
    judge({
      id: 'F6',
      title: 'RSS growth during a 200 MB upload',
      dialect: 'sqlite',
      unit: 'MB',
      attest: peak - before,
      maxValue: 64,
      samples: { attest: [peak - before] },
    }),
  );
  figures.push(
    judge({
      id: 'F6',
      title: 'RSS under read load (peak)',
      dialect: 'sqlite',
      unit: 'MB',
      attest: underLoad,
      samples: { attest: [underLoad] },
    }),
  );
}

/** The read figures on PostgreSQL, when one answers, in a database made for the run. */
async function postgresFigures(): Promise<void> {
  const postgresUrl = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const admin = new pg.Client({ connectionString: postgresUrl });
  const reachable = await admin.connect().then(
    () => true,
    () => false,
  );
  if (reachable) {
    const name = `attest_bench_${process.pid}`;
    await admin.query(`CREATE DATABASE ${name}`);
    try {
      const url = new URL(postgresUrl);
      url.pathname = `/${name}`;
      const postgres = await startAttest({ dataDir: temp('attest-bench-pg-'), databaseUrl: url.toString() });
      figures.push(...(await readFigures(postgres, await prepareReads(postgres), 'postgres', settings)));
      await postgres.stop();
    } finally {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    }
  } else {
    console.error(`PostgreSQL at ${postgresUrl} does not answer: its figures are left out.`);
  }
}

/** F5: the same 100 runs sent to Attest and to the minimal durable server, at 1 and 4 clients. */
async function runWorkload(attest: Awaited<ReturnType<typeof startAttest>>): Promise<Figure[]> {
  const api = new Api(attest.url, attest.key);
  const project = await api.project();
  const shots = await Promise.all([png(35), png(35)]);
  const port = await freePort();
  const minimal = await startPinned(
    process.execPath,
    ['bench/minimal-server.mjs', String(port), temp('attest-bench-minimal-')],
    {},
    async () => (await fetch(`http://127.0.0.1:${port}/runs`, { method: 'POST', body: JSON.stringify({ name: 'probe', steps: [] }) })).ok,
  );
  const runs = quick ? 40 : 100;
  const oneRun = (i: number) => ({ name: `run ${i}`, steps: stepsOf(20, 20, 40, `r${i}`) });
  /** Seconds for `clients` loops to send runs 0…runs-1 between them, each taking the next one. */
  const timed = async (clients: number, send: (i: number) => Promise<void>) => {
    const start = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: clients }, async () => {
        for (let i = next++; i < runs; i = next++) await send(i);
      }),
    );
    return (performance.now() - start) / 1000;
  };
  const attestRuns = (clients: number) =>
    timed(clients, async (i) => {
      const body = oneRun(i);
      const run = await api.call<{ id: string }>('POST', '/testmgmt/testruns', { projectId: project.id, name: body.name });
      await api.call('POST', `/testmgmt/testruns/${run.id}/results`, { steps: body.steps });
      for (const [n, shot] of shots.entries())
        await api.upload(project.id, { testRunId: run.id, kind: 'screenshot', name: `shot-${n}.png` }, shot, 'image/png');
      await api.call('PATCH', `/testmgmt/testruns/${run.id}`, { status: 'completed', verdict: 'passed' });
    });
  const minimalRuns = (clients: number) =>
    timed(clients, async (i) => {
      const body = oneRun(i);
      const created = JSON.parse(
        (
          await send(
            `http://127.0.0.1:${port}/runs`,
            'POST',
            {},
            JSON.stringify({ name: body.name, steps: body.steps.map((s) => ({ ...s, cells: s.cells ?? [] })) }),
          )
        ).body.toString('utf8'),
      ) as { id: string };
      for (const shot of shots) await send(`http://127.0.0.1:${port}/files/${created.id}`, 'POST', {}, shot);
    });
  const figures: Figure[] = [];
  for (const clients of [1, 4]) {
    const a: number[] = [];
    const b: number[] = [];
    for (let i = 0; i < settings.repetitions; i++) {
      a.push(await attestRuns(clients));
      b.push(await minimalRuns(clients));
    }
    // Seconds: lower is better, so the ratio is baseline time over Attest's time (1 = as fast).
    figures.push(
      judge({
        id: 'F5',
        title: `${runs} runs × 20 steps × 20 cells × 2 screenshots, ${clients} client${clients > 1 ? 's' : ''} (speed)`,
        dialect: 'sqlite',
        unit: 'runs/s',
        attest: runs / median(a),
        baseline: runs / median(b),
        baselineName: 'minimal durable server',
        ...(clients === 4 ? { minRatio: 1 } : {}),
        samples: { attest: a, baseline: b },
        notes: `seconds: Attest ${median(a).toFixed(2)}, minimal ${median(b).toFixed(2)}`,
      }),
    );
  }
  await minimal.stop();
  return figures;
}

/** F6: idle RSS and start-up to the first health answer, on a data folder holding 10,000 runs. */
async function startupFigures(): Promise<Figure[]> {
  const migrations = fs
    .readdirSync('src/server/db/migrations')
    .map((f) => fs.readFileSync(path.join('src/server/db/migrations', f), 'utf8'));
  const cache = path.join('bench/.cache', `runs-10000-${createHash('sha256').update(migrations.join('\n')).digest('hex').slice(0, 12)}`);
  if (!fs.existsSync(path.join(cache, 'key'))) {
    fs.rmSync(cache, { recursive: true, force: true });
    const building = `${cache}.building`;
    fs.rmSync(building, { recursive: true, force: true });
    fs.mkdirSync(building, { recursive: true });
    const server = await startAttest({ dataDir: building });
    const api = new Api(server.url, server.key);
    const project = await api.project();
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        for (let i = next++; i < 10_000; i = next++) {
          await api.call('POST', '/testmgmt/testruns', {
            projectId: project.id,
            name: `run ${i}`,
            verdict: 'passed',
            results: { steps: stepsOf(5, 1, 40, `r${i}`) },
          });
        }
      }),
    );
    await server.stop();
    fs.writeFileSync(path.join(building, 'key'), server.key);
    fs.renameSync(building, cache);
  }
  const key = fs.readFileSync(path.join(cache, 'key'), 'utf8');
  const startups: number[] = [];
  const idle: number[] = [];
  for (let i = 0; i < Math.max(3, settings.repetitions); i++) {
    const dir = temp('attest-bench-startup-');
    fs.cpSync(cache, dir, { recursive: true });
    const port = await freePort();
    const started = performance.now();
    const server = await startPinned(
      process.execPath,
      ['dist/server/main.js'],
      {
        ATTEST_LOG_LEVEL: 'warn',
        PORT: String(port),
        HOST: '127.0.0.1',
        ATTEST_DATA_DIR: dir,
        ATTEST_ADMIN_EMAIL: ADMIN_EMAIL,
        ATTEST_ADMIN_API_KEY: key,
      },
      answers(`http://127.0.0.1:${port}/api/v1/health`),
    );
    startups.push(performance.now() - started);
    await sleep(2000);
    idle.push(rssMb(server.pid));
    await server.stop();
  }
  return [
    judge({
      id: 'F6',
      title: 'start-up to first health answer, 10,000 runs',
      dialect: 'sqlite',
      unit: 'ms',
      attest: median(startups),
      maxValue: 1000,
      samples: { attest: startups },
    }),
    judge({
      id: 'F6',
      title: 'idle RSS after start-up, 10,000 runs',
      dialect: 'sqlite',
      unit: 'MB',
      attest: median(idle),
      maxValue: 120,
      samples: { attest: idle },
    }),
  ];
}
