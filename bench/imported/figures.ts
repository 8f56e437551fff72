import fs from 'node:fs';
import { Api, type Attest } from '../attest.ts';
import type { Settings } from '../figures.ts';
import { send } from '../http-client.ts';
import { emptyServer } from '../scale/figures.ts';
import { type Filled, fillProject, importFile, type Target } from './fill.ts';
import { type ImportSetPlan, planImportSet, screenshotPngs } from './generate.ts';

// The import-path set's figures (S18–S36, docs/performance.md "The import-path set"): two projects
// filled only through POST /projects/{id}/imports (generate.ts, fill.ts), a small one (2,000 runs)
// and a large one (100,000 by default), on one server per dialect; then the same reads on both,
// 80 of each, the two projects' requests alternating, one at a time over a kept-alive connection
// (the bench's own client, on the load core), p95 in ms. Lists hold if the large project's p95 is
// within twice the small one's or under 5 ms; the budgets: a failed-only list ≤ 100 ms, a
// 5,000-test job page's first data ≤ 300 ms, deleting a 10,000-run job ≤ 2 s, and PostgreSQL's
// import speed ≥ 0.8 of SQLite's on the same files.

export interface Row {
  id: string;
  title: string;
  dialect: 'sqlite' | 'postgres' | '-';
  unit: string;
  small: number;
  large: number;
  /** large over small (for a speed, small over large): more than 1 is the large project's cost. */
  ratio: number;
  bar: string;
  pass?: boolean;
  notes?: string;
}

export const IMPORTED_SMALL = 2000;
export const IMPORTED_LARGE = 100_000;
const READS = 80;
const LIMIT = 50;
const DELETION_RUNS = 10_000;

/** `--imported-small N`, `--imported-large N` (default 2,000 and 100,000; 1000000 makes the long run). */
export function importedSizes(argv: string[]): { small: number; large: number } {
  const sizeOf = (flag: string, fallback: number) => {
    const at = argv.findIndex((arg) => arg === flag || arg.startsWith(`${flag}=`));
    if (at < 0) return fallback;
    const value = Number(argv[at]?.split('=')[1] ?? argv[at + 1]);
    if (!Number.isInteger(value) || value < 100) throw new Error(`${flag} takes a whole number of runs, at least 100`);
    return value;
  };
  return { small: sizeOf('--imported-small', IMPORTED_SMALL), large: sizeOf('--imported-large', IMPORTED_LARGE) };
}

const p95 = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil(sorted.length * 0.95) - 1)] as number;
};

/** One project of the set on a server: its plan, what filling it took, and the ids its reads name. */
interface Side {
  target: Target;
  projectId: string;
  plan: ImportSetPlan;
  filled: Filled;
  sample: { jobId: string; testId: string; runId: string; cursor16: string };
}

async function sampleOf(api: Api, projectId: string, filled: Filled): Promise<Side['sample']> {
  // The newest nightly (the biggest job, 5,000 tests at full size), its base the main job before it.
  const nightly = [...filled.jobs].reverse().find((job) => job.planned.kind === 'nightly');
  if (!nightly) throw new Error('the set has no nightly');
  const failed = await api.call<{ items: { id: string; testId: string }[] }>(
    'GET',
    `/testmgmt/testruns?projectId=${projectId}&jobId=${nightly.jobId}&verdict=failed&limit=1`,
  );
  const run = failed.items[0];
  if (!run) throw new Error('the nightly has no failed run');
  // The 16th page's cursor, reached by paging (a set too small for 16 pages, as a smoke run's, reads its last).
  let cursor = '';
  for (let page = 1; page < 16; page++) {
    const answer: { nextCursor: string | null } = await api.call(
      'GET',
      `/testmgmt/testruns?projectId=${projectId}&limit=${LIMIT}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    );
    if (!answer.nextCursor) break;
    cursor = answer.nextCursor;
  }
  return { jobId: nightly.jobId, testId: run.testId, runId: run.id, cursor16: cursor };
}

interface Read {
  id: string;
  title: string;
  path: (side: Side) => string;
  /** A failed-only list: p95 at most 100 ms as well. */
  failedOnly?: boolean;
}

const READ_LIST: Read[] = [
  { id: 'S18', title: "a project's jobs", path: (s) => `/testmgmt/jobs?projectId=${s.projectId}&limit=${LIMIT}` },
  {
    id: 'S19',
    title: 'runs, branch main + verdict failed',
    path: (s) => `/testmgmt/testruns?projectId=${s.projectId}&branch=main&verdict=failed&limit=${LIMIT}`,
    failedOnly: true,
  },
  {
    id: 'S20',
    title: 'runs, the 16th cursor page',
    path: (s) =>
      `/testmgmt/testruns?projectId=${s.projectId}&limit=${LIMIT}${s.sample.cursor16 ? `&cursor=${encodeURIComponent(s.sample.cursor16)}` : ''}`,
  },
  {
    id: 'S21',
    title: 'runs of the nightly job (5,000 tests at full size)',
    path: (s) => `/testmgmt/testruns?projectId=${s.projectId}&jobId=${s.sample.jobId}&limit=${LIMIT}`,
  },
  {
    id: 'S22',
    title: 'runs of the nightly job, verdict failed',
    path: (s) => `/testmgmt/testruns?projectId=${s.projectId}&jobId=${s.sample.jobId}&verdict=failed&limit=${LIMIT}`,
    failedOnly: true,
  },
  { id: 'S23', title: 'runs, first page', path: (s) => `/testmgmt/testruns?projectId=${s.projectId}&limit=${LIMIT}` },
  {
    id: 'S24',
    title: 'runs of a test',
    path: (s) => `/testmgmt/testruns?projectId=${s.projectId}&testId=${s.sample.testId}&limit=${LIMIT}`,
  },
  { id: 'S25', title: "a test's history", path: (s) => `/testmgmt/tests/${s.sample.testId}/history?limit=${LIMIT}` },
  { id: 'S26', title: 'tests list', path: (s) => `/testmgmt/tests?projectId=${s.projectId}&limit=${LIMIT}` },
  { id: 'S27', title: "a failed run's results", path: (s) => `/testmgmt/testruns/${s.sample.runId}/results` },
  { id: 'S28', title: 'usage answer', path: (s) => `/projects/${s.projectId}/usage` },
  { id: 'S29', title: 'failures list', path: (s) => `/projects/${s.projectId}/failures?limit=${LIMIT}` },
  { id: 'S30', title: 'flaky tests', path: (s) => `/testmgmt/tests?projectId=${s.projectId}&sort=flaky&limit=${LIMIT}` },
  { id: 'S31', title: 'dashboard (14 days)', path: (s) => `/projects/${s.projectId}/dashboard?days=14` },
  { id: 'S32', title: 'comparison of the nightly with its base', path: (s) => `/testmgmt/jobs/${s.sample.jobId}/comparison` },
];

/** Milliseconds of one GET, its whole answer read; a failed answer stops the bench. */
async function timedGet(side: Side, route: string): Promise<number> {
  const started = performance.now();
  const answer = await send(`${side.target.url}/api/v1${route}`, 'GET', {
    'service.api-token': side.target.key,
    accept: 'application/json',
  });
  const ms = performance.now() - started;
  if (answer.status !== 200) throw new Error(`GET ${route}: ${answer.status} ${answer.body.toString('utf8').slice(0, 200)}`);
  return ms;
}

/** READS timings of `work` on each side, the two sides alternating, after a few of each to warm. */
async function alternating(small: Side, large: Side, work: (side: Side) => Promise<number>) {
  for (let i = 0; i < 5; i++) {
    await work(small);
    await work(large);
  }
  const a: number[] = [];
  const b: number[] = [];
  for (let i = 0; i < READS; i++) {
    a.push(await work(small));
    b.push(await work(large));
  }
  return { small: a, large: b };
}

const within2 = (small: number, large: number) => large <= 2 * small || large < 5;

function listRow(read: Read, dialect: 'sqlite' | 'postgres', times: { small: number[]; large: number[] }): Row {
  const small = p95(times.small);
  const large = p95(times.large);
  const failedBudget = read.failedOnly ? large <= 100 && small <= 100 : true;
  return {
    id: read.id,
    title: `${read.title}, p95 of ${READS}`,
    dialect,
    unit: 'ms',
    small,
    large,
    ratio: large / small,
    bar: read.failedOnly ? '≤ ×2 or < 5 ms; ≤ 100 ms' : '≤ ×2 or < 5 ms',
    pass: within2(small, large) && failedBudget,
    notes: `medians ${median(times.small).toFixed(2)} / ${median(times.large).toFixed(2)} ms`,
  };
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
};

/** The web job page's first data: the job and its newest 200 runs, asked at once (web/src/pages/job.tsx, loadJob). */
async function jobPageFirstData(side: Side): Promise<number> {
  const started = performance.now();
  await Promise.all([
    timedGet(side, `/testmgmt/jobs/${side.sample.jobId}`),
    timedGet(side, `/testmgmt/testruns?jobId=${side.sample.jobId}&limit=200`),
  ]);
  return performance.now() - started;
}

/** A job of DELETION_RUNS runs imported into the side's project, then deleted: ms to the DELETE's answer. */
async function deletion(side: Side, round: string): Promise<number> {
  const cases = Array.from(
    { length: DELETION_RUNS },
    (_, i) => `<testcase classname="com.acme.purge${round}.Suite${Math.floor(i / 100)}" name="case ${i % 100}" time="0.010"/>`,
  ).join('');
  const xml = Buffer.from(
    `<?xml version="1.0" encoding="UTF-8"?><testsuites name="purge ${round}"><testsuite name="purge">${cases}</testsuite></testsuites>`,
  );
  const done = await importFile(
    side.target,
    side.projectId,
    { name: 'purge.xml', type: 'application/xml', bytes: xml },
    { branch: 'main' },
  );
  if (done.runs !== DELETION_RUNS) throw new Error(`the deletion's job has ${done.runs} runs`);
  const started = performance.now();
  const answer = await send(`${side.target.url}/api/v1/testmgmt/jobs/${done.jobId}`, 'DELETE', {
    'service.api-token': side.target.key,
    accept: 'application/json',
  });
  const ms = performance.now() - started;
  if (answer.status !== 204) throw new Error(`DELETE job: ${answer.status} ${answer.body.toString('utf8').slice(0, 200)}`);
  return ms;
}

async function fillSide(server: Attest, runs: number, key: string, pngs: Buffer[], settings: Settings): Promise<Side> {
  const api = new Api(server.url, server.key);
  const project = await api.call<{ id: string }>('POST', '/projects', { key, name: `Imported ${runs.toLocaleString('en-US')}` });
  const plan = planImportSet({ runs });
  settings.step(`${key}: ${plan.imports.length} imports, ${plan.counts.runs.toLocaleString('en-US')} runs`);
  const filled = await fillProject(server, project.id, plan, pngs);
  const side: Side = { target: server, projectId: project.id, plan, filled, sample: { jobId: '', testId: '', runId: '', cursor16: '' } };
  side.sample = await sampleOf(api, project.id, filled);
  return side;
}

/** The import-path set's rows of one dialect, and its large project's import speed (for the PostgreSQL to SQLite row). */
export async function importedFigures(
  settings: Settings,
  dialect: 'sqlite' | 'postgres',
  temp: (prefix: string) => string,
  sizes: { small: number; large: number },
): Promise<{ rows: Row[]; speed: number }> {
  settings.step(`imported set ${dialect}: filling through the import endpoint`);
  const { server, stop } = await emptyServer(dialect, temp, 'imported');
  const rows: Row[] = [];
  try {
    const pngs = await screenshotPngs();
    const small = await fillSide(server, sizes.small, 'IMPS', pngs, settings);
    const large = await fillSide(server, sizes.large, 'IMPL', pngs, settings);
    const speed = (side: Side) => side.filled.runs / side.filled.seconds;
    rows.push(importSpeedRow(dialect, small, large));
    settings.step(`imported set ${dialect}: reads`);
    for (const read of READ_LIST) {
      if (!settings.wants(read.id)) continue;
      rows.push(listRow(read, dialect, await alternating(small, large, (side) => timedGet(side, read.path(side)))));
    }
    const page = await alternating(small, large, jobPageFirstData);
    rows.push({
      id: 'S35',
      title: `the nightly's job page, first data (job + 200 runs), p95 of ${READS}`,
      dialect,
      unit: 'ms',
      small: p95(page.small),
      large: p95(page.large),
      ratio: p95(page.large) / p95(page.small),
      bar: '≤ 300 ms',
      pass: p95(page.large) <= 300 && p95(page.small) <= 300,
    });
    settings.step(`imported set ${dialect}: deleting ${DELETION_RUNS.toLocaleString('en-US')}-run jobs`);
    const deleted = { small: await deletion(small, 's'), large: await deletion(large, 'l') };
    rows.push({
      id: 'S36',
      title: `deleting a ${DELETION_RUNS.toLocaleString('en-US')}-run imported job, to the DELETE's answer`,
      dialect,
      unit: 'ms',
      ...deleted,
      ratio: deleted.large / deleted.small,
      bar: '≤ 2,000 ms',
      pass: deleted.large <= 2000 && deleted.small <= 2000,
    });
    return { rows, speed: speed(large) };
  } finally {
    await stop();
  }
}

function importSpeedRow(dialect: 'sqlite' | 'postgres', small: Side, large: Side): Row {
  const speed = (side: Side) => side.filled.runs / side.filled.seconds;
  const summary = (side: Side) =>
    `${side.plan.counts.jobs} imports (${side.plan.counts.nightlies} nightlies of ${side.plan.nightlySize}), ` +
    `${side.filled.runs.toLocaleString('en-US')} runs, ${side.plan.tests.toLocaleString('en-US')} tests, ` +
    `${side.plan.counts.failed.toLocaleString('en-US')} failed, ${side.plan.counts.reruns} reruns, ` +
    `${side.filled.attachments} screenshots, ${side.filled.seconds.toFixed(1)} s`;
  return {
    id: 'S33',
    title: 'import speed, upload to completed, one import at a time',
    dialect,
    unit: 'runs/s',
    small: speed(small),
    large: speed(large),
    ratio: speed(small) / speed(large),
    bar: '',
    notes: `small: ${summary(small)}; large: ${summary(large)}`,
  };
}

/** S34: PostgreSQL's import speed against SQLite's, the same files into the large project. */
export function dialectSpeedRow(sqlite: number, postgres: number): Row {
  return {
    id: 'S34',
    title: "PostgreSQL's import speed over SQLite's (the large project's files)",
    dialect: '-',
    unit: 'runs/s',
    small: sqlite,
    large: postgres,
    ratio: postgres / sqlite,
    bar: '≥ 0.8',
    pass: postgres / sqlite >= 0.8,
  };
}

const fmt = (n: number) => n.toLocaleString('en-US', { maximumFractionDigits: n < 10 ? 2 : 0, minimumFractionDigits: n < 10 ? 2 : 0 });

export function importedMarkdown(rows: Row[], machine: Record<string, unknown>, sizes: { small: number; large: number }): string {
  const lines = rows.map((r) => {
    const verdict = r.pass === undefined ? '' : r.pass ? 'holds' : '**misses**';
    const [small, large] = r.id === 'S34' ? ['SQLite', 'PostgreSQL'] : ['', ''];
    return `| ${r.id} | ${r.title} | ${r.dialect} | ${small} ${fmt(r.small)} ${r.unit} | ${large} ${fmt(r.large)} ${r.unit} | ${r.ratio.toFixed(2)} | ${r.bar} | ${verdict} |`;
  });
  // A try at reduced sizes checks that the code works; its ratios say nothing about scale.
  const smoke =
    sizes.large < IMPORTED_LARGE
      ? `**A smoke run at reduced sizes (small ${sizes.small.toLocaleString('en-US')}, large ${sizes.large.toLocaleString('en-US')} runs): it proves the path works, its figures are not the set's.** `
      : '';
  return [
    `${smoke}Measured ${machine.date} on ${machine.cpu} (${machine.cores} cores), Node.js ${machine.node}, commit ${machine.commit}; ` +
      `small project ${sizes.small.toLocaleString('en-US')} runs, large ${sizes.large.toLocaleString('en-US')}, both filled through the import endpoint; ` +
      `${machine.pinning}; ${machine.settings}${machine.load ? `; 1-minute load ${machine.load}` : ''}.`,
    '',
    '| Figure | What | Database | Small | Large | Ratio | Bar | |',
    '|---|---|---|---|---|---|---|---|',
    ...lines,
    '',
  ].join('\n');
}

/** results/imported.{json,md}, a copy under results/history/, and the table into docs/performance.md between its markers. */
export function writeImported(
  rows: Row[],
  machine: Record<string, unknown>,
  sizes: { small: number; large: number },
  options: { updateDocs: boolean },
): string {
  const table = importedMarkdown(rows, machine, sizes);
  const json = `${JSON.stringify({ machine, sizes, rows }, null, 2)}\n`;
  fs.mkdirSync('bench/results/history', { recursive: true });
  fs.writeFileSync('bench/results/imported.json', json);
  fs.writeFileSync('bench/results/imported.md', table);
  fs.writeFileSync(`bench/results/history/imported-${String(machine.date).replace(/[:.]/g, '-')}.json`, json);
  if (!options.updateDocs) return table;
  const doc = fs.readFileSync('docs/performance.md', 'utf8');
  const start = '<!-- imported:start -->';
  const end = '<!-- imported:end -->';
  const from = doc.indexOf(start);
  const to = doc.indexOf(end);
  if (from < 0 || to < 0) throw new Error('docs/performance.md lacks the imported markers');
  fs.writeFileSync('docs/performance.md', `${doc.slice(0, from + start.length)}\n${table}\n${doc.slice(to)}`);
  return table;
}
