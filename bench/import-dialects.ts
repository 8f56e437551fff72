import os from 'node:os';
import pg from 'pg';
import { Api, type Attest, startAttest, tempFolders } from './attest.ts';
import { median, pinSelf } from './lib.ts';

// Imports on SQLite against imports on PostgreSQL (IMP-1, SCALE-11): the built server started on
// each (`startAttest`), the same JUnit files imported into both through
// `POST /api/v1/projects/{id}/imports`, one job per import, one import at a time, the two servers'
// samples interleaved (A, B, then B, A…) so a busy neighbour weighs on both alike. Prints runs/s
// per dialect and per kind of file, and PostgreSQL's share of SQLite's speed; the bar is 0.8.
//
//   node --import tsx bench/import-dialects.ts [--quick] [--rounds N]
//
// The files: 4 reports of 5,000 cases and 100 of 20, one case in 7 failing with a stack trace
// (13 messages), every case with a line of output. The same bytes every round, after a warm-up
// round that creates the tests, so the measured imports find their tests and their histories, as
// a CI suite imported build after build does.

const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
const roundsAt = argv.indexOf('--rounds');
const ROUNDS = roundsAt >= 0 ? Number(argv[roundsAt + 1]) : quick ? 1 : 3;
const LARGE = { files: quick ? 1 : 4, cases: 5000 };
const SMALL = { files: quick ? 20 : 100, cases: 20 };
const BAR = 0.8;

const STACK = Array.from({ length: 12 }, (_, i) => `    at com.example.Frame${i}.call(Frame${i}.java:${40 + i})`).join('\n');

/** One JUnit report of `cases` cases in suites of 100, named by `file` (each file its own tests). */
function junitReport(file: string, cases: number): Buffer {
  const suites: string[] = [];
  for (let s = 0; s * 100 < cases; s++) {
    const parts: string[] = [];
    for (let c = s * 100; c < Math.min(cases, (s + 1) * 100); c++) {
      const failure =
        c % 7 === 0 ? `<failure message="expected 200 but was 500 (cause ${c % 13})" type="AssertionError">${STACK}</failure>` : '';
      parts.push(
        `<testcase classname="com.example.${file}.Suite${s}" name="case ${c}" time="0.${String(c % 1000).padStart(3, '0')}">${failure}<system-out>case ${c} of suite ${s} ran</system-out></testcase>`,
      );
    }
    suites.push(`<testsuite name="com.example.${file}.Suite${s}" tests="${parts.length}">${parts.join('')}</testsuite>`);
  }
  return Buffer.from(`<?xml version="1.0" encoding="UTF-8"?><testsuites name="${file}">${suites.join('')}</testsuites>`);
}

const FILES = {
  large: Array.from({ length: LARGE.files }, (_, i) => junitReport(`large${i}`, LARGE.cases)),
  small: Array.from({ length: SMALL.files }, (_, i) => junitReport(`small${i}`, SMALL.cases)),
};

/** Where an import's time went, in ms: from the upload to its acceptance (the 202), to the write's start (queued, claimed, read), to its end, and to the client seeing it. */
interface Phases {
  accept: number;
  start: number;
  write: number;
  seen: number;
}

interface Part {
  runs: number;
  seconds: number;
  phases: Phases;
}

interface Sample {
  large: Part;
  small: Part;
}

/** One import, from the upload to the client seeing `completed` (polled every 5 ms); its runs and phases. */
async function importOne(attest: Attest, projectId: string, body: Buffer): Promise<{ runs: number; ms: number; phases: Phases }> {
  const api = new Api(attest.url, attest.key);
  const started = Date.now();
  const response = await fetch(`${attest.url}/api/v1/projects/${projectId}/imports`, {
    method: 'POST',
    headers: { 'service.api-token': attest.key, accept: 'application/json', 'content-type': 'application/xml' },
    body,
  });
  const accepted = (await response.json()) as { id: string };
  const acceptedAt = Date.now();
  if (response.status !== 202) throw new Error(`import: ${response.status} ${JSON.stringify(accepted)}`);
  for (;;) {
    const record = await api.call<{
      status: string;
      error: string | null;
      counts: { runs: number } | null;
      startedAt: string;
      finishedAt: string;
    }>('GET', `/projects/${projectId}/imports/${accepted.id}`);
    if (record.status === 'failed') throw new Error(`import failed: ${record.error}`);
    if (record.status === 'completed') {
      const seen = Date.now();
      const [start, end] = [Date.parse(record.startedAt), Date.parse(record.finishedAt)];
      const phases = { accept: acceptedAt - started, start: start - acceptedAt, write: end - start, seen: seen - end };
      return { runs: record.counts?.runs ?? 0, ms: seen - started, phases };
    }
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Imports every file once, one after the other; the runs, seconds and phases (summed) of each kind. */
async function importAll(attest: Attest, projectId: string): Promise<Sample> {
  const part = (): Part => ({ runs: 0, seconds: 0, phases: { accept: 0, start: 0, write: 0, seen: 0 } });
  const sample: Sample = { large: part(), small: part() };
  for (const kind of ['large', 'small'] as const) {
    for (const body of FILES[kind]) {
      const { runs, ms, phases } = await importOne(attest, projectId, body);
      const into = sample[kind];
      into.runs += runs;
      into.seconds += ms / 1000;
      for (const key of Object.keys(phases) as (keyof Phases)[]) into.phases[key] += phases[key];
    }
  }
  return sample;
}

const rate = (part: { runs: number; seconds: number }) => part.runs / part.seconds;
const total = (s: Sample) => ({ runs: s.large.runs + s.small.runs, seconds: s.large.seconds + s.small.seconds });

async function main(): Promise<void> {
  pinSelf();
  const temp = tempFolders();
  const postgresUrl = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const admin = new pg.Client({ connectionString: postgresUrl });
  await admin.connect();
  const name = `attest_bench_dialects_${process.pid}`;
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(postgresUrl);
  url.pathname = `/${name}`;
  try {
    const servers = {
      sqlite: await startAttest({ dataDir: temp('attest-bench-dialects-sqlite-') }),
      postgres: await startAttest({ dataDir: temp('attest-bench-dialects-pg-'), databaseUrl: url.toString() }),
    };
    const projects = {
      sqlite: (await new Api(servers.sqlite.url, servers.sqlite.key).project()).id,
      postgres: (await new Api(servers.postgres.url, servers.postgres.key).project()).id,
    };
    const samples: Record<'sqlite' | 'postgres', Sample[]> = { sqlite: [], postgres: [] };
    for (let round = -1; round < ROUNDS; round++) {
      // Round -1 warms both up (the tests created, the statements prepared) and is not counted.
      const order = round % 2 === 0 ? (['sqlite', 'postgres'] as const) : (['postgres', 'sqlite'] as const);
      for (const dialect of order) {
        const sample = await importAll(servers[dialect], projects[dialect]);
        if (round >= 0) samples[dialect].push(sample);
        const t = total(sample);
        console.error(
          `${round < 0 ? 'warm-up' : `round ${round + 1}`} ${dialect}: ${t.runs} runs in ${t.seconds.toFixed(1)} s, ${rate(t).toFixed(0)} runs/s`,
        );
      }
    }
    await servers.sqlite.stop();
    await servers.postgres.stop();
    report(samples);
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
}

function report(samples: Record<'sqlite' | 'postgres', Sample[]>): void {
  const of = (dialect: 'sqlite' | 'postgres', pick: (s: Sample) => { runs: number; seconds: number }) =>
    median(samples[dialect].map((s) => rate(pick(s))));
  const rows = [
    { label: `all files (${LARGE.files} × ${LARGE.cases} + ${SMALL.files} × ${SMALL.cases} cases)`, pick: total },
    { label: `${LARGE.cases}-case files`, pick: (s: Sample) => s.large },
    { label: `${SMALL.cases}-case files`, pick: (s: Sample) => s.small },
  ];
  // The ratio is the median of each round's own (the two dialects' samples of one round are taken
  // back to back): a busy neighbour moves both of a round alike, and a round apart (bench/README.md).
  const paired = (pick: (s: Sample) => { runs: number; seconds: number }) =>
    median(samples.postgres.map((s, i) => rate(pick(s)) / rate(pick(samples.sqlite[i] as Sample))));
  const [load] = os.loadavg();
  console.log(`\nImports, runs/s (median of ${ROUNDS} interleaved rounds; 1-minute load ${load?.toFixed(2)})\n`);
  console.log("| Files | SQLite | PostgreSQL | PostgreSQL / SQLite, median of the rounds' ratios |");
  console.log('|---|---:|---:|---:|');
  for (const { label, pick } of rows) {
    console.log(`| ${label} | ${of('sqlite', pick).toFixed(0)} | ${of('postgres', pick).toFixed(0)} | ${paired(pick).toFixed(2)} |`);
  }
  const rounds = samples.postgres.map((s, i) => (rate(total(s)) / rate(total(samples.sqlite[i] as Sample))).toFixed(2));
  const ratio = paired(total);
  console.log(
    `\nPostgreSQL at ${ratio.toFixed(2)} of SQLite's speed (rounds: ${rounds.join(', ')}): ${ratio >= BAR ? 'meets' : 'misses'} the bar of ${BAR}.`,
  );
  console.log(
    "\nWhere an import's time goes, ms per import (medians): upload to 202, to the write's start, the write, to the client seeing it\n",
  );
  console.log('| Files | Dialect | Accept | Queued and read | Write | Seen |');
  console.log('|---|---|---:|---:|---:|---:|');
  for (const kind of ['large', 'small'] as const) {
    const files = kind === 'large' ? LARGE.files : SMALL.files;
    for (const dialect of ['sqlite', 'postgres'] as const) {
      const phase = (key: keyof Phases) => (median(samples[dialect].map((s) => s[kind].phases[key])) / files).toFixed(1);
      const label = `${kind === 'large' ? LARGE.cases : SMALL.cases}-case`;
      console.log(`| ${label} | ${dialect} | ${phase('accept')} | ${phase('start')} | ${phase('write')} | ${phase('seen')} |`);
    }
  }
}

await main();
process.exit(0);
