import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { detectCi } from '@attest-hq/playwright-reporter/ci';
import type { Command } from 'commander';
import { zipSync } from 'fflate';
import type { Static } from 'typebox';
import { type AttestClient, v1 } from '../../client/index.ts';
import { CliError } from '../output.ts';
import { progressOf } from '../progress.ts';
import { explain, type RemoteOptions, remoteClient, remoteOptions } from '../remote.ts';

interface ImportOptions extends RemoteOptions {
  project: string;
  name?: string;
  format?: 'auto' | 'junit' | 'playwright';
  environment?: string;
  branch?: string;
  build?: string;
  commit?: string;
  idempotencyKey?: string;
  wait: boolean;
  json?: boolean;
  failOnFailures?: boolean;
}

type ImportRecord = Awaited<ReturnType<typeof readImport>>;
type ProgressMode = 'bar' | 'lines' | 'none';

/** Every file under a folder, by its path relative to it with / separators; hidden folders and node_modules are left out. */
function filesUnder(root: string): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        if (!entry.name.startsWith('.') && entry.name !== 'node_modules') walk(full);
      } else if (entry.isFile()) {
        found.push(path.relative(root, full).split(path.sep).join('/'));
      }
    }
  };
  walk(root);
  return found.sort();
}

/** The upload: a file as it is, or a folder packed into a ZIP with its attachments (a bar while packing). */
function packUpload(target: string, mode: ProgressMode): { name: string; bytes: Uint8Array } {
  const stat = fs.statSync(target, { throwIfNoEntry: false });
  if (!stat) throw new CliError(`${target} does not exist`);
  if (stat.isFile()) return { name: path.basename(target), bytes: fs.readFileSync(target) };
  const names = filesUnder(target);
  if (names.length === 0) throw new CliError(`${target} holds no files`);
  const bar = progressOf('packing', mode, ' files');
  const entries: Record<string, Uint8Array> = {};
  names.forEach((name, i) => {
    entries[name] = fs.readFileSync(path.join(target, name));
    bar.update(i + 1, names.length);
  });
  bar.stop();
  // Screenshots and videos are compressed already; level 6 still shrinks XML and JSON well. One
  // fixed time on every entry makes the ZIP depend on names and bytes only, so packing the same
  // folder again gives the same upload, and its SHA-256 the same default idempotency key.
  return { name: `${path.basename(path.resolve(target))}.zip`, bytes: zipSync(entries, { level: 6, mtime: '1980-01-01T00:00:00Z' }) };
}

const readImport = (client: AttestClient, projectId: string, importId: string) =>
  client.call(v1.imports.getImport, { params: { projectId, importId } });

/** Polls the import until it is finished, moving a bar over the runs written. */
async function awaitImport(client: AttestClient, first: ImportRecord, mode: ProgressMode): Promise<ImportRecord> {
  const bar = progressOf('importing', mode, ' runs');
  let record = first;
  try {
    while (record.status === 'queued' || record.status === 'processing') {
      if (record.progress.total !== null) bar.update(record.progress.done, record.progress.total);
      await new Promise((resolve) => setTimeout(resolve, 250));
      record = await readImport(client, first.projectId, first.id);
    }
    if (record.progress.total !== null) bar.update(record.progress.done, record.progress.total);
  } finally {
    bar.stop();
  }
  return record;
}

function describeImport(record: ImportRecord): string {
  const lines: string[] = [];
  const c = record.counts;
  if (record.status === 'failed') lines.push(`import ${record.id} failed: ${record.error ?? 'no reason given'}`);
  else if (!c) lines.push(`import ${record.id} is ${record.status}`);
  else {
    lines.push(
      `imported ${c.runs} runs of ${c.tests} tests (${c.testsCreated} new) from ${c.reports} report${c.reports === 1 ? '' : 's'} as job ${record.jobId}`,
      `  ${c.passed} passed, ${c.failed} failed, ${c.broken} broken, ${c.skipped} skipped; ${c.steps} steps, ${c.cells} cells, ${c.attachments} attachments`,
    );
  }
  for (const file of record.files) {
    for (const error of file.errors) lines.push(`  ${file.file}: ${error}`);
  }
  return `${lines.join('\n')}\n`;
}

/**
 * `--fail-on-failures` (TRIAGE-6): the job's tests that failed in the end, from its comparison (the
 * server folds retries and knows the quarantines); exit 1 unless every one is quarantined.
 */
async function judgeJob(client: AttestClient, jobId: string, json: boolean): Promise<void> {
  let comparison: Static<typeof v1.comparison.Comparison>;
  try {
    comparison = await client.call(v1.comparison.compareJobs, { params: { jobId }, query: {} });
  } catch (error) {
    explain(error);
  }
  const failing = [...comparison.newFailures, ...comparison.stillFailing];
  const quarantined = comparison.quarantined.filter((test) => test.verdict === 'failed' || test.verdict === 'broken');
  if (!json) {
    const lines = [
      ...failing.map((test) => `  failed: ${test.name}`),
      ...quarantined.map((test) => `  quarantined (not counted): ${test.name}`),
      failing.length > 0
        ? `${failing.length} test${failing.length === 1 ? '' : 's'} failed`
        : `no test failed${quarantined.length > 0 ? ` (${quarantined.length} quarantined)` : ''}`,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  }
  if (failing.length > 0) process.exitCode = 1;
}

export function importCommand(program: Command): void {
  remoteOptions(
    program
      .command('import')
      .description('import a JUnit XML file, a Playwright JSON report, a ZIP, or a folder of reports with their attachments, as one job')
      .argument('<path>', 'a report file (.xml, .json), a .zip, or a folder (packed into a ZIP with every file under it)')
      .requiredOption('-p, --project <key>', 'the project (key or id)')
      .option('--name <name>', "the job's name (default: the report's name, else the file's)")
      .option('--format <format>', 'auto, junit or playwright (default: auto, by content)')
      .option('--environment <name>', 'run label: where the tests ran')
      .option('--branch <name>', 'run label: the source branch (default: from the CI system, see docs/imports.md)')
      .option('--build <name>', 'run label: the build under test (default: the CI build number)')
      .option('--commit <sha>', 'run label: the commit under test (default: from the CI system)')
      .option(
        '--idempotency-key <key>',
        'retries and re-runs with this key answer the first import (default: the SHA-256 of the upload and options)',
      )
      .option('--no-wait', 'return once the import is accepted, without waiting for its job')
      .option(
        '--fail-on-failures',
        'exit 1 when a test of the job failed in the end (retries folded; a quarantined test never counts, and is printed as such)',
      )
      .option('--json', 'print the import as JSON on stdout; no progress bars'),
  ).action(importAction);
}

/** The job's fields: the options given, else what the CI system says about the build. */
function importFields(options: ImportOptions) {
  // GitHub Actions, GitLab CI, Jenkins, CircleCI, Azure Pipelines and Buildkite say which build this is.
  const ci = detectCi(process.env);
  return {
    name: options.name,
    format: options.format,
    environment: options.environment,
    branch: options.branch ?? ci?.branch,
    build: options.build ?? ci?.build,
    commit: options.commit ?? ci?.commit,
    ciUrl: ci?.ciUrl,
    // Read with `in`: the reporter package's built types this compiles against may predate the field.
    targetBranch: ci && 'targetBranch' in ci && typeof ci.targetBranch === 'string' ? ci.targetBranch : undefined,
  };
}

/** Uploads the report, waits for its job unless told not to, and prints what it became. */
async function importAction(target: string, options: ImportOptions): Promise<void> {
  const client = remoteClient(options);
  const mode: ProgressMode = options.json ? 'none' : process.stderr.isTTY ? 'bar' : 'lines';
  let record: ImportRecord;
  try {
    const project = await client.call(v1.projects.getProject, { params: { projectId: options.project } });
    const file = packUpload(target, mode);
    const fields = importFields(options);
    // The default key is the upload and its options: re-running the same command is the same import,
    // and the same file with another --branch is a new one.
    const key =
      options.idempotencyKey ??
      `sha256-${createHash('sha256').update(file.bytes).update(JSON.stringify(fields)).digest('hex').slice(0, 48)}`;
    const upload = progressOf('uploading', mode, ' bytes');
    const accepted = (await client.importReport(project.id, file, { ...fields, idempotencyKey: key }, (sent, total) =>
      upload.update(sent, total),
    )) as ImportRecord;
    upload.stop();
    record = options.wait ? await awaitImport(client, accepted, mode) : accepted;
  } catch (error) {
    explain(error);
  }
  if (options.json) process.stdout.write(`${JSON.stringify(record)}\n`);
  else process.stdout.write(describeImport(record));
  if (record.status === 'failed') process.exitCode = 1;
  else if (options.failOnFailures && options.wait && record.jobId) await judgeJob(client, record.jobId, options.json === true);
}
