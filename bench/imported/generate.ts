import sharp from 'sharp';
import { prng } from '../prng.ts';

// The import-path set (SCALE-8, docs/performance.md "The import-path set"): what teams send, as
// JUnit XML files to POST /projects/{id}/imports, reproducibly from a seed. Unlike the scale set
// (bench/scale/generate.ts, rows written straight into the tables), nothing here touches a
// database: the files are posted by fill.ts and the server records them as it records any import.
//
// One job per import. Every 20th import (the first included) is a nightly of the project's whole
// suite (at most NIGHTLY_MAX cases: a project with more tests runs its nightlies over blocks of
// that size in turn) on `main`; the others are CI jobs of 20–200 consecutive tests on one of 20
// branches (`main` 40%). About one run in seven fails, from CAUSES (so failure groups form); a
// failed case is rerun once in three (a second <testcase> of the same name, which the JUnit reader
// makes attempt 1), and the rerun passes half the time; half the failed attempts carry a
// screenshot (`[[ATTACHMENT|shots/…]]`, one of SCREENSHOTS distinct PNGs, sent in a ZIP with the
// report).

export const NIGHTLY_EVERY = 20;
export const NIGHTLY_MAX = 5000;
export const CI_MIN = 20;
export const CI_MAX = 200;
export const BRANCHES = ['main', ...Array.from({ length: 19 }, (_, i) => `feature/f${i + 1}`)];
export const MAIN_SHARE = 0.4;
/** A first attempt fails this often; with the reruns, about one run in seven is failed. */
export const FAIL_SHARE = 0.125;
export const RERUN_SHARE = 1 / 3;
export const SCREENSHOT_SHARE = 0.5;
export const SCREENSHOTS = 40;
const ENVIRONMENTS = ['staging', 'qa', 'production'];
const SPAN_MS = 60 * 86_400_000;

/** Recurring causes: the same few messages and stacks, with the parts that vary between runs (ports, ids). */
const CAUSES: { type: string; message: (n: number) => string; frames: string[] }[] = [
  { type: 'AssertionError', message: () => 'expected status 200 but was 503', frames: ['CheckoutClient.post(CheckoutClient.java:88)'] },
  {
    type: 'TimeoutError',
    message: (n) => `Timeout 30000ms exceeded waiting for selector "#pay-button" (attempt ${n % 5})`,
    frames: ['PaymentPage.pay(PaymentPage.java:41)'],
  },
  {
    type: 'NullPointerException',
    message: () => 'Cannot invoke "Cart.total()" because "cart" is null',
    frames: ['CartService.total(CartService.java:120)'],
  },
  {
    type: 'AssertionError',
    message: (n) => `expected 3 items in the cart but found ${n % 3}`,
    frames: ['CartTest.check(CartTest.java:57)'],
  },
  {
    type: 'ConnectException',
    message: (n) => `Connection refused: localhost:${30000 + (n % 2000)}`,
    frames: ['HttpClient.connect(HttpClient.java:302)'],
  },
  {
    type: 'StaleElementReferenceException',
    message: () => 'element is not attached to the page document',
    frames: ['SearchPage.results(SearchPage.java:73)'],
  },
  { type: 'AssertionError', message: () => 'expected price 19.99 but was 21.99', frames: ['PriceTest.total(PriceTest.java:33)'] },
  {
    type: 'SQLTransactionRollbackException',
    message: (n) => `Deadlock found when trying to get lock; transaction ${100000 + n}`,
    frames: ['OrderRepository.save(OrderRepository.java:210)'],
  },
];
const COMMON_FRAMES = ['org.junit.runners.ParentRunner.run(ParentRunner.java:413)', 'java.base/java.lang.Thread.run(Thread.java:1583)'];

export interface Attempt {
  verdict: 'passed' | 'failed';
  cause?: number;
  screenshot?: number;
}
export interface Case {
  test: number;
  attempts: Attempt[];
}

export interface PlannedImport {
  index: number;
  kind: 'nightly' | 'ci';
  branch: string;
  /** The first test of the job's consecutive run of tests (wrapping), and how many. */
  first: number;
  size: number;
  /** When the job ran: its suites' timestamp. */
  at: Date;
  runs: number;
  failed: number;
  screenshots: number;
}

export interface ImportSetPlan {
  seed: number;
  /** The project's tests: at least a nightly's worth, about 50 runs each once the set is big enough. */
  tests: number;
  nightlySize: number;
  imports: PlannedImport[];
  counts: { runs: number; failed: number; reruns: number; screenshots: number; jobs: number; nightlies: number };
}

/** Tests of a project of `runs` runs: about 50 runs per test, but never fewer than a nightly (up to 5,000) or 200. */
export function testsFor(runs: number): number {
  return Math.max(200, Math.round(runs / 50), Math.min(NIGHTLY_MAX, Math.round(runs / 20)));
}

/** The cases of one import, from its own seed, so a file is made the same way when planned and when posted. */
export function casesOf(plan: Pick<ImportSetPlan, 'seed' | 'tests'>, planned: Pick<PlannedImport, 'index' | 'first' | 'size'>): Case[] {
  const random = prng(plan.seed * 1_000_003 + planned.index);
  const cases: Case[] = [];
  for (let k = 0; k < planned.size; k++) {
    const test = (planned.first + k) % plan.tests;
    if (random.next() >= FAIL_SHARE) {
      cases.push({ test, attempts: [{ verdict: 'passed' }] });
      continue;
    }
    // Most of a test's failures have its own cause; the rest any cause (an outage, a shared fixture).
    const failedAttempt = (): Attempt => ({
      verdict: 'failed',
      cause: random.next() < 0.7 ? test % CAUSES.length : random.int(CAUSES.length),
      ...(random.next() < SCREENSHOT_SHARE ? { screenshot: random.int(SCREENSHOTS) } : {}),
    });
    const attempts = [failedAttempt()];
    if (random.next() < RERUN_SHARE) attempts.push(random.next() < 0.5 ? { verdict: 'passed' } : failedAttempt());
    cases.push({ test, attempts });
  }
  return cases;
}

/** The next import's job: a nightly every NIGHTLY_EVERY imports, else a CI job on a branch. */
function nextImport(plan: Pick<ImportSetPlan, 'tests' | 'nightlySize'>, index: number, random: ReturnType<typeof prng>) {
  if (index % NIGHTLY_EVERY === 0) {
    const blocks = Math.ceil(plan.tests / plan.nightlySize);
    const block = (index / NIGHTLY_EVERY) % blocks;
    return { kind: 'nightly' as const, branch: 'main', first: block * plan.nightlySize, size: plan.nightlySize };
  }
  const branch = random.next() < MAIN_SHARE ? 'main' : (BRANCHES[1 + random.int(BRANCHES.length - 1)] as string);
  const size = Math.min(plan.tests, CI_MIN + random.int(CI_MAX - CI_MIN + 1));
  return { kind: 'ci' as const, branch, first: random.int(plan.tests), size };
}

/**
 * The imports that fill a project to about `runs` runs (the last one cut to fit), oldest first,
 * spread over the 60 days before `endsAt`.
 */
export function planImportSet(options: { runs: number; seed?: number; endsAt?: Date }): ImportSetPlan {
  const seed = options.seed ?? 7;
  const tests = testsFor(options.runs);
  const plan: ImportSetPlan = {
    seed,
    tests,
    nightlySize: Math.min(NIGHTLY_MAX, tests),
    imports: [],
    counts: { runs: 0, failed: 0, reruns: 0, screenshots: 0, jobs: 0, nightlies: 0 },
  };
  const random = prng(seed);
  for (let index = 0; plan.counts.runs < options.runs; index++) {
    const next = nextImport(plan, index, random);
    // Cases are about runs (a rerun is one more): the last import is cut to the runs still wanted.
    const planned = { index, ...next, size: Math.min(next.size, Math.max(1, options.runs - plan.counts.runs)) };
    const cases = casesOf(plan, planned);
    const attempts = cases.flatMap((c) => c.attempts);
    const row: PlannedImport = {
      ...planned,
      at: new Date(0),
      runs: attempts.length,
      failed: attempts.filter((a) => a.verdict === 'failed').length,
      screenshots: attempts.filter((a) => a.screenshot !== undefined).length,
    };
    plan.imports.push(row);
    plan.counts.runs += row.runs;
    plan.counts.failed += row.failed;
    plan.counts.reruns += row.runs - cases.length;
    plan.counts.screenshots += row.screenshots;
    plan.counts.nightlies += row.kind === 'nightly' ? 1 : 0;
  }
  plan.counts.jobs = plan.imports.length;
  const ends = (options.endsAt ?? new Date()).getTime();
  const gap = SPAN_MS / plan.imports.length;
  for (const row of plan.imports) row.at = new Date(ends - (plan.imports.length - row.index) * gap);
  return plan;
}

const xmlEscaped = (text: string) =>
  text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;');
const SUITE_SIZE = 100;
const suiteOf = (test: number) => `com.acme.shop.Suite${String(Math.floor(test / SUITE_SIZE)).padStart(3, '0')}`;
export const testNameOf = (test: number) => `${suiteOf(test)} › case ${test % SUITE_SIZE}`;
export const screenshotPath = (n: number) => `shots/failure-${n}.png`;

function caseXml(c: Case, n: number): string {
  const name = `case ${c.test % SUITE_SIZE}`;
  return c.attempts
    .map((attempt, i) => {
      const time = `time="${((c.test % 97) / 100 + 0.05).toFixed(3)}"`;
      if (attempt.verdict === 'passed')
        return `<testcase classname="${suiteOf(c.test)}" name="${name}" ${time}><system-out>${name} ran</system-out></testcase>`;
      const cause = CAUSES[attempt.cause as number] as (typeof CAUSES)[number];
      const message = cause.message(n + i);
      const stack = [`${cause.type}: ${message}`, ...[...cause.frames, ...COMMON_FRAMES].map((f) => `    at ${f}`)].join('\n');
      const shot = attempt.screenshot === undefined ? '' : `\n[[ATTACHMENT|${screenshotPath(attempt.screenshot)}]]`;
      return (
        `<testcase classname="${suiteOf(c.test)}" name="${name}" ${time}>` +
        `<failure message="${xmlEscaped(message)}" type="${cause.type}">${xmlEscaped(stack)}</failure>` +
        `<system-out>${name} ran${shot}</system-out></testcase>`
      );
    })
    .join('');
}

/** One import's JUnit XML (suites of up to 100 cases), and the screenshots it names. */
export function reportOf(plan: Pick<ImportSetPlan, 'seed' | 'tests'>, planned: PlannedImport): { xml: Buffer; screenshots: number[] } {
  const cases = casesOf(plan, planned);
  const suites = new Map<string, string[]>();
  const screenshots = new Set<number>();
  cases.forEach((c, n) => {
    const suite = suiteOf(c.test);
    suites.set(suite, [...(suites.get(suite) ?? []), caseXml(c, planned.index * 7919 + n)]);
    for (const attempt of c.attempts) if (attempt.screenshot !== undefined) screenshots.add(attempt.screenshot);
  });
  const stamp = planned.at.toISOString().slice(0, 19);
  const body = [...suites.entries()]
    .map(([name, xml]) => `<testsuite name="${name}" tests="${xml.length}" timestamp="${stamp}">${xml.join('')}</testsuite>`)
    .join('');
  return {
    xml: Buffer.from(`<?xml version="1.0" encoding="UTF-8"?><testsuites name="${jobNameOf(planned)}">${body}</testsuites>`),
    screenshots: [...screenshots].sort((a, b) => a - b),
  };
}

export const jobNameOf = (planned: Pick<PlannedImport, 'index' | 'kind' | 'branch'>) =>
  planned.kind === 'nightly' ? `nightly #${planned.index + 1}` : `ci ${planned.branch} #${planned.index + 1}`;

/** The options an import is sent with: branch, environment, build and commit, as a CI step sets them. */
export function optionsOf(plan: Pick<ImportSetPlan, 'seed'>, planned: PlannedImport): Record<string, string> {
  const random = prng(plan.seed * 31 + planned.index);
  const commit = Array.from({ length: 5 }, () =>
    random
      .int(2 ** 32)
      .toString(16)
      .padStart(8, '0'),
  ).join('');
  return {
    name: jobNameOf(planned),
    branch: planned.branch,
    environment: ENVIRONMENTS[random.int(ENVIRONMENTS.length)] as string,
    build: String(planned.index + 1),
    commit,
  };
}

/** The SCREENSHOTS distinct small PNGs (48 × 32, seeded pixels), real images the server checks and stores. */
export async function screenshotPngs(seed = 7): Promise<Buffer[]> {
  return Promise.all(
    Array.from({ length: SCREENSHOTS }, (_, n) => {
      const random = prng(seed * 977 + n);
      const pixels = Buffer.alloc(48 * 32 * 3);
      for (let i = 0; i < pixels.length; i++) pixels[i] = random.int(256);
      return sharp(pixels, { raw: { width: 48, height: 32, channels: 3 } })
        .png()
        .toBuffer();
    }),
  );
}
