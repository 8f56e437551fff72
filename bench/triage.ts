import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { Api, startAttest } from './attest.ts';
import { answerOf, bareServer, type Settings } from './figures.ts';
import { report as f8Report, importReport } from './import.ts';
import { cpuMs, median, wrk } from './lib.ts';
import { buildOf } from './other-build.ts';
import { type Figure, judge } from './report.ts';
import { failureOf, suiteReport, TESTS } from './suite.ts';

// The measured requirements of answers across runs (TRIAGE-*).
//
// F10: at 100,000 runs in a project, the failures list (by last seen, and by occurrences), the
// dashboard and a comparison answer in under 300 ms at p99. The project is 20 imports of one
// 5,000-test suite (bench/suite.ts: about one in ten failing, from 60 causes whose messages vary
// from import to import), one a day over the last 20 days, 17 on `main` and 3 on `feature/x`, one
// of them an outage; built once through the import API and kept under bench/.cache/. Each answer
// is read by wrk over one connection, one request after another: the p99 of a person opening the
// page, not of a queue (with 8 connections on a one-core server the p99 would be about 8 answers
// long, and would measure the queue). Beside each, bare node:http sending the same bytes.
//
// F11: recording failures (fingerprints, groups, occurrences, health) adds at most 10% to the
// one-step results post and to an import's wall time. The same work is sent, A, B, A, B…, to this
// build and to the build of BASE_COMMIT (just before failures were recorded), each on a fresh
// data folder of its own (their schemas differ).

/** The commit just before runs' failures were recorded when they complete (TRIAGE-1, TRIAGE-2). */
export const BASE_COMMIT = '526808e';

const IMPORTS = 20;
const FEATURE_IMPORTS = new Set([4, 11, 16]);
const OUTAGE_IMPORT = 8;
const DAY = 86_400_000;

interface Seed {
  key: string;
  projectId: string;
  jobIds: string[];
  runs: number;
  seededAt: string;
  seconds: number;
}

const SEED_FILE = 'bench-seed.json';

/**
 * What F10's seed depends on: the build that writes it (its server bundle: what is recorded as runs
 * complete, error groups and health included, changes with the code as well as with the schema),
 * and the suite's bytes. A new build seeds anew.
 */
function seedHash(): string {
  const dist = process.env.BENCH_DIST ?? 'dist';
  const hash = createHash('sha256');
  for (const folder of ['server', 'chunks'])
    for (const file of fs.readdirSync(path.join(dist, folder)).sort())
      if (file.endsWith('.js')) hash.update(file).update(fs.readFileSync(path.join(dist, folder, file)));
  return hash
    .update(suiteReport(0, IMPORTS, new Date(0)))
    .digest('hex')
    .slice(0, 12);
}

/** The 20 imports of the 100,000-run project, through the import API of a server started on `target`. */
async function seed(target: { dataDir: string; databaseUrl?: string }): Promise<Seed> {
  const started = performance.now();
  const server = await startAttest(target);
  const api = new Api(server.url, server.key);
  const project = await api.project();
  const now = Date.now();
  const jobIds: string[] = [];
  let runs = 0;
  try {
    for (let k = 0; k < IMPORTS; k++) {
      // One import a day, the latest two hours ago.
      const at = new Date(now - (IMPORTS - 1 - k) * DAY - 2 * 3_600_000);
      const imported = await importReport(server, project.id, suiteReport(k, IMPORTS, at, k === OUTAGE_IMPORT), {
        name: `shop nightly ${k + 1}`,
        branch: FEATURE_IMPORTS.has(k) ? 'feature/x' : 'main',
        build: String(k + 1),
        commit: createHash('sha1').update(`commit ${k}`).digest('hex'),
      });
      jobIds.push(imported.jobId);
      runs += imported.runs;
    }
  } finally {
    await server.stop();
  }
  return {
    key: server.key,
    projectId: project.id,
    jobIds,
    runs,
    seededAt: new Date(now).toISOString(),
    seconds: (performance.now() - started) / 1000,
  };
}

/**
 * The F10 project on SQLite: a data folder kept in bench/.cache/, keyed by `seedHash()` and by the
 * UTC day it was seeded on (its imports are dated relative to that day, so that the dashboard's
 * 14-day window holds the same 14 of them on any later run that day). Copied for each run.
 */
async function seededSqlite(temp: (prefix: string) => string): Promise<{ dataDir: string; seed: Seed }> {
  const prefix = 'triage-100000-';
  const cache = path.join('bench/.cache', `${prefix}${seedHash()}-${new Date().toISOString().slice(0, 10)}`);
  if (!fs.existsSync(path.join(cache, SEED_FILE))) {
    // Older seeds (another schema, another day) are only disk space now. A fresh clone has no cache yet.
    fs.mkdirSync('bench/.cache', { recursive: true });
    for (const old of fs.readdirSync('bench/.cache').filter((name) => name.startsWith(prefix)))
      fs.rmSync(path.join('bench/.cache', old), { recursive: true, force: true });
    const building = `${cache}.building`;
    fs.mkdirSync(building, { recursive: true });
    fs.writeFileSync(path.join(building, SEED_FILE), JSON.stringify(await seed({ dataDir: building })));
    fs.renameSync(building, cache);
  }
  const dataDir = temp('attest-bench-f10-');
  fs.cpSync(cache, dataDir, { recursive: true });
  return { dataDir, seed: JSON.parse(fs.readFileSync(path.join(cache, SEED_FILE), 'utf8')) as Seed };
}

/**
 * The F10 project on PostgreSQL: a database kept on the server (`attest_bench_f10_<hash>_<day>`,
 * the seed's details beside it in bench/.cache/), from which each run creates its own copy
 * (`CREATE DATABASE … TEMPLATE`), dropped after. Older seed databases are dropped.
 */
async function seededPostgres(
  admin: pg.Client,
  postgresUrl: string,
  temp: (prefix: string) => string,
): Promise<{ databaseUrl: string; seed: Seed; drop: () => Promise<void> }> {
  const prefix = 'attest_bench_f10_';
  const name = `${prefix}${seedHash()}_${new Date().toISOString().slice(0, 10).replaceAll('-', '_')}`;
  const seedFile = path.join('bench/.cache', `${name}.json`);
  const urlOf = (database: string) => {
    const url = new URL(postgresUrl);
    url.pathname = `/${database}`;
    return url.toString();
  };
  const exists = (await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount === 1;
  if (!exists || !fs.existsSync(seedFile)) {
    const old = await admin.query<{ datname: string }>('SELECT datname FROM pg_database WHERE datname LIKE $1', [`${prefix}%`]);
    for (const { datname } of old.rows) await admin.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`);
    for (const file of fs.readdirSync('bench/.cache').filter((f) => f.startsWith(prefix))) fs.rmSync(path.join('bench/.cache', file));
    const building = `${name}_building`;
    await admin.query(`CREATE DATABASE ${building}`);
    const seeded = await seed({ dataDir: temp('attest-bench-f10-pg-seed-'), databaseUrl: urlOf(building) });
    await admin.query(`ALTER DATABASE ${building} RENAME TO ${name}`);
    fs.writeFileSync(seedFile, JSON.stringify(seeded));
  }
  const copy = `attest_bench_f10_run_${process.pid}`;
  await admin.query(`CREATE DATABASE ${copy} TEMPLATE ${name}`);
  return {
    databaseUrl: urlOf(copy),
    seed: JSON.parse(fs.readFileSync(seedFile, 'utf8')) as Seed,
    drop: async () => {
      await admin.query(`DROP DATABASE IF EXISTS ${copy} WITH (FORCE)`);
    },
  };
}

/** Latency of one URL over one connection: the samples' p50 and p99 (ms), interleaved with the bare server's. */
async function latencies(
  settings: Settings,
  attest: { url: string; headers: Record<string, string>; pid: number },
  bare: { url: string; pid: number },
) {
  const one = (target: { url: string; headers?: Record<string, string>; pid: number }, seconds: number) =>
    // wrk's timeout raised from 2 s: a slow answer must count as a latency, not vanish as an error.
    wrk(target.url, { headers: target.headers, seconds, connections: 1, serverPid: target.pid, timeoutSeconds: 60 });
  await one(attest, 1); // warm-up: the JIT, the statement cache, SQLite's page cache
  await one(bare, 1);
  const a: Awaited<ReturnType<typeof one>>[] = [];
  const b: Awaited<ReturnType<typeof one>>[] = [];
  for (let i = 0; i < settings.repetitions; i++) {
    const sample = await one(attest, settings.seconds);
    if (sample.non2xx > 0) throw new Error(`${attest.url}: ${sample.non2xx} answers were not 2xx`);
    if (sample.errors > 0 || sample.requests === 0)
      throw new Error(`${attest.url}: ${sample.errors} requests failed, ${sample.requests} answered`);
    a.push(sample);
    b.push(await one(bare, settings.seconds));
  }
  return { a, b };
}

/** F10: the four answers on the 100,000-run project, on SQLite and, when one answers, PostgreSQL. */
export async function f10Figures(settings: Settings, temp: (prefix: string) => string): Promise<Figure[]> {
  settings.step('F10 100,000 runs on SQLite (seed cached in bench/.cache)');
  const sqlite = await seededSqlite(temp);
  const figures = await f10Reads(settings, 'sqlite', sqlite.seed, { dataDir: sqlite.dataDir });
  settings.step('F10 100,000 runs on PostgreSQL (seed database kept)');
  const postgresUrl = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const admin = new pg.Client({ connectionString: postgresUrl });
  if (
    !(await admin.connect().then(
      () => true,
      () => false,
    ))
  ) {
    console.error(`PostgreSQL at ${postgresUrl} does not answer: F10's PostgreSQL figures are left out.`);
    return figures;
  }
  try {
    const postgres = await seededPostgres(admin, postgresUrl, temp);
    try {
      figures.push(
        ...(await f10Reads(settings, 'postgres', postgres.seed, {
          dataDir: temp('attest-bench-f10-pg-'),
          databaseUrl: postgres.databaseUrl,
        })),
      );
    } finally {
      await postgres.drop();
    }
  } finally {
    await admin.end();
  }
  return figures;
}

/** The four answers of a server started on the seeded project, each against bare node:http sending its bytes. */
async function f10Reads(
  settings: Settings,
  dialect: 'sqlite' | 'postgres',
  seed: Seed,
  target: { dataDir: string; databaseUrl?: string },
): Promise<Figure[]> {
  const attest = await startAttest({ ...target, key: seed.key });
  const figures: Figure[] = [];
  try {
    const headers = { 'service.api-token': attest.key, accept: 'application/json' };
    const api = `${attest.url}/api/v1`;
    const latestJob = seed.jobIds.at(-1) as string;
    const reads = [
      { title: 'failures list (by last seen)', url: `${api}/projects/${seed.projectId}/failures` },
      { title: 'failures list by occurrences', url: `${api}/projects/${seed.projectId}/failures?sort=occurrences` },
      { title: 'dashboard, branch main, 14 days', url: `${api}/projects/${seed.projectId}/dashboard?branch=main&days=14` },
      { title: 'comparison of the latest job with baseBranch=main', url: `${api}/testmgmt/jobs/${latestJob}/comparison?baseBranch=main` },
    ];
    for (const read of reads) {
      let answer: Awaited<ReturnType<typeof answerOf>>;
      try {
        answer = await answerOf(read.url, headers);
      } catch (error) {
        console.error(`F10 ${read.title} (${dialect}): ${(error as Error).message}; left out`);
        continue;
      }
      const bare = await bareServer(answer.body, answer.headers);
      try {
        const { a, b } = await latencies(settings, { url: read.url, headers, pid: attest.pid }, { url: bare.url, pid: bare.pid });
        const p99 = a.map((s) => s.p99Ms);
        const bareP99 = b.map((s) => s.p99Ms);
        figures.push(
          judge({
            id: 'F10',
            title: `${read.title}, p99 (${Math.round(answer.body.length / 1024)} KB)`,
            dialect,
            unit: 'ms',
            attest: median(p99),
            baseline: median(bareP99),
            baselineName: 'bare node:http, same bytes',
            lowerIsBetter: true,
            maxValue: 300,
            samples: { attest: p99, baseline: bareP99 },
            notes:
              `${seed.runs.toLocaleString('en-US')} runs; 1 connection; p50 ${median(a.map((s) => s.p50Ms)).toFixed(1)} ms, ` +
              `worst sample's p99 ${Math.max(...p99).toFixed(1)} ms, ${median(a.map((s) => s.rps)).toFixed(1)} req/s, ` +
              `server CPU ${(median(a.map((s) => s.cpuUsPerRequest ?? Number.NaN)) / 1000).toFixed(1)} ms/request`,
          }),
        );
      } finally {
        await bare.stop();
      }
    }
  } finally {
    await attest.stop();
  }
  return figures;
}

/** One failed run of test `n`, as a live reporter records it: created, one failed step posted, completed. */
async function failedRun(api: Api, projectId: string, n: number): Promise<void> {
  const cause = n % 60;
  const { message, stack } = failureOf(cause, n, n);
  const run = await api.call<{ id: string }>('POST', '/testmgmt/testruns', {
    projectId,
    name: `case ${n % 200}`,
    testName: `com.example.live.Suite${n % 10} › case ${n % 200}`,
  });
  await api.call('POST', `/testmgmt/testruns/${run.id}/results`, {
    steps: [
      { key: 's1', title: 'submit the form', status: 'failed', durationMs: 40, error: message, cells: [{ name: 'trace', text: stack }] },
    ],
  });
  await api.call('PATCH', `/testmgmt/testruns/${run.id}`, { status: 'completed', verdict: 'failed' });
}

/** One sample of an F11 workload: its figure (seconds or a rate), and the server CPU per unit of work (ms). */
interface Sample {
  value: number;
  cpuMs: number;
}

/** F11: this build against BASE_COMMIT's, the same work A, B, A, B…, each on its own data folder. */
export async function f11Figures(settings: Settings, temp: (prefix: string) => string): Promise<Figure[]> {
  settings.step(`F11 building ${BASE_COMMIT} (cached)`);
  const baseDist = buildOf(BASE_COMMIT);
  const newer = await startAttest({ dataDir: temp('attest-bench-f11-new-') });
  const older = await startAttest({ dataDir: temp('attest-bench-f11-old-'), dist: baseDist });
  const both = [newer, older] as const;
  const projects = await Promise.all(both.map((server) => new Api(server.url, server.key).project()));
  const projectOf = (which: 0 | 1) => (projects[which] as { id: string }).id;
  const figures: Figure[] = [];
  const pairs = Math.max(2, settings.repetitions * 2 - 1);
  const baselineName = `build of ${BASE_COMMIT}, before failures were recorded`;
  /** `rounds` samples of `work` on each build, interleaved: this build, the base, this build… */
  const interleave = async (rounds: number, work: (which: 0 | 1, round: number) => Promise<Sample>) => {
    const a: Sample[] = [];
    const b: Sample[] = [];
    for (let i = 0; i < rounds; i++) {
      a.push(await work(0, i));
      b.push(await work(1, i));
    }
    return { a, b };
  };
  const figure = (title: string, unit: string, cpuUnit: string, { a, b }: { a: Sample[]; b: Sample[] }, lowerIsBetter = false): Figure => {
    const values = (samples: Sample[]) => samples.map((sample) => sample.value);
    const paired = a.map((x, i) => (lowerIsBetter ? (b[i] as Sample).value / x.value : x.value / (b[i] as Sample).value));
    const cpuA = median(a.map((sample) => sample.cpuMs));
    const cpuB = median(b.map((sample) => sample.cpuMs));
    return judge({
      id: 'F11',
      title,
      dialect: 'sqlite',
      unit,
      attest: median(values(a)),
      baseline: median(values(b)),
      baselineName,
      lowerIsBetter,
      // At most 1.10 × the time: a speed ratio of at least 1 / 1.10 = 0.909.
      minRatio: 0.91,
      samples: { attest: values(a), baseline: values(b) },
      notes:
        `${a.length} pairs; median of the paired ratios ${median(paired).toFixed(3)}; ` +
        `server CPU per ${cpuUnit}: this build ${cpuA.toFixed(2)} ms, base ${cpuB.toFixed(2)} ms (× ${(cpuA / cpuB).toFixed(2)})`,
    });
  };
  const cpuOf = (which: 0 | 1) => cpuMs(both[which].pid);
  try {
    // (a) F8's import: 5,000 new tests each time, one in ten failing with one message.
    settings.step("F11 import of F8's 5,000-test file, two builds");
    const timeImport = async (which: 0 | 1, body: Buffer, options: Record<string, string> = {}): Promise<Sample> => {
      const before = cpuOf(which);
      const { seconds } = await importReport(both[which], projectOf(which), body, options);
      return { value: seconds, cpuMs: cpuOf(which) - before };
    };
    for (const which of [0, 1] as const) await timeImport(which, f8Report(`warm${which}`));
    figures.push(
      figure(
        `import of F8's ${TESTS.toLocaleString('en-US')}-test JUnit file, wall time`,
        's',
        'import',
        await interleave(pairs, (which, i) => timeImport(which, f8Report(`${which}-${i}`))),
        true,
      ),
    );

    // (a') The same suite imported again and again (bench/suite.ts): tests with histories, 60 causes.
    settings.step('F11 the same 5,000-test suite imported again, two builds');
    const day = Date.now() - 30 * DAY;
    const suite = (k: number) => suiteReport(k, IMPORTS, new Date(day + k * 3_600_000));
    for (const which of [0, 1] as const) await timeImport(which, suite(0), { branch: 'main' });
    figures.push(
      figure(
        `the same ${TESTS.toLocaleString('en-US')}-test suite imported again (histories, 60 causes), wall time`,
        's',
        'import',
        await interleave(pairs, (which, i) => timeImport(which, suite(i + 1), { branch: 'main' })),
        true,
      ),
    );

    // (b) F4's one-step posts, 4 connections, a new run per sample.
    settings.step('F11 one-step posts, two builds');
    const postSteps = async (which: 0 | 1, seconds: number): Promise<Sample> => {
      const server = both[which];
      const api = new Api(server.url, server.key);
      const run = await api.call<{ id: string }>('POST', '/testmgmt/testruns', { projectId: projectOf(which), name: 'posts' });
      const load = await wrk(`${server.url}/api/v1/testmgmt/testruns/${run.id}/results`, {
        headers: { 'service.api-token': server.key, 'content-type': 'application/json', accept: 'application/json' },
        seconds,
        connections: 4,
        script: 'bench/post-step.lua',
        serverPid: server.pid,
      });
      if (load.non2xx > 0) throw new Error(`one-step posts: ${load.non2xx} answers were not 2xx`);
      return { value: load.rps, cpuMs: (load.cpuUsPerRequest ?? Number.NaN) / 1000 };
    };
    for (const which of [0, 1] as const) await postSteps(which, 3);
    figures.push(
      figure(
        'one-step results posts, 4 clients',
        'posts/s',
        'post',
        await interleave(settings.repetitions, (which) => postSteps(which, settings.seconds)),
      ),
    );

    // (b') Failed runs completed: created, one failed step (60 causes, 200 tests), completed; 4 clients.
    settings.step('F11 failed runs completed, two builds');
    const failedRuns = async (which: 0 | 1, seconds: number): Promise<Sample> => {
      const server = both[which];
      const api = new Api(server.url, server.key);
      let n = 0;
      const end = performance.now() + seconds * 1000;
      const before = cpuOf(which);
      await Promise.all(
        Array.from({ length: 4 }, async () => {
          while (performance.now() < end) await failedRun(api, projectOf(which), n++);
        }),
      );
      return { value: n / seconds, cpuMs: (cpuOf(which) - before) / n };
    };
    for (const which of [0, 1] as const) await failedRuns(which, 3);
    figures.push(
      figure(
        'failed runs (create, one failed step, complete), 4 clients',
        'runs/s',
        'run',
        await interleave(settings.repetitions, (which) => failedRuns(which, settings.seconds)),
      ),
    );
  } finally {
    await Promise.all(both.map((server) => server.stop()));
  }
  return figures;
}
