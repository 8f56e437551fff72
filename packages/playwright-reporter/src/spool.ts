import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { TestCase, TestResult, TestStep } from '@playwright/test/reporter';
import { formatError } from './mapping.ts';

/**
 * THE SPOOL: where the reporter leaves the attempts it could not deliver because the server was
 * down (unreachable, 5xx, or still not done at the flush deadline), so that nothing a run found is
 * lost. Each run that lost something writes one file, `attest-spool-<time>-<id>.json`: a Playwright
 * JSON report (the same shape `reporter: [['json']]` writes, attachments inline as base64 `body`)
 * of those attempts, with where they were going in `config.metadata.attest`. So:
 *
 * - the next run of the reporter against the same server imports every spooled file
 *   (`POST /projects/{project}/imports`, idempotent by the file's name) and deletes it once accepted;
 * - `attest import <spool folder or file> --project WEB` imports them by hand, like any report.
 *
 * The folder is bounded (`maxSpoolBytes`, default 100 MB): a run that does not fit is spooled
 * without its attachments, and if even that does not fit, not at all (the summary says which).
 */

export const SPOOL_PREFIX = 'attest-spool-';

/** Where a spooled report was going: written into its `config.metadata.attest`; never the API key. */
export interface SpoolTarget {
  url: string;
  project: string;
  jobName: string;
  labels: Record<string, string>;
}

export interface SpooledAttempt {
  test: TestCase;
  result: TestResult;
}

export interface SpoolOutcome {
  file?: string;
  attempts: number;
  /** Attachments left out to stay within the bound. */
  attachmentsLeftOut: number;
  /** Why nothing was written, when nothing was. */
  refused?: string;
}

type Json = Record<string, unknown>;

/** Writes the attempts as one report into `dir`, within `maxBytes` for the whole folder. */
export function writeSpool(
  dir: string,
  maxBytes: number,
  target: SpoolTarget,
  projects: readonly string[],
  attempts: readonly SpooledAttempt[],
): SpoolOutcome {
  const attachments: { entry: Json; bytes: number }[] = [];
  const suites: Json[] = [];
  for (const { test, result } of attempts) {
    const spec = specOf(suites, test);
    const projectName = test.parent.project()?.name ?? '';
    const tests = spec.tests as Json[];
    let entry = tests.find((t) => t.projectName === projectName);
    if (!entry) {
      entry = { projectName, annotations: test.annotations, results: [] };
      tests.push(entry);
    }
    const serialized = resultOf(result);
    for (const attachment of serialized.attachments as Json[]) {
      attachments.push({ entry: attachment, bytes: typeof attachment.body === 'string' ? attachment.body.length : 0 });
    }
    (entry.results as Json[]).push(serialized);
  }
  const report = {
    config: { projects: projects.map((name) => ({ name })), metadata: { attest: target } },
    suites,
    errors: [],
    stats: { startTime: attempts[0]?.result.startTime.toISOString() ?? new Date().toISOString() },
  };
  const room = maxBytes - folderBytes(dir);
  let text = JSON.stringify(report);
  let leftOut = 0;
  // Too big: the largest attachments go first, the results stay.
  for (const attachment of attachments.sort((a, b) => b.bytes - a.bytes)) {
    if (Buffer.byteLength(text) <= room) break;
    if (attachment.entry.body === undefined) continue;
    delete attachment.entry.body;
    attachment.entry.name = `${String(attachment.entry.name)} (left out: the spool is full)`;
    leftOut++;
    text = JSON.stringify(report);
  }
  if (Buffer.byteLength(text) > room) {
    return { attempts: attempts.length, attachmentsLeftOut: 0, refused: `the spool folder ${dir} is full (${maxBytes} bytes)` };
  }
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${SPOOL_PREFIX}${new Date().toISOString().replace(/[:.]/g, '-')}-${randomUUID().slice(0, 8)}.json`);
  // Written whole or not at all: a half-written file would be a broken report for the next run.
  const partial = `${file}.partial`;
  fs.writeFileSync(partial, text);
  fs.renameSync(partial, file);
  return { file, attempts: attempts.length, attachmentsLeftOut: leftOut };
}

/** The spooled files waiting in `dir`, oldest first. */
export function spooledFiles(dir: string): string[] {
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return [];
  }
  return names
    .filter((name) => name.startsWith(SPOOL_PREFIX) && name.endsWith('.json'))
    .sort()
    .map((name) => path.join(dir, name));
}

/** A spooled file's target, or `undefined` when it is not one of ours (or unreadable). */
export function spoolTargetOf(text: string): SpoolTarget | undefined {
  try {
    const report = JSON.parse(text) as { config?: { metadata?: { attest?: SpoolTarget } } };
    const target = report.config?.metadata?.attest;
    return target && typeof target.url === 'string' && typeof target.project === 'string' ? target : undefined;
  } catch {
    return undefined;
  }
}

function folderBytes(dir: string): number {
  let total = 0;
  for (const file of spooledFiles(dir)) {
    try {
      total += fs.statSync(file).size;
    } catch {
      // Sent and deleted meanwhile by another run.
    }
  }
  return total;
}

/** The spec of a test in the report's suite tree (files, then describes), made on first use. */
function specOf(suites: Json[], test: TestCase): Json {
  // titlePath(): ['', project, file, ...describes, title].
  const path = test.titlePath().slice(2);
  const title = path.pop() ?? test.title;
  let level = suites;
  let suite: Json | undefined;
  for (const name of path) {
    suite = level.find((s) => s.title === name);
    if (!suite) {
      suite = { title: name, specs: [], suites: [] };
      level.push(suite);
    }
    level = suite.suites as Json[];
  }
  if (!suite) {
    suite = { title: '', specs: [], suites: [] };
    suites.push(suite);
  }
  const specs = suite.specs as Json[];
  let spec = specs.find((s) => s.title === title);
  if (!spec) {
    spec = { title, tests: [] };
    specs.push(spec);
  }
  return spec;
}

/** A result as Playwright's JSON reporter writes it, attachments inline. */
function resultOf(result: TestResult): Json {
  const stdio = (items: readonly (string | Buffer)[]) =>
    items.map((item) => (typeof item === 'string' ? { text: item } : { buffer: Buffer.from(item).toString('base64') }));
  return {
    status: result.status,
    retry: result.retry,
    startTime: result.startTime.toISOString(),
    duration: result.duration,
    errors: result.errors.map((error) => ({ message: formatError(error) })),
    stdout: stdio(result.stdout),
    stderr: stdio(result.stderr),
    annotations: result.annotations ?? [],
    steps: stepsOf(result.steps),
    attachments: result.attachments.flatMap((attachment) => {
      let body: Buffer | undefined = attachment.body;
      if (!body && attachment.path) {
        try {
          body = fs.readFileSync(attachment.path);
        } catch {
          return [];
        }
      }
      return body ? [{ name: attachment.name, contentType: attachment.contentType, body: body.toString('base64') }] : [];
    }),
  };
}

/** `test.step`s only, nested, as the JSON report keeps them. */
function stepsOf(steps: readonly TestStep[]): Json[] | undefined {
  const kept = steps.filter((step) => step.category === 'test.step');
  if (!kept.length) return undefined;
  return kept.map((step) => ({
    title: step.title,
    duration: step.duration,
    ...(step.error ? { error: { message: step.error.message, value: step.error.value } } : {}),
    steps: stepsOf(step.steps),
  }));
}
