/**
 * One `<testcase>` → one ImportedCase with exactly one step. What a testcase says about its
 * outcome (failure, error, skipped, Surefire's flaky and rerun elements), its properties and its
 * output all land on that step; the case itself carries the verdict, labels and timing.
 */

import { attachmentFor, cell, cleanOutput, firstLine, secondsToMs, takeAttachmentLines, trimBlankEdges } from './junit-values.ts';
import type { XmlElement } from './junit-xml.ts';
import type { ImportedAttachment, ImportedCase, ImportedCell, Verdict } from './model.ts';

/** What the enclosing suites contribute to a case. */
export interface CaseContext {
  /** The names of the enclosing `<testsuite>` elements, outermost first. */
  suites: string[];
  /** Suite properties (inner suites override outer ones). */
  labels: Record<string, string>;
  /** Where the next case in this suite starts (ms since epoch), when the suite has a timestamp. */
  clock?: { ms: number };
  /** Run-level cells to put on this case (a suite's own output, given to its first case). */
  runCells: ImportedCell[];
}

export const UNNAMED = '(unnamed)';

// node's junit reporter writes classname="test" on every case: it names nothing.
const PLACEHOLDER_CLASSNAMES = new Set(['test']);

/**
 * A case's identity, its parts joined with ` › `:
 * 1. the enclosing suite names, only when suites nest (a single suite is usually the file or class
 *    the classname repeats) or when there is no classname;
 * 2. the classname, unless absent, node's placeholder `test`, the same as the innermost suite
 *    name, or already the start or end of the case name (jest-junit, mocha-junit-reporter);
 * 3. the case name.
 */
export function fullNameOf(suites: string[], classname: string | undefined, name: string): string {
  const cls = classname?.trim() && !PLACEHOLDER_CLASSNAMES.has(classname.trim()) ? classname.trim() : undefined;
  const parts = suites.length > 1 || !cls ? [...suites] : [];
  if (cls && cls !== parts.at(-1) && !name.startsWith(cls) && !name.endsWith(cls)) parts.push(cls);
  parts.push(name);
  return parts.join(' › ');
}

/**
 * Where a case is filed: the names of its enclosing suites, outermost first; without any, its
 * classname's dotted parts (`com.acme.CheckoutTest` → com/acme/CheckoutTest). Node's placeholder
 * classname names nothing.
 */
export function suiteOf(suites: string[], classname: string | undefined): string[] {
  const named = suites.map((s) => s.trim()).filter((s) => s !== '' && s !== UNNAMED);
  if (named.length > 0) return named;
  const cls = classname?.trim();
  if (!cls || PLACEHOLDER_CLASSNAMES.has(cls)) return [];
  return cls.split('.').filter(Boolean);
}

export function buildCase(el: XmlElement, context: CaseContext): ImportedCase {
  const name = el.attrs.get('name')?.trim() || UNNAMED;
  const durationMs = secondsToMs(el.attrs.get('time'));
  const startedAt = context.clock ? new Date(context.clock.ms).toISOString() : undefined;
  // Cases are assumed to run back to back from the suite's timestamp: an approximation.
  if (context.clock && durationMs !== undefined) context.clock.ms += durationMs;

  const outcome = readOutcome(el);
  const properties = readProperties(el);
  const stdout = readOutput(el, 'system-out');
  const stderr = readOutput(el, 'system-err');
  const attachments = uniqueAttachments([...properties.attachmentPaths, ...stdout.paths, ...stderr.paths]);
  const step = {
    title: name,
    status: outcome.verdict,
    startedAt,
    durationMs,
    error: outcome.error,
    cells: [...outcome.cells, ...cell('stdout', stdout.text), ...cell('stderr', stderr.text)],
    attachments,
    steps: [],
  };
  return {
    fullName: fullNameOf(context.suites, el.attrs.get('classname'), name),
    name,
    suite: suiteOf(context.suites, el.attrs.get('classname')),
    verdict: outcome.verdict,
    startedAt,
    durationMs,
    attempt: 0,
    labels: { ...context.labels, ...locationLabels(el), ...properties.labels },
    cells: context.runCells,
    attachments: [],
    steps: [step],
  };
}

/**
 * Surefire's reruns as the attempts they were (TRIAGE-11): a `<flakyFailure>` or `<flakyError>` is an
 * attempt that failed (or broke) before the case passed, a `<rerunFailure>` or `<rerunError>` one
 * that failed before the final attempt failed too. Each is a case of its own, failed with that
 * element's message, listed before the case itself: the report's order numbers the attempts, so the
 * case stays the final attempt and a flaky rerun folds into `flaky` (TRIAGE-5).
 */
export function rerunAttempts(el: XmlElement, context: CaseContext): ImportedCase[] {
  const name = el.attrs.get('name')?.trim() || UNNAMED;
  const labels = { ...context.labels, ...locationLabels(el), ...readProperties(el).labels };
  return childrenNamed(el, 'flakyFailure', 'flakyError', 'rerunFailure', 'rerunError').map((rerun) => {
    const verdict: Verdict = rerun.name.endsWith('Error') ? 'broken' : 'failed';
    const error = rerun.attrs.get('message')?.trim() || firstLine(rerunText(rerun)) || undefined;
    const cells = cell(verdict === 'broken' ? 'error' : 'failure', rerunText(rerun));
    return {
      fullName: fullNameOf(context.suites, el.attrs.get('classname'), name),
      name,
      suite: suiteOf(context.suites, el.attrs.get('classname')),
      verdict,
      attempt: 0,
      labels,
      cells: [],
      attachments: [],
      steps: [{ title: name, status: verdict, error, cells, attachments: [], steps: [] }],
    };
  });
}

function childrenNamed(el: XmlElement, ...names: string[]): XmlElement[] {
  return el.children.filter((child) => names.includes(child.name));
}

interface Outcome {
  verdict: Verdict;
  error?: string;
  cells: ImportedCell[];
}

/** failure → failed, else error → broken, else skipped → skipped, else passed (flaky reruns that passed included). */
function readOutcome(el: XmlElement): Outcome {
  const failures = childrenNamed(el, 'failure');
  const errors = childrenNamed(el, 'error');
  const skipped = childrenNamed(el, 'skipped');
  const verdict: Verdict = failures.length ? 'failed' : errors.length ? 'broken' : skipped.length ? 'skipped' : 'passed';
  const decisive = failures[0] ?? errors[0];
  const cells = [
    ...cell('failure', failures.map(problemText).join('\n\n')),
    ...cell('error', errors.map(problemText).join('\n\n')),
    ...cell('skipped', skipped.map(skipText).join('\n\n')),
    ...cell('flaky', childrenNamed(el, 'flakyFailure', 'flakyError').map(rerunText).join('\n\n')),
    ...cell('rerun', childrenNamed(el, 'rerunFailure', 'rerunError').map(rerunText).join('\n\n')),
  ];
  const error = decisive ? decisive.attrs.get('message')?.trim() || firstLine(decisive.text) : undefined;
  return { verdict, error, cells };
}

function header(el: XmlElement): string {
  return [el.attrs.get('type')?.trim(), el.attrs.get('message')?.trim()].filter(Boolean).join(': ');
}

/** `type: message` then the body (the stack); the header is left out when the body already repeats the message. */
function problemText(el: XmlElement): string {
  const body = trimBlankEdges(el.text);
  const message = el.attrs.get('message')?.trim();
  const head = header(el);
  if (!head) return body;
  if (message && body.includes(message)) return body;
  return body ? `${head}\n${body}` : head;
}

function skipText(el: XmlElement): string {
  const parts = [el.attrs.get('message')?.trim(), trimBlankEdges(el.text)].filter((part): part is string => !!part);
  return [...new Set(parts)].join('\n');
}

/** Surefire's flaky/rerun elements: `type: message`, the `stackTrace`, and that attempt's output. */
function rerunText(el: XmlElement): string {
  const stack = childrenNamed(el, 'stackTrace').map((child) => trimBlankEdges(child.text));
  const output = (tag: string, label: string) =>
    childrenNamed(el, tag)
      .map((child) => trimBlankEdges(child.text))
      .filter(Boolean)
      .map((text) => `${label}:\n${text}`);
  const body = [trimBlankEdges(el.text), ...stack].filter(Boolean);
  return [header(el), ...body, ...output('system-out', 'stdout'), ...output('system-err', 'stderr')].filter(Boolean).join('\n');
}

interface Properties {
  labels: Record<string, string>;
  attachmentPaths: string[];
}

/** `<properties><property name value/>` (or the value as text content); `attachment` ones are attachments. */
export function readProperties(el: XmlElement): Properties {
  const labels: Record<string, string> = {};
  const attachmentPaths: string[] = [];
  for (const property of childrenNamed(el, 'properties').flatMap((group) => childrenNamed(group, 'property'))) {
    const name = property.attrs.get('name')?.trim();
    if (!name) continue;
    const value = property.attrs.get('value') ?? property.text.trim();
    if (name.toLowerCase() === 'attachment') {
      if (value.trim()) attachmentPaths.push(value.trim());
    } else {
      labels[name] = value;
    }
  }
  return { labels, attachmentPaths };
}

/** The text of every `system-out` (or `system-err`) child with its attachment lines taken out, then cleaned. */
export function readOutput(el: XmlElement, tag: 'system-out' | 'system-err'): { text: string; paths: string[] } {
  const paths: string[] = [];
  const texts = childrenNamed(el, tag).map((child) => {
    const taken = takeAttachmentLines(child.text);
    paths.push(...taken.paths);
    return cleanOutput(taken.text);
  });
  return { text: texts.filter(Boolean).join('\n'), paths };
}

function locationLabels(el: XmlElement): Record<string, string> {
  const labels: Record<string, string> = {};
  const file = el.attrs.get('file')?.trim();
  const line = el.attrs.get('line')?.trim();
  if (file) labels.file = file;
  if (line && /^\d+$/.test(line)) labels.line = line;
  return labels;
}

function uniqueAttachments(paths: string[]): ImportedAttachment[] {
  return [...new Set(paths)].map(attachmentFor);
}
