import type { Static } from 'typebox';
import type { Job } from '../api/v1/jobs.ts';
import type { FailureGroup, Run, Step, Test } from './bundle.ts';
import { type ExportInput, type ExportSources, failingStep, type RunPart } from './files.ts';

export type JobAnswer = Static<typeof Job>;

/** How imports and reporters join the parts of a full name (file › describe › title). */
export const TITLE_SEPARATOR = ' › ';

/** One test of a report: its attempts in the order they started; the last one decides. */
export interface ReportTest {
  /** What makes runs attempts of one test: the test's id, else the run's own. */
  key: string;
  /** The test's own name, without the attempt a retry's run name carries. */
  name: string;
  /** The test's suite path: its full name without its own name (`account.spec.ts › Account`). */
  classname: string;
  /** The test's full name in its framework, or the run's name for a run without a test. */
  fullName: string;
  test: Test | null;
  /** Every attempt, oldest first; the final one is the last. */
  attempts: RunPart[];
  final: RunPart;
}

/** What every writer reads: a run export (one test, one attempt) or a job export (its tests, retries folded). */
export interface Report extends ExportSources {
  kind: 'run' | 'job';
  /** The run's or the job's id and name. */
  id: string;
  name: string;
  projectId: string;
  labels: { environment: string | null; branch: string | null; build: string | null; commit: string | null; device: string | null };
  startedAt: string | null;
  finishedAt: string | null;
  tests: ReportTest[];
  /** Every run, in the order they started. */
  parts: RunPart[];
}

/** A retry's run name (`flaky login (retry 1)`, as imports and the reporter name it) without the attempt. */
export function withoutAttempt(name: string): string {
  return name.replace(/ \(retry \d+\)$/, '');
}

const startOf = (run: Run) => run.startedAt ?? run.createdAt;
const byStart = (a: RunPart, b: RunPart) =>
  startOf(a.answers.run).localeCompare(startOf(b.answers.run)) || a.answers.run.createdAt.localeCompare(b.answers.run.createdAt);

function reportTest(attempts: RunPart[], fallbackSuite: string): ReportTest {
  const final = attempts.at(-1)!;
  const { run, test } = final.answers;
  const name = withoutAttempt(run.name);
  const fullName = test?.name ?? name;
  const parts = fullName.split(TITLE_SEPARATOR);
  const suffix = `${TITLE_SEPARATOR}${name}`;
  const classname = fullName.endsWith(suffix)
    ? fullName.slice(0, -suffix.length)
    : parts.length > 1
      ? parts.slice(0, -1).join(TITLE_SEPARATOR)
      : fallbackSuite;
  return { key: run.testId ?? run.id, name, classname: classname || fallbackSuite, fullName, test, attempts, final };
}

/** A run export as a report: one test, one attempt. */
export function runReport(input: ExportInput): Report {
  const { run } = input.answers;
  const part: RunPart = { answers: input.answers, images: input.images, attachments: input.attachments, folder: input.folder };
  return {
    kind: 'run',
    id: run.id,
    name: run.name,
    projectId: run.projectId,
    labels: { environment: run.environment, branch: run.branch, build: run.build, commit: run.commit, device: run.deviceId },
    startedAt: run.startedAt,
    finishedAt: run.finishedAt,
    tests: [reportTest([part], run.name)],
    parts: [part],
    bytes: input.bytes,
    attachmentBytes: input.attachmentBytes,
    exporter: input.exporter,
    ...(input.xrayProject ? { xrayProject: input.xrayProject } : {}),
  };
}

/**
 * A job export as a report: runs of the same test (its retries, or reruns) are one test whose
 * latest started attempt decides; a run without a test is a test of its own.
 */
export function jobReport(job: JobAnswer, parts: readonly RunPart[], sources: ExportSources): Report {
  const ordered = [...parts].sort(byStart);
  const groups = new Map<string, RunPart[]>();
  for (const part of ordered) {
    const key = part.answers.run.testId ?? part.answers.run.id;
    groups.set(key, [...(groups.get(key) ?? []), part]);
  }
  // ISO-8601 UTC times sort as text.
  const times = ordered
    .flatMap((part) => [part.answers.run.startedAt, part.answers.run.finishedAt])
    .filter((t): t is string => t !== null)
    .sort();
  return {
    kind: 'job',
    id: job.id,
    name: job.name,
    projectId: job.projectId,
    labels: { environment: job.environment, branch: job.branch, build: job.build, commit: job.commit, device: null },
    startedAt: job.startedAt ?? times[0] ?? null,
    finishedAt: job.finishedAt ?? times.at(-1) ?? null,
    tests: [...groups.values()].map((attempts) => reportTest(attempts, job.name)),
    parts: ordered,
    ...sources,
  };
}

/** Why a run failed or broke: the failing step's error, else the run's own `error` (or `failure`) cell. */
export interface Failure {
  /** One line. */
  message: string;
  /** What failed: the step's title, or the verdict. */
  type: string;
  /** The whole account: the step and its error, then the run's error text. */
  detail: string;
}

/** The failing step a failure points at: the first failed (or broken) step, then its first failing child, down to the innermost. */
function innermostFailing(steps: readonly Step[]): Step | undefined {
  let step = failingStep(steps);
  for (let child = step; child; ) {
    step = child;
    const parentId = child.id;
    child = failingStep(steps.filter((s) => s.parentId === parentId));
  }
  return step;
}

/** A run's failure, for a run whose verdict is failed or broken (and for earlier attempts that were). */
export function failureOf(part: RunPart): Failure | undefined {
  const { run } = part.answers;
  if (run.verdict !== 'failed' && run.verdict !== 'broken') return undefined;
  const { steps, cells } = part.answers.results.value;
  const step = innermostFailing(steps);
  // A failure outside any step (an expect after the last step, a timeout) is only in the run's cells.
  const cell = cells.find((c) => c.name === 'error') ?? cells.find((c) => c.name === 'failure');
  const firstLine = (text: string | null | undefined) =>
    text
      ?.split('\n')
      .map((line) => line.trim())
      .find((line) => line !== '');
  const message = firstLine(step?.error) ?? firstLine(cell?.text) ?? `The run ended ${run.verdict}.`;
  const stepText = step ? `Step ${steps.indexOf(step) + 1}: ${step.title}\n${step.error ?? ''}`.trimEnd() : '';
  const detail = [stepText, cell?.text ?? ''].filter((text) => text !== '').join('\n\n') || message;
  return { message, type: step?.title ?? run.verdict, detail };
}

/** The error group of a failed run, with its triage (docs/triage.md); undefined for a run that did not fail. */
export function failureGroupOf(part: RunPart): FailureGroup | undefined {
  const { run, failures } = part.answers;
  return run.failureGroupId === null ? undefined : failures.find((group) => group.id === run.failureGroupId);
}

/** How a defect type reads in a report (ReportPortal's names). */
export const DEFECT_TYPE_NAMES: Record<FailureGroup['defectType'], string> = {
  product_bug: 'Product bug',
  automation_bug: 'Automation bug',
  system_issue: 'System issue',
  no_defect: 'No defect',
  to_investigate: 'To investigate',
};

/** Counts of a report's tests by their final verdict, and how many passed only on a retry. */
export function countsOf(report: Report) {
  const counts = { tests: report.tests.length, failures: 0, errors: 0, skipped: 0, passed: 0, flaky: 0 };
  for (const test of report.tests) {
    const verdict = test.final.answers.run.verdict;
    if (verdict === 'failed') counts.failures++;
    else if (verdict === 'broken') counts.errors++;
    else if (verdict === 'skipped') counts.skipped++;
    else if (verdict === 'passed') {
      counts.passed++;
      if (test.attempts.some((a) => a.answers.run.verdict === 'failed' || a.answers.run.verdict === 'broken')) counts.flaky++;
    }
  }
  return counts;
}
