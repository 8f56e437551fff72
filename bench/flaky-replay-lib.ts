// The flaky-detection replay (TRIAGE-12, docs/triage.md "Accuracy"): synthetic job histories with a
// known truth, imported as Surefire JUnit XML through the real import API, and the health the server
// then answers compared with the truth. Used by bench/flaky-replay.ts (the full replay) and by
// test/api/flaky-replay.test.ts (a reduced one that guards the thresholds).

export type Truth = 'stable' | 'flaky' | 'broken';

export interface ReplayOptions {
  /** The server's address and an API key of a tester (or more) of the project. */
  url: string;
  key: string;
  projectId: string;
  tests: number;
  jobs: number;
  seed: number;
  /** Called before each job is imported: a test server's clock moves on there (a real one moves by itself). */
  beforeJob?: () => void;
}

export interface ReplayResult {
  tests: number;
  jobs: number;
  outageJobs: number;
  /** truth → predicted state → tests, at the end of the replay. */
  matrix: Record<Truth, Record<Truth, number>>;
  precision: number;
  recall: number;
  /** Truly broken tests whose health read flaky at the end, and at any point of the replay. */
  brokenCalledFlaky: number;
  brokenEverFlaky: number;
  /** Truly broken tests in the project's quarantine list at the end. */
  quarantinedBroken: number;
  /** Runs on the default branch until each flaky test was first flagged (the ones flagged). */
  reaction: { median: number; p90: number; max: number; flagged: number; of: number };
  /** Outage jobs that were not marked incidents, and tests whose health an outage job changed. */
  outagesMissed: number;
  healthChangedByOutage: number;
}

/** mulberry32: a small seeded generator, the same sequence on every machine. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

interface Spec {
  name: string;
  truth: Truth;
  /** Flaky: an attempt's failure probability; retried: failures rerun once, as Surefire's rerunFailingTestsCount=1. */
  p: number;
  retried: boolean;
  /** Broken: the job index from which it fails every time. */
  brokenAt: number;
}

const xmlText = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/"/g, '&quot;');
const stack = (spec: Spec, line: number) =>
  `java.lang.AssertionError: expected ${spec.name}\n\tat com.acme.${spec.name}.check(${spec.name}.java:${line})`;
const problem = (tag: string, message: string, trace: string) =>
  tag.startsWith('rerun') || tag.startsWith('flaky')
    ? `<${tag} message="${xmlText(message)}" type="java.lang.AssertionError"><stackTrace>${xmlText(trace)}</stackTrace></${tag}>`
    : `<${tag} message="${xmlText(message)}" type="java.lang.AssertionError">${xmlText(trace)}</${tag}>`;

const OUTAGE = 'java.net.ConnectException: Connection refused (db.internal:5432)';
const OUTAGE_TRACE = `${OUTAGE}\n\tat com.acme.Db.connect(Db.java:40)`;

/** One job's report: each test case as Surefire writes it, and which tests failed in the end. */
function jobReport(specs: readonly Spec[], job: number, outage: boolean, random: () => number): string {
  const cases = specs.map((spec) => {
    const open = `<testcase name="${spec.name}" classname="com.acme.Suite" time="0.05">`;
    if (outage && random() < 0.9) return `${open}${problem('error', OUTAGE, OUTAGE_TRACE)}</testcase>`;
    const message = `expected ${spec.name} to hold`;
    if (spec.truth === 'broken' && job >= spec.brokenAt) return `${open}${problem('failure', message, stack(spec, 7))}</testcase>`;
    if (spec.truth !== 'flaky' || random() >= spec.p) return `${open}</testcase>`;
    if (!spec.retried) return `${open}${problem('failure', message, stack(spec, 9))}</testcase>`;
    // Retried once: a pass on the rerun is a <flakyFailure>, a second failure a <rerunFailure>.
    if (random() >= spec.p) return `${open}${problem('flakyFailure', message, stack(spec, 9))}</testcase>`;
    return `${open}${problem('failure', message, stack(spec, 9))}${problem('rerunFailure', message, stack(spec, 9))}</testcase>`;
  });
  return `<?xml version="1.0" encoding="UTF-8"?>\n<testsuite name="com.acme.Suite" tests="${specs.length}">\n${cases.join('\n')}\n</testsuite>\n`;
}

async function call(options: ReplayOptions, method: string, path: string, body?: Buffer, type?: string): Promise<unknown> {
  const response = await fetch(`${options.url}/api/v1${path}`, {
    method,
    headers: { 'service.api-token': options.key, accept: 'application/json', ...(type ? { 'content-type': type } : {}) },
    ...(body ? { body } : {}),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return text === '' ? null : JSON.parse(text);
}

interface HealthSeen {
  state: Truth;
  flakyScore: number;
  runsConsidered: number;
  monitor: string | null;
}

/** Every test's health in the project, by full name (the test's name for a JUnit import). */
async function healthOfAll(options: ReplayOptions): Promise<Map<string, HealthSeen>> {
  const seen = new Map<string, HealthSeen>();
  let cursor: string | null = null;
  do {
    const page = (await call(
      options,
      'GET',
      `/testmgmt/tests?projectId=${options.projectId}&limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    )) as { items: { name: string; health: HealthSeen }[]; nextCursor: string | null };
    for (const item of page.items) {
      const { state, flakyScore, runsConsidered, monitor } = item.health;
      seen.set(item.name.split(' › ').at(-1) as string, { state, flakyScore, runsConsidered, monitor });
    }
    cursor = page.nextCursor;
  } while (cursor);
  return seen;
}

async function importJob(options: ReplayOptions, xml: string, branch: string, commit: string): Promise<string> {
  const started = (await call(
    options,
    'POST',
    `/projects/${options.projectId}/imports?format=junit&branch=${branch}&commit=${commit}`,
    Buffer.from(xml),
    'application/xml',
  )) as { id: string };
  for (;;) {
    const record = (await call(options, 'GET', `/projects/${options.projectId}/imports/${started.id}`)) as {
      status: string;
      jobId: string | null;
      error: string | null;
    };
    if (record.status === 'completed') return record.jobId as string;
    if (record.status === 'failed') throw new Error(`import failed: ${record.error}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const quantile = (sorted: readonly number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;

/**
 * Replays `jobs` jobs of `tests` tests: 55% stable, 30% flaky (p from 0.1 to 0.5; half of them
 * retried once, so some fail only on the retry and read as `<flakyFailure>`), 15% broken from a job
 * between 20% and 60% of the way; two jobs in three on main, one in three on feature; every 12th
 * job on main an outage (90% of the tests failing with one cause).
 */
export async function replay(options: ReplayOptions): Promise<ReplayResult> {
  const random = rng(options.seed);
  const specs: Spec[] = [];
  for (let i = 0; i < options.tests; i++) {
    const draw = i / options.tests;
    const truth: Truth = draw < 0.55 ? 'stable' : draw < 0.85 ? 'flaky' : 'broken';
    specs.push({
      name: `T${String(i).padStart(4, '0')}`,
      truth,
      p: 0.1 + random() * 0.4,
      retried: random() < 0.5,
      brokenAt: Math.floor(options.jobs * (0.2 + random() * 0.4)),
    });
  }
  const truthOf = new Map(specs.map((spec) => [spec.name, spec.truth]));
  const firstFlagged = new Map<string, number>();
  const brokenEverFlaky = new Set<string>();
  let mainRuns = 0;
  let outageJobs = 0;
  let outagesMissed = 0;
  let healthChangedByOutage = 0;
  let mainJobs = 0;
  for (let job = 0; job < options.jobs; job++) {
    const branch = job % 3 === 2 ? 'feature' : 'main';
    if (branch === 'main') mainJobs++;
    const outage = branch === 'main' && mainJobs % 12 === 0;
    const before = outage ? await healthOfAll(options) : undefined;
    options.beforeJob?.();
    const jobId = await importJob(options, jobReport(specs, job, outage, random), branch, `c${job}`);
    if (outage) {
      outageJobs++;
      const answer = (await call(options, 'GET', `/testmgmt/jobs/${jobId}`)) as { incident: unknown };
      if (answer.incident === null) outagesMissed++;
      const after = await healthOfAll(options);
      for (const [name, health] of after) if (JSON.stringify(before?.get(name)) !== JSON.stringify(health)) healthChangedByOutage++;
      continue;
    }
    if (branch !== 'main') continue;
    mainRuns++;
    for (const [name, health] of await healthOfAll(options)) {
      if (health.state !== 'flaky') continue;
      if (truthOf.get(name) === 'flaky' && !firstFlagged.has(name)) firstFlagged.set(name, mainRuns);
      if (truthOf.get(name) === 'broken') brokenEverFlaky.add(name);
    }
  }

  const final = await healthOfAll(options);
  const zero = (): Record<Truth, number> => ({ stable: 0, flaky: 0, broken: 0 });
  const matrix: Record<Truth, Record<Truth, number>> = { stable: zero(), flaky: zero(), broken: zero() };
  for (const spec of specs) matrix[spec.truth][final.get(spec.name)?.state ?? 'stable']++;
  const predictedFlaky = matrix.stable.flaky + matrix.flaky.flaky + matrix.broken.flaky;
  const truthFlaky = matrix.flaky.stable + matrix.flaky.flaky + matrix.flaky.broken;
  const quarantine = (await call(options, 'GET', `/projects/${options.projectId}/quarantine`)) as { items: { name: string }[] };
  const reactions = [...firstFlagged.values()].sort((a, b) => a - b);
  return {
    tests: options.tests,
    jobs: options.jobs,
    outageJobs,
    matrix,
    precision: predictedFlaky === 0 ? 0 : matrix.flaky.flaky / predictedFlaky,
    recall: truthFlaky === 0 ? 0 : matrix.flaky.flaky / truthFlaky,
    brokenCalledFlaky: matrix.broken.flaky,
    brokenEverFlaky: brokenEverFlaky.size,
    quarantinedBroken: quarantine.items.filter((item) => truthOf.get(item.name) === 'broken').length,
    reaction: {
      median: quantile(reactions, 0.5),
      p90: quantile(reactions, 0.9),
      max: reactions.at(-1) ?? 0,
      flagged: reactions.length,
      of: truthFlaky,
    },
    outagesMissed,
    healthChangedByOutage,
  };
}

/** The result as the tables docs/triage.md publishes. */
export function formatReplay(result: ReplayResult): string {
  const { matrix } = result;
  const row = (truth: Truth) => `| ${truth} | ${matrix[truth].stable} | ${matrix[truth].flaky} | ${matrix[truth].broken} |`;
  return [
    `${result.tests} tests, ${result.jobs} jobs (${result.outageJobs} outages) on main and feature; health on main.`,
    '',
    '| truth \\ health | stable | flaky | broken |',
    '|---|---|---|---|',
    row('stable'),
    row('flaky'),
    row('broken'),
    '',
    `flaky precision ${result.precision.toFixed(3)}, recall ${result.recall.toFixed(3)}`,
    `broken tests called flaky: ${result.brokenCalledFlaky} at the end, ${result.brokenEverFlaky} at any point; quarantined broken tests: ${result.quarantinedBroken}`,
    `reaction (runs on main until flagged): median ${result.reaction.median}, p90 ${result.reaction.p90}, max ${result.reaction.max} (${result.reaction.flagged} of ${result.reaction.of} flaky tests flagged)`,
    `outage jobs not marked incidents: ${result.outagesMissed}; test healths an outage job changed: ${result.healthChangedByOutage}`,
  ].join('\n');
}
