import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { zipSync } from 'fflate';
import sharp from 'sharp';
import { CI_MARKERS } from '../../packages/playwright-reporter/src/ci.ts';
import { type AttestClient, v1 } from '../../src/client/index.ts';
import type { ImportedAttachment, ImportedCase, ImportedStep } from '../../src/import/model.ts';
import { sha256 } from './blob-files.ts';
import { tempDir } from './data-folders.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** The fixture project: passing, failing (in nested steps), skipped and flaky tests, screenshots (test/fixtures/playwright). */
export const PLAYWRIGHT_CONFIG = path.join(ROOT, 'test/fixtures/playwright/playwright.config.ts');
/** A failing `toHaveScreenshot` in nested steps, a passing test and a skip with a reason (test/fixtures/playwright-visual). */
export const PLAYWRIGHT_VISUAL_CONFIG = path.join(ROOT, 'test/fixtures/playwright-visual/playwright.config.ts');
/** The live reporter from the workspace's TypeScript source (the package name resolves to its build, which tests do not make). */
export const REPORTER_SOURCE = path.join(ROOT, 'packages/playwright-reporter/src/index.ts');
const PLAYWRIGHT_CLI = path.join(ROOT, 'node_modules/@playwright/test/cli.js');

export interface PlaywrightRun {
  /** Everything the run wrote: `report.json` and `test-results/` (the attachments the report names by absolute path). */
  outDir: string;
  reportPath: string;
  /** Playwright's exit code: 1, because the fixture has a failing test. */
  code: number | null;
  stdout: string;
  stderr: string;
  output: string;
  durationMs: number;
}

/** Variables of the live reporter that must not leak in from the shell running the tests. */
const REPORTER_VARIABLES = [
  'ATTEST_URL',
  'ATTEST_API_KEY',
  'ATTEST_USER',
  'ATTEST_PROJECT',
  'ATTEST_JOB_NAME',
  'ATTEST_FLUSH_TIMEOUT_MS',
  'ATTEST_SPOOL_DIR',
  'ATTEST_JOB_ID_FILE',
  'ATTEST_PW_REPORTER',
  'GITHUB_OUTPUT',
  'GITHUB_STEP_SUMMARY',
];

/**
 * Runs the fixture project once with Debian's Chromium (never a downloaded browser) into a new temp
 * folder. `env` adds variables: `ATTEST_URL` and friends turn the live reporter on for the same run
 * whose JSON report lands in `reportPath`, so a test can compare the two (or import the report).
 */
export async function runPlaywrightFixture(
  env: Record<string, string> = {},
  options: { config?: string; prepare?: (outDir: string) => Promise<void> } = {},
): Promise<PlaywrightRun> {
  const outDir = tempDir('attest-playwright-');
  await options.prepare?.(outDir);
  const inherited = { ...process.env };
  // The reporter's settings, and the CI system's own variables (the reporter reads branch, commit and build from them).
  for (const name of [...REPORTER_VARIABLES, ...CI_MARKERS]) delete inherited[name];
  const started = Date.now();
  const child = spawn(process.execPath, [PLAYWRIGHT_CLI, 'test', '-c', options.config ?? PLAYWRIGHT_CONFIG], {
    cwd: ROOT,
    env: {
      ...inherited,
      PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD: '1',
      FORCE_COLOR: '0',
      ATTEST_PW_OUT: outDir,
      // Never the default beside the fixture's configuration, inside the checkout.
      ATTEST_SPOOL_DIR: tempDir('attest-spool-'),
      ATTEST_JOB_ID_FILE: path.join(outDir, '.attest-job'),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk;
    output += chunk;
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk;
    output += chunk;
  });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', resolve);
  });
  const reportPath = path.join(outDir, 'report.json');
  if (!fs.existsSync(reportPath)) throw new Error(`Playwright wrote no report (exit ${code}):\n${output}`);
  return { outDir, reportPath, code, stdout, stderr, output, durationMs: Date.now() - started };
}

/** The visual fixture's baseline: the badge in another colour, so its `toHaveScreenshot` fails (pass as `prepare`). */
export async function writeBadgeBaseline(outDir: string): Promise<void> {
  fs.mkdirSync(path.join(outDir, 'snapshots'), { recursive: true });
  await sharp({ create: { width: 40, height: 20, channels: 3, background: '#cc2200' } })
    .png()
    .toFile(path.join(outDir, 'snapshots', 'badge.png'));
}

/** The JSON report, as Playwright wrote it. */
/** A run's output folder as a CI job would archive it (report.json, test-results/), by path relative to it. */
export function zipFolder(dir: string): Uint8Array {
  const entries: Record<string, Uint8Array> = {};
  const walk = (at: string) => {
    for (const entry of fs.readdirSync(at, { withFileTypes: true })) {
      const full = path.join(at, entry.name);
      if (entry.isDirectory()) walk(full);
      else entries[path.relative(dir, full).split(path.sep).join('/')] = fs.readFileSync(full);
    }
  };
  walk(dir);
  return zipSync(entries);
}

export function readPlaywrightReport(run: PlaywrightRun): PlaywrightReport {
  return JSON.parse(fs.readFileSync(run.reportPath, 'utf8')) as PlaywrightReport;
}

/** The parts of Playwright's JSON report the tests look at. */
export interface PlaywrightReport {
  config: { projects: unknown[] };
  suites: PlaywrightSuite[];
}
export interface PlaywrightSuite {
  title: string;
  suites?: PlaywrightSuite[];
  specs: { title: string; tests: { projectName: string; results: PlaywrightResult[] }[] }[];
}
export interface PlaywrightStep {
  title: string;
  duration: number;
  error?: { message?: string };
  steps?: PlaywrightStep[];
}
export interface PlaywrightResult {
  status: string;
  retry: number;
  steps?: PlaywrightStep[];
  attachments: { name: string; contentType: string; path?: string; body?: string }[];
}

/**
 * A run reduced to what the live reporter and the import must agree on: name, verdict, the step
 * tree (title, status, error, the attachments on each step), run-level cells and attachments.
 * Attachments are `kind name sha256`, so the same bytes compare equal wherever they came from.
 */
export interface RunShape {
  name: string;
  verdict: string | null;
  cells: { name: string; text: string }[];
  attachments: string[];
  steps: StepShape[];
}
export interface StepShape {
  title: string;
  status: string;
  error?: string;
  attachments: string[];
  steps: StepShape[];
}

const attachmentLabel = (kind: string, name: string, sha256: string) => `${kind} ${name} ${sha256}`;

/** The shape of a case the import parser read (attachment bytes from `body` or the file at `path`). */
export function importedCaseShape(c: ImportedCase): RunShape {
  const label = (a: ImportedAttachment) => attachmentLabel(a.kind, a.name, sha256(a.body ? Buffer.from(a.body) : fs.readFileSync(a.path!)));
  const step = (s: ImportedStep): StepShape => ({
    title: s.title,
    status: s.status,
    ...(s.error !== undefined ? { error: s.error } : {}),
    attachments: s.attachments.map(label).sort(),
    steps: s.steps.map(step),
  });
  return {
    name: c.name,
    verdict: c.verdict,
    cells: c.cells.map(({ name, text }) => ({ name, text })),
    attachments: c.attachments.map(label).sort(),
    steps: c.steps.map(step),
  };
}

/** The shape of a run as the API answers it: its results (steps nested by `parentId`) and artifacts. */
export async function serverRunShape(client: AttestClient, projectId: string, runId: string): Promise<RunShape> {
  const run = await client.call(v1.runs.getRun, { params: { testRunId: runId } });
  const results = await client.call(v1.results.getResults, { params: { testRunId: runId }, query: { partial: true } });
  const artifacts = await client.call(v1.artifacts.listArtifacts, { params: { projectId }, query: { testRunId: runId } });
  const onStep = (stepId: string | null) =>
    artifacts.items
      .filter((a) => a.stepId === stepId)
      .map((a) => attachmentLabel(a.kind, a.name, a.sha256))
      .sort();
  const children = (parentId: string | null): StepShape[] =>
    results.steps
      .filter((s) => s.parentId === parentId)
      .map((s) => ({
        title: s.title,
        status: s.status,
        ...(s.error !== null ? { error: s.error } : {}),
        attachments: onStep(s.id),
        steps: children(s.id),
      }));
  return {
    name: run.name,
    verdict: run.verdict,
    cells: results.cells.map(({ name, text }) => ({ name, text })),
    attachments: onStep(null),
    steps: children(null),
  };
}

/** Uploads a report ZIP with `importReport` and polls it every 50 ms until it is neither queued nor processing; answers the import's record. */
export async function importSettled(
  client: AttestClient,
  projectId: string,
  file: { name: string; bytes: Uint8Array },
  options: Record<string, string>,
) {
  const accepted = await client.importReport(projectId, file, options);
  let record = await client.call(v1.imports.getImport, { params: { projectId, importId: String(accepted.id) } });
  while (record.status === 'queued' || record.status === 'processing') {
    await new Promise((resolve) => setTimeout(resolve, 50));
    record = await client.call(v1.imports.getImport, { params: { projectId, importId: record.id } });
  }
  return record;
}
