import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { Api, type Attest, startAttest } from '../attest.ts';
import type { Settings } from '../figures.ts';
import { report as f8Report, importReport } from '../import.ts';
import { median, wrk } from '../lib.ts';
import { type Figure, judge } from '../report.ts';
import { type ScaleCopy, scaleCopy } from './cache.ts';

// S figures: the same answers on the 10,000-run and the 1,000,000-run data sets (generate.ts), on
// SQLite and PostgreSQL, through the real server. Each answer is read by wrk over one connection,
// one request after another (the p99 of a person opening the page, as F10), the two servers' samples
// interleaved: 1M, 10k, 1M, 10k… The figure is p99 at 1M over p99 at 10k (bar ≤ 2: the ratio column
// shows its inverse, ≥ 0.5, so that more is better as in every row), and one page of a list at most
// 100 ms at 1M. Then, on the 1M copy: the retention sweep of about 100,000 expired runs and the GC
// after it (bar: under 2 minutes, space given back), and F8's 5,000-test import into it against
// the same import into an empty server (bar ≥ 0.8).

export const SMALL = 10_000;
/** The large set; BENCH_SCALE_LARGE makes it smaller, to try the figures quickly (its ratios then mean nothing). */
export const LARGE = Number(process.env.BENCH_SCALE_LARGE ?? 1_000_000);
const DAY = 86_400_000;

interface Read {
  id: string;
  title: string;
  path: string;
  /** One page of a list: at most 100 ms p99 at 1M. */
  page?: boolean;
  /** false: the two sets' answers differ in size, so the ratio is shown, not held to 0.5. */
  judged?: false;
}

/** The reads, as paths on a server holding the set (`meta`), found through its API where a cursor is needed. */
async function readsOf(api: Api, copy: ScaleCopy): Promise<Read[]> {
  const { sample, endsAt } = copy.meta;
  const p = sample.projectId;
  // A deep page: the cursor half-way down the project's runs, reached by paging.
  const runsOfProject = Math.round(copy.meta.runs / copy.meta.projects.length);
  let cursor: string | null = null;
  for (let seen = 0; seen < runsOfProject / 2; seen += 200) {
    const page: { nextCursor: string | null } = await api.call(
      'GET',
      `/testmgmt/testruns?projectId=${p}&limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    );
    cursor = page.nextCursor;
    if (!cursor) break;
  }
  const ends = Date.parse(endsAt);
  const from = new Date(ends - 30 * DAY).toISOString();
  const to = new Date(ends - 23 * DAY).toISOString();
  // The dashboard's window reaches back from today: far enough to hold the set's last 14 days.
  const days = Math.min(90, 14 + Math.max(0, Math.floor((Date.now() - ends) / DAY)));
  return [
    { id: 'S1', title: 'device read', path: `/device/devices/${sample.deviceId}` },
    { id: 'S2', title: 'results of a completed run', path: `/testmgmt/testruns/${sample.runId}/results` },
    { id: 'S3', title: "project's run list, first page", path: `/testmgmt/testruns?projectId=${p}`, page: true },
    {
      id: 'S4',
      title: "project's run list, a page half-way down (cursor)",
      path: `/testmgmt/testruns?projectId=${p}&cursor=${encodeURIComponent(cursor ?? '')}`,
      page: true,
    },
    {
      id: 'S5',
      title: 'run list, branch main + verdict failed',
      path: `/testmgmt/testruns?projectId=${p}&branch=main&verdict=failed`,
      page: true,
    },
    { id: 'S6', title: 'run list, environment qa', path: `/testmgmt/testruns?projectId=${p}&environment=qa`, page: true },
    {
      id: 'S7',
      title: 'run list, the week from 30 days back',
      path: `/testmgmt/testruns?projectId=${p}&from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`,
      page: true,
    },
    { id: 'S8', title: "a job's runs", path: `/testmgmt/testruns?jobId=${sample.jobId}`, page: true },
    // The 10k set's test has 5 runs (2,000 tests share 9,877 runs), the 1M set's 500: the same 5 newest
    // runs on both is the like-for-like figure, the default page (5 runs against 200) a page's cost.
    {
      id: 'S9',
      title: "a test's history, its newest 5 runs",
      path: `/testmgmt/tests/${sample.testId}/history?limit=5`,
      page: true,
    },
    {
      id: 'S9b',
      title: "a test's history, the default page (5 runs at 10k)",
      path: `/testmgmt/tests/${sample.testId}/history`,
      page: true,
      judged: false,
    },
    { id: 'S10', title: "a run's artifacts", path: `/projects/${p}/artifact?testRunId=${sample.runId}`, page: true },
    { id: 'S11', title: 'usage answer', path: `/projects/${p}/usage` },
    { id: 'S12', title: 'failures list', path: `/projects/${p}/failures`, page: true },
    { id: 'S13', title: `dashboard (${days} days)`, path: `/projects/${p}/dashboard?days=${days}` },
    { id: 'S14', title: 'comparison of a job with baseBranch=main', path: `/testmgmt/jobs/${sample.jobId}/comparison?baseBranch=main` },
    { id: 'S15', title: 'flaky test list', path: `/testmgmt/tests?projectId=${p}&sort=flaky`, page: true },
  ];
}

/** Bytes a folder holds on disk (du). */
async function diskBytes(folder: string): Promise<number> {
  if (!fs.existsSync(folder)) return 0;
  const { stdout } = await promisify(execFile)('du', ['-sb', folder]);
  return Number(stdout.split('\t')[0]);
}

async function databaseBytes(copy: ScaleCopy): Promise<number> {
  if (!copy.databaseUrl) {
    let bytes = 0;
    for (const file of ['attest.db', 'attest.db-wal']) {
      const at = path.join(copy.dataDir, file);
      if (fs.existsSync(at)) bytes += fs.statSync(at).size;
    }
    return bytes;
  }
  const client = new pg.Client({ connectionString: copy.databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ size: string }>('SELECT pg_database_size(current_database()) AS size');
    return Number(rows[0]?.size);
  } finally {
    await client.end();
  }
}

/** The S figures of one dialect. */
export async function scaleFigures(
  settings: Settings,
  dialect: 'sqlite' | 'postgres',
  temp: (prefix: string) => string,
): Promise<Figure[]> {
  const wants = (id: string) => settings.wants(id);
  settings.step(`S ${dialect}: the 10,000 and 1,000,000-run sets (kept in bench/.cache)`);
  const small = await scaleCopy(dialect, SMALL, temp);
  const large = await scaleCopy(dialect, LARGE, temp);
  const figures: Figure[] = [];
  // startAttest polls /me until the admin exists; on a loaded machine those misses passed the
  // default 30 failed authentications a minute and locked the bench's own key out.
  const env = { ATTEST_AUTH_FAILURES_PER_MINUTE: '10000000' };
  const target = (copy: ScaleCopy) => ({ dataDir: copy.dataDir, env, ...(copy.databaseUrl ? { databaseUrl: copy.databaseUrl } : {}) });
  try {
    const sizes = { db: await databaseBytes(large), blobs: await diskBytes(path.join(large.dataDir, 'blobs')) };
    const steps = large.meta.counts.steps ?? 1;
    figures.push(
      judge({
        id: 'S0',
        title: `database on disk at ${LARGE.toLocaleString('en-US')} runs (per run; blobs beside it)`,
        dialect,
        unit: 'B/run',
        attest: sizes.db / large.meta.runs,
        samples: { attest: [sizes.db] },
        notes:
          `database ${(sizes.db / 2 ** 30).toFixed(2)} GiB (${Math.round(sizes.db / steps)} B per step), ` +
          `blobs ${(sizes.blobs / 2 ** 20).toFixed(1)} MiB (${Math.round(sizes.blobs / large.meta.runs)} B per run; ` +
          `${large.meta.counts.artifacts} screenshots share ${large.meta.counts.images} blobs); ` +
          `generated in ${large.meta.seconds.toFixed(0)} s`,
      }),
    );
    const servers = [await started(target(large)), await started(target(small))] as const;
    const [big, little] = servers;
    try {
      const readsBig = await readsOf(new Api(big.url, big.key), large);
      const readsLittle = await readsOf(new Api(little.url, little.key), small);
      for (const [n, read] of readsBig.entries()) {
        if (!wants(read.id)) continue;
        const other = readsLittle[n] as Read;
        const headers = (server: Attest) => ({ 'service.api-token': server.key, accept: 'application/json' });
        const one = (server: Attest, route: string, seconds: number) =>
          wrk(`${server.url}/api/v1${route}`, {
            headers: headers(server),
            seconds,
            connections: 1,
            serverPid: server.pid,
            timeoutSeconds: 60,
          });
        const check = async (server: Attest, route: string) => {
          const answer = await fetch(`${server.url}/api/v1${route}`, { headers: headers(server) });
          const body = await answer.arrayBuffer();
          if (!answer.ok) throw new Error(`${read.id} ${route}: ${answer.status} ${Buffer.from(body).toString('utf8').slice(0, 200)}`);
          return body.byteLength;
        };
        let bytes: number;
        try {
          bytes = await check(big, read.path);
          await check(little, other.path);
        } catch (error) {
          console.error(`${read.id} (${dialect}): ${(error as Error).message}; left out`);
          continue;
        }
        await one(big, read.path, 1);
        await one(little, other.path, 1);
        const a: Awaited<ReturnType<typeof one>>[] = [];
        const b: Awaited<ReturnType<typeof one>>[] = [];
        for (let i = 0; i < settings.repetitions; i++) {
          a.push(await one(big, read.path, settings.seconds));
          b.push(await one(little, other.path, settings.seconds));
        }
        const p99 = a.map((s) => s.p99Ms);
        const p99Small = b.map((s) => s.p99Ms);
        figures.push(
          judge({
            id: read.id,
            title: `${read.title}, p99 at 1M (${Math.round(bytes / 1024)} KB)`,
            dialect,
            unit: 'ms',
            attest: median(p99),
            baseline: median(p99Small),
            baselineName: 'p99 at 10k runs',
            lowerIsBetter: true,
            ...(read.judged === false ? {} : { minRatio: 0.5 }),
            ...(read.page ? { maxValue: 100 } : {}),
            samples: { attest: p99, baseline: p99Small },
            notes:
              `p99 1M/10k ${(median(p99) / median(p99Small)).toFixed(2)}; p50 ${median(a.map((s) => s.p50Ms)).toFixed(2)} ms at 1M, ` +
              `${median(b.map((s) => s.p50Ms)).toFixed(2)} ms at 10k; ${median(a.map((s) => s.rps)).toFixed(0)} req/s at 1M, ` +
              `${median(b.map((s) => s.rps)).toFixed(0)} at 10k (1 connection); server CPU ` +
              `${((median(a.map((s) => s.cpuUsPerRequest ?? Number.NaN)) || 0) / 1000).toFixed(2)} ms/request at 1M`,
          }),
        );
      }

      // S17: F8's import into the 1M set and into an empty server, interleaved.
      if (wants('S17')) {
        settings.step(`S17 ${dialect}: import of 5,000 tests, 1M vs empty`);
        const empty = await emptyServer(dialect, temp);
        try {
          const bigProject = large.meta.sample.projectId;
          const emptyProject = (await new Api(empty.server.url, empty.server.key).project()).id;
          await importReport(empty.server, emptyProject, f8Report('warm-e'));
          await importReport(big, bigProject, f8Report('warm-b'));
          const a: number[] = [];
          const b: number[] = [];
          for (let i = 0; i < Math.max(2, settings.repetitions); i++) {
            a.push((await importReport(big, bigProject, f8Report(`b${i}`))).seconds);
            b.push((await importReport(empty.server, emptyProject, f8Report(`e${i}`))).seconds);
          }
          figures.push(
            judge({
              id: 'S17',
              title: 'import of a 5,000-test JUnit file into the 1M-run database (speed vs empty)',
              dialect,
              unit: 's',
              attest: median(a),
              baseline: median(b),
              baselineName: 'the same import into an empty database',
              lowerIsBetter: true,
              minRatio: 0.8,
              samples: { attest: a, baseline: b },
            }),
          );
        } finally {
          await empty.stop();
        }
      }

      // S16: retention of about 100,000 runs (half of project 0's), then the GC, offline as `attest retention` and `attest gc`.
      if (wants('S16')) {
        settings.step(`S16 ${dialect}: retention of 100,000 runs + GC`);
        const ends = Date.parse(large.meta.endsAt);
        const days = 30 + Math.floor((Date.now() - ends) / DAY);
        await new Api(big.url, big.key).call('PATCH', `/projects/${large.meta.sample.projectId}`, { retention: { days } });
        await big.stop();
        const before = { db: await databaseBytes(large), blobs: await diskBytes(path.join(large.dataDir, 'blobs')) };
        const env = {
          ...process.env,
          ATTEST_DATA_DIR: large.dataDir,
          ATTEST_LOG_LEVEL: 'warn',
          ...(large.databaseUrl ? { ATTEST_DATABASE_URL: large.databaseUrl } : {}),
        };
        const cli = (args: string[]) =>
          promisify(execFile)(process.execPath, [`${process.env.BENCH_DIST ?? 'dist'}/cli/main.js`, ...args], { env, maxBuffer: 1 << 24 });
        const started = performance.now();
        const retention = await cli(['retention', '--json']);
        const sweptAt = performance.now();
        const gc = await cli(['gc', '--grace-minutes', '0', '--json']);
        const seconds = (performance.now() - started) / 1000;
        const after = { db: await databaseBytes(large), blobs: await diskBytes(path.join(large.dataDir, 'blobs')) };
        const deleted = (JSON.parse(retention.stdout) as { deleted: number }).deleted;
        figures.push(
          judge({
            id: 'S16',
            title: `retention of ${deleted.toLocaleString('en-US')} expired runs, then the GC (wall time)`,
            dialect,
            unit: 's',
            attest: seconds,
            maxValue: 120,
            samples: { attest: [seconds] },
            notes:
              `sweep ${((sweptAt - started) / 1000).toFixed(1)} s, GC ${((performance.now() - sweptAt) / 1000).toFixed(1)} s; ` +
              `database ${(before.db / 2 ** 20).toFixed(0)} → ${(after.db / 2 ** 20).toFixed(0)} MiB, ` +
              `blobs ${(before.blobs / 2 ** 20).toFixed(1)} → ${(after.blobs / 2 ** 20).toFixed(1)} MiB; gc: ${gc.stdout.trim().slice(0, 300)}`,
          }),
        );
      }
    } finally {
      for (const server of servers) await server.stop();
    }
  } finally {
    await small.drop();
    await large.drop();
  }
  return figures;
}

/** startAttest, then until its admin's key works (up to a minute: a big set's first start on a busy machine is slow). */
async function started(options: Parameters<typeof startAttest>[0]): Promise<Attest> {
  const server = await startAttest(options);
  for (let i = 0; i < 600; i++) {
    const me = await fetch(`${server.url}/api/v1/me`, { headers: { 'service.api-token': server.key } });
    await me.arrayBuffer();
    if (me.ok) return server;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const output = (server as unknown as { output?: string[] }).output?.join('').slice(-2000);
  await server.stop();
  throw new Error(`the server on ${options.dataDir} never accepted its admin key: ${output}`);
}

/**
 * A server on an empty database of `dialect`, on a fresh data folder (and, for PostgreSQL, a
 * database made for the run, `attest_<label>_<pid>`, dropped by `stop`).
 */
export async function emptyServer(dialect: 'sqlite' | 'postgres', temp: (prefix: string) => string, label = 'scale_empty') {
  if (dialect === 'sqlite') {
    const server = await started({ dataDir: temp(`attest-${label}-`), env: { ATTEST_AUTH_FAILURES_PER_MINUTE: '10000000' } });
    return { server, stop: () => server.stop() };
  }
  const postgresUrl = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const name = `attest_${label}_${process.pid}`;
  const admin = new pg.Client({ connectionString: postgresUrl });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(postgresUrl);
  url.pathname = `/${name}`;
  const server = await started({
    dataDir: temp(`attest-${label}-pg-`),
    databaseUrl: url.toString(),
    env: { ATTEST_AUTH_FAILURES_PER_MINUTE: '10000000' },
  });
  return {
    server,
    stop: async () => {
      await server.stop();
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    },
  };
}
