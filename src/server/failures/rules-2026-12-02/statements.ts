// Frozen on 2026-12-02, with migrations 2026-12-02-0027-failure-targets and
// 2026-12-02-0029-merge-equal-groups, which re-fingerprint stored failures by these rules: never
// edited, so that what those migrations did never changes (see ./README.md). Until a rule changes,
// the live normaliser (../) uses these files too.

/**
 * What the normaliser reads of a failure (`LIMITS`), the lines of its message that state it, the
 * restatement a JUnit body holds of a one-line message, and how the fingerprint is made.
 */

import { createHash } from 'node:crypto';
import { type Frame, parseFrame, projectFrames } from './frames.ts';
import { placeholders, stripAnsi, withoutReceived } from './placeholders.ts';
import { targetOf } from './targets.ts';

/** What the normaliser looks at, and what it keeps. */
export const LIMITS = {
  /** Characters of the message read, from its start (the statement of a failure comes first). */
  messageChars: 8192,
  /** Characters of the trace read from its start, and from its end (Python prints the innermost frame last). */
  traceHeadChars: 16_384,
  traceTailChars: 4096,
  /** Lines of the message kept, and characters of each. */
  messageLines: 12,
  lineChars: 500,
  /**
   * Characters of each line read, from its start, before its placeholders are made: some placeholder
   * rules take time that grows with the square of a line's length, so a line is cut first. Twice what
   * is kept, so that what the placeholders shorten (ids, URLs, paths) still fills `lineChars` with the
   * same text on every run, whatever the lengths of the values that varied.
   */
  lineReadChars: 1000,
  /** Project frames kept: enough to tell two callers of one helper apart, few enough to survive refactors below them. */
  frames: 3,
  titleLines: 3,
  titleChars: 300,
} as const;

/** Lines after which the message holds no more of the failure's statement: call logs, stacks, chained causes. */
const STOP =
  /^\s*(?:Call log:|=+ logs =+|Traceback \(most recent call last\)|Caused by:|--- End of |During handling of the above exception)/;
/** Lines that are source excerpts, carets, positions or the received side of a diff. */
const SKIP = /^\s*>?\s*\d+\s*\|.*$|^\s*\|\s*[\^~]|^\s*[-~\s]*\^+[-~\s]*$|^\s*[↓↑]\s*(?:\(pos \d+\))?\s*$|^\s*\+(?:\s|$)|^\s*\+\s*where\b/;
const PYTEST_PREFIX = /^E(?:\s+|$)/;
const PYTHON_EXCEPTION = /^[\w.]+(?:Error|Exception|Exit|Interrupt|Warning|Failure|Failed)\b/;

/** The part of a long text that is read: its head, and for a trace also its tail. */
export function bounded(text: string, head: number, tail = 0): string {
  if (text.length <= head + tail) return text;
  return tail === 0 ? text.slice(0, head) : `${text.slice(0, head)}\n${text.slice(text.length - tail)}`;
}

/** A Python traceback printed as the message states its failure at the end: the message is the exception line on. */
export function pythonStatement(lines: string[]): { statement: string[]; traceback: string[] } | undefined {
  const first = lines.findIndex((line) => line.trim() !== '');
  if (first < 0 || !/^Traceback \(most recent call last\):/.test(lines[first] as string)) return undefined;
  let at = -1;
  for (let i = lines.length - 1; i > first; i--) {
    if (PYTHON_EXCEPTION.test(lines[i] as string)) {
      at = i;
      break;
    }
  }
  if (at < 0) return undefined;
  return { statement: lines.slice(at), traceback: lines.slice(first, at) };
}

/** The lines of the message that state the failure, each with its received values and dynamic parts replaced. */
export function statementLines(lines: readonly string[], roots: readonly string[]): string[] {
  const kept: string[] = [];
  for (const raw of lines) {
    if (STOP.test(raw) || parseFrame(raw)) break;
    const unprefixed = raw.slice(0, LIMITS.lineReadChars).replace(PYTEST_PREFIX, '');
    if (SKIP.test(unprefixed)) continue;
    const line = placeholders(withoutReceived(unprefixed), roots).replace(/\s+/g, ' ').trim();
    if (line === '') continue;
    kept.push(line.length > LIMITS.lineChars ? line.slice(0, LIMITS.lineChars) : line);
    // pytest explains its assertion after the line below, restating the operands' values.
    if (kept.length === LIMITS.messageLines || /^(?:AssertionError: )?assert\b/.test(line)) break;
  }
  return kept;
}

/**
 * The statement the trace holds when the message is its first line only: JUnit's `message`
 * attribute keeps one line, and Playwright's JUnit reporter drops the `Error: ` of JavaScript's
 * generic error besides, while the body (the trace) repeats the whole error. Read from the trace's
 * line that restates the message, the failure states what the live reporter and a JSON report say
 * of it (TRIAGE-1). Undefined when the message is longer, or when no line of the trace restates it.
 */
export function restatement(lines: readonly string[], frameLines: readonly string[], roots: readonly string[]): string[] | undefined {
  if (lines.length !== 1 || frameLines.length === 0) return undefined;
  const head = lines[0] as string;
  const at = frameLines.findIndex((raw) => {
    if (parseFrame(raw)) return false;
    const line = placeholders(withoutReceived(raw.slice(0, LIMITS.lineReadChars)), roots)
      .replace(/\s+/g, ' ')
      .trim();
    return line === head || line === `Error: ${head}`;
  });
  if (at < 0) return undefined;
  const restated = statementLines(frameLines.slice(at), roots);
  return restated.length > 0 ? restated : undefined;
}

/**
 * SHA-256 of the message and frames; with a target, SHA-256 of that hash and the target (TRIAGE-1):
 * two locators timing out on one line of one file are two causes, and a failure without a target
 * keeps the fingerprint it had before targets counted. Migration 0027 chains the stored groups'
 * fingerprints with their failures' targets the same way: this must stay the chain it copied.
 */
export function fingerprintOf(message: string, frames: readonly Frame[], target: string | null): string {
  const base = createHash('sha256')
    .update(`${message}\n\n${frames.map((frame) => `${frame.file} ${frame.function}`).join('\n')}`)
    .digest('hex');
  return target === null ? base : createHash('sha256').update(`${base}\ntarget ${target}`).digest('hex');
}

/** A failure's text as the rules read it: bounded and ANSI-free, a Python traceback in the message moved to the trace. */
export interface FailureLines {
  /** The message, bounded and without ANSI codes. */
  raw: string;
  messageLines: string[];
  frameLines: string[];
}

export function failureLines(message: string, trace: string | null | undefined): FailureLines {
  const raw = stripAnsi(bounded(message ?? '', LIMITS.messageChars));
  let messageLines = raw.split(/\r?\n/);
  let frameLines = trace ? stripAnsi(bounded(trace, LIMITS.traceHeadChars, LIMITS.traceTailChars)).split(/\r?\n/) : [];
  const python = pythonStatement(messageLines);
  if (python) {
    messageLines = python.statement;
    if (frameLines.length === 0) frameLines = python.traceback;
  }
  return { raw, messageLines, frameLines };
}

/** What makes a failure's fingerprint: its statement (restated from the trace where the body says more), its project frames and its target. */
export interface FailureStatement extends FailureLines {
  /** The statement's lines, placeholders in place of what varies. */
  lines: string[];
  message: string;
  frames: Frame[];
  target: string | null;
  fingerprint: string;
}

export function failureStatement(message: string, trace: string | null | undefined, roots: readonly string[]): FailureStatement {
  const text = failureLines(message, trace);
  const lines = statementLines(text.messageLines, roots);
  const restated = restatement(lines, text.frameLines, roots);
  if (restated) lines.splice(0, lines.length, ...restated);
  let frames = projectFrames(text.frameLines, roots, LIMITS.frames);
  if (frames.length === 0) frames = projectFrames(text.messageLines, roots, LIMITS.frames);
  const statement = lines.join('\n');
  const target = targetOf(text.raw, statement, roots, text.frameLines.join('\n'));
  return { ...text, lines, message: statement, frames, target, fingerprint: fingerprintOf(statement, frames, target) };
}
