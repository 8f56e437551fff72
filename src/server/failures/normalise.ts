/**
 * The failure normaliser: an error message and its stack become a fingerprint that is the same for
 * the same cause on every run, whatever the numbers, ids, times, ports and paths of that run, and
 * different for a different assertion, target or place in the code. Pure and deterministic: no
 * I/O, no clock; it looks at a bounded part of its input (the `LIMITS`), so a megabyte of log costs
 * what its first few kilobytes cost.
 */

import { createHash } from 'node:crypto';
import { type Frame, parseFrame, projectFrames } from './frames.ts';
import { placeholders, stripAnsi, withoutReceived } from './placeholders.ts';
import { actionOf, categoryOf, type FailureSignature, targetOf } from './signature.ts';

export type { Frame } from './frames.ts';
export type { FailureCategory, FailureSignature } from './signature.ts';

export interface FailureInput {
  /** The error message as the framework printed it (it may carry its stack too). */
  message: string;
  /** The stack trace, when reported apart from the message. */
  trace?: string | null;
  /** Absolute folders of the project (checkouts, workspaces): removed from paths so frames are relative. */
  projectRoots?: readonly string[];
}

export interface NormalisedFailure {
  /** Hex SHA-256 of `message` and `frames`, chained with the signature's target when there is one: the group a failure falls into. */
  fingerprint: string;
  /** The first lines of `message`, bounded: what a list of groups shows. */
  title: string;
  /** The normalised message: the lines that state the failure, placeholders in place of what varies. */
  message: string;
  /** The first project frames, innermost first: file (relative, no line) and function. */
  frames: Frame[];
  signature: FailureSignature;
}

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
function bounded(text: string, head: number, tail = 0): string {
  if (text.length <= head + tail) return text;
  return tail === 0 ? text.slice(0, head) : `${text.slice(0, head)}\n${text.slice(text.length - tail)}`;
}

/** A Python traceback printed as the message states its failure at the end: the message is the exception line on. */
function pythonStatement(lines: string[]): { statement: string[]; traceback: string[] } | undefined {
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
function statementLines(lines: readonly string[], roots: readonly string[]): string[] {
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
function restatement(lines: readonly string[], frameLines: readonly string[], roots: readonly string[]): string[] | undefined {
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

function titleOf(lines: readonly string[]): string {
  const title = lines.slice(0, LIMITS.titleLines).join('\n');
  if (title === '') return '(no message)';
  return title.length > LIMITS.titleChars ? `${title.slice(0, LIMITS.titleChars - 1)}…` : title;
}

/** Normalises one failure: see the module's README for the rules. */
export function normaliseFailure(input: FailureInput): NormalisedFailure {
  const roots = input.projectRoots ?? [];
  const raw = stripAnsi(bounded(input.message ?? '', LIMITS.messageChars));
  let messageLines = raw.split(/\r?\n/);
  let frameLines = input.trace ? stripAnsi(bounded(input.trace, LIMITS.traceHeadChars, LIMITS.traceTailChars)).split(/\r?\n/) : [];
  const python = pythonStatement(messageLines);
  if (python) {
    messageLines = python.statement;
    if (frameLines.length === 0) frameLines = python.traceback;
  }
  const lines = statementLines(messageLines, roots);
  const restated = restatement(lines, frameLines, roots);
  if (restated) lines.splice(0, lines.length, ...restated);
  let frames = projectFrames(frameLines, roots, LIMITS.frames);
  if (frames.length === 0) frames = projectFrames(messageLines, roots, LIMITS.frames);
  const message = lines.join('\n');
  const category = categoryOf(message);
  const target = targetOf(raw, message, roots, frameLines.join('\n'));
  return {
    fingerprint: fingerprintOf(message, frames, target),
    title: titleOf(lines),
    message,
    frames,
    signature: {
      category,
      action: actionOf(category, message, frameLines.length > 0 ? frameLines : messageLines),
      target,
    },
  };
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
