// One very large JUnit file imported end to end (IMP-7, SCALE-11): `node --import tsx
// bench/big-import.ts [cases] [--postgres]`, 150,000 cases unless told. The file is what a large
// suite's nightly writes: suites of 500 cases, a line of output each, one case in seven failing with
// one of three messages and a stack trace. It is posted to `POST /projects/{id}/imports` of a server
// started from dist on a fresh data folder (SQLite, or a PostgreSQL database made for the run), and
// the import followed until `completed`. Meanwhile `GET /health` is asked every 100 ms and the
// server's RSS read from /proc. Printed: the wall time from the upload to `completed`, runs per
// second, the peak RSS, and the worst and 99th-percentile /health answers, each beside its bar
// (60 s, 1 GB and 200 ms, docs/performance.md "One 150,000-case file"). Not part of `npm run bench`:
// it takes a minute or more and a machine to itself.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Api, startAttest, tempDir } from './attest.ts';
import { importReport } from './import.ts';
import { rssMb } from './lib.ts';

const cases = Number(process.argv.find((arg) => /^\d+$/.test(arg)) ?? 150_000);
const postgres = process.argv.includes('--postgres');
const SUITE = 500;
const STACK = Array.from({ length: 10 }, (_, i) => `    at com.example.Frame${i}.call(Frame${i}.java:${40 + i})`).join('\n');

/** The report: `count` cases in suites of 500. */
function report(count: number): Buffer {
  const suites: string[] = [];
  for (let s = 0; s * SUITE < count; s++) {
    const parts: string[] = [];
    for (let i = s * SUITE; i < Math.min(count, (s + 1) * SUITE); i++) {
      const c = i % SUITE;
      const failure =
        i % 7 === 0 ? `<failure message="expected 200 but was ${500 + (i % 3)}" type="AssertionError">${STACK}</failure>` : '';
      parts.push(
        `<testcase classname="com.example.big.Suite${s}" name="case ${c}" time="0.0${c % 10}">${failure}<system-out>case ${c} ran</system-out></testcase>`,
      );
    }
    suites.push(`<testsuite name="com.example.big.Suite${s}" tests="${parts.length}">${parts.join('')}</testsuite>`);
  }
  return Buffer.from(`<?xml version="1.0" encoding="UTF-8"?><testsuites>${suites.join('')}</testsuites>`);
}

const psql = (command: string) => execFileSync('psql', ['-h', '127.0.0.1', '-U', 'postgres', '-qc', command]);
const database = `attest_big_${randomBytes(4).toString('hex')}`;
if (postgres) psql(`CREATE DATABASE ${database}`);
const body = report(cases);
const attest = await startAttest({
  dataDir: tempDir('attest-big-import-'),
  ...(postgres ? { databaseUrl: `postgres://postgres@127.0.0.1:5432/${database}` } : {}),
});
try {
  const project = await new Api(attest.url, attest.key).project();
  const health: number[] = [];
  let peakRss = rssMb(attest.pid);
  let importing = true;
  const watching = (async () => {
    while (importing) {
      const asked = performance.now();
      await (await fetch(`${attest.url}/api/v1/health`)).arrayBuffer();
      health.push(performance.now() - asked);
      peakRss = Math.max(peakRss, rssMb(attest.pid));
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();
  const done = await importReport(attest, project.id, body);
  importing = false;
  await watching;
  health.sort((a, b) => a - b);
  const p99 = health[Math.min(health.length - 1, Math.floor(health.length * 0.99))] ?? 0;
  const worst = health.at(-1) ?? 0;
  const row = (what: string, value: string, bar: string, holds?: boolean) =>
    console.log(`| ${what} | ${value} | ${bar} | ${holds === undefined ? '' : holds ? 'holds' : '**misses**'} |`);
  console.log(`\n${postgres ? 'PostgreSQL' : 'SQLite'}: ${done.runs} cases, ${(body.length / 1e6).toFixed(1)} MB of JUnit XML\n`);
  console.log('| What | Measured | Bar | |\n|---|---|---|---|');
  row('upload to completed', `${done.seconds.toFixed(1)} s (${Math.round(done.runs / done.seconds)} runs/s)`, '≤ 60 s', done.seconds <= 60);
  row('server RSS, peak', `${Math.round(peakRss)} MB`, '< 1,024 MB', peakRss < 1024);
  row(`/health, worst of ${health.length}`, `${worst.toFixed(0)} ms`, '< 200 ms', worst < 200);
  row('/health, p99', `${p99.toFixed(0)} ms`, '');
} finally {
  await attest.stop();
  if (postgres) psql(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
}
