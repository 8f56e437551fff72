// Frozen in time with migration 2026-12-02-0029-merge-equal-groups, which alone uses it: a copy of
// the normaliser (src/server/failures) as it was that day, after a one-line JUnit message the body
// restates came to be read from the body (TRIAGE-2), so that what the migration did never changes
// with it. Only what makes a fingerprint is copied (a failure's category and action are not part of
// it). Never edited once shipped; no application imports but its own frozen `…-frames.ts`.

import { createHash } from 'node:crypto';
import {
  type Frame,
  parseFrame,
  placeholders,
  projectFrames,
  stripAnsi,
  templateHost,
  templatePath,
  withoutReceived,
} from './2026-12-02-0029-merge-equal-groups-frames.ts';

/** A failure as the normaliser of this migration's day reads it (no project roots: recording gives none). */
export interface Normalised {
  fingerprint: string;
  /** The normalised message. */
  message: string;
  /** Whether the failure has project frames (the richer evidence of one cause, TRIAGE-2). */
  framed: boolean;
  target: string | null;
}

// ---- a copy of the target rules of src/server/failures/signature.ts ----

const LOCATOR_LINE = /^\s*Locator:\s*(.+?)\s*$/m;
const WAITING_FOR =
  /waiting for ((?:locator|getBy\w+|get_by_\w+|frameLocator|page\.\w+|internal:\w+)\(.*?\)(?:\.\w+\(.*?\))*)(?:\s+to be \w+)?\s*$/m;
const WAITING_FOR_SELECTOR = /waiting for selector "(.+?)"(?:\s+to be \w+)?\s*$/m;
const SELENIUM_SELECTOR = /"method":\s*"([^"]+)",\s*"selector":\s*"((?:[^"\\]|\\.)*)"/;
const SELENIUM_BY = /located by (By\.\w+: .+?)(?: \(tried for|\)?\s*$)/m;
/** A URL (already a template, so `<port>` and `<id>` are part of it) on the first line or an `Expected` line: not one a hint links to. */
const URL_IN_TEXT = /^(?:.*?\bExpected[^:\n]*:.*?|[^\n]*?)\b([a-z][a-z0-9+.-]*:\/\/(?:[^\s'"`<>)\]]|<\w+>)+)/im;
const NODE_ADDRESS = /\b(?:connect|read|write|getaddrinfo) E[A-Z_]+ (\S+)/;
const PYTHON_POOL = /host='([^']+)', port=(\d+)\): Max retries exceeded with url: (\S+)/;
const DOTNET_HOST = /\(([\w.-]+:(?:\d+|<port>))\)/;

const bounded = (text: string) => (text.length > 200 ? `${text.slice(0, 199)}…` : text);

/** The locator or selector a text names: Playwright's `Locator:` line or first `waiting for …`, Selenium's selector, Python's pool URL. */
function locatorIn(text: string, roots: readonly string[]): string | null {
  const locator = LOCATOR_LINE.exec(text)?.[1] ?? WAITING_FOR.exec(text)?.[1] ?? WAITING_FOR_SELECTOR.exec(text)?.[1];
  if (locator !== undefined) return bounded(placeholders(locator, roots));
  const selenium = SELENIUM_SELECTOR.exec(text);
  if (selenium) return bounded(placeholders(`${selenium[1]} ${selenium[2]}`, roots));
  const by = SELENIUM_BY.exec(text);
  if (by) return bounded(placeholders(by[1] as string, roots));
  const pool = PYTHON_POOL.exec(text);
  if (pool) return bounded(`${templateHost(pool[1] as string)}:<port>${templatePath(pool[3] as string)}`);
  return null;
}

/**
 * The locator (Playwright's `Locator:` line or the first `waiting for …` of its call log,
 * Selenium's selector) of the message, else of the trace (a JUnit `message` attribute holds only
 * the first line; the call log is in the body), or else the first URL or network address of the
 * message's statement, normalised like the message. URLs are not read from a trace: its frames
 * name the pages the code was served from, not what the test acted on.
 */
function targetOf(raw: string, head: string, roots: readonly string[], trace = ''): string | null {
  const locator = locatorIn(raw, roots) ?? (trace === '' ? null : locatorIn(trace, roots));
  if (locator !== null) return locator;
  const firstAndExpected = head
    .split('\n')
    .filter((line, i) => i === 0 || /^Expected\b/.test(line))
    .join('\n');
  const url = URL_IN_TEXT.exec(firstAndExpected)?.[1];
  if (url) return bounded(url.replace(/[.,;:!]+$/, ''));
  const address = NODE_ADDRESS.exec(head)?.[1] ?? DOTNET_HOST.exec(head)?.[1];
  return address === undefined ? null : bounded(address);
}

// ---- a copy of src/server/failures/normalise.ts, from its limits on ----

/** What the normaliser looks at, and what it keeps. */
const LIMITS = {
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
function boundedText(text: string, head: number, tail = 0): string {
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

/** The fingerprint, normalised message, evidence and target of one failure, as `normaliseFailure` made them that day. */
export function normalised(message: string, trace: string | null): Normalised {
  const roots: readonly string[] = [];
  const raw = stripAnsi(boundedText(message ?? '', LIMITS.messageChars));
  let messageLines = raw.split(/\r?\n/);
  let frameLines = trace ? stripAnsi(boundedText(trace, LIMITS.traceHeadChars, LIMITS.traceTailChars)).split(/\r?\n/) : [];
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
  const text = lines.join('\n');
  const target = targetOf(raw, text, roots, frameLines.join('\n'));
  return { fingerprint: fingerprintOf(text, frames, target), message: text, framed: frames.length > 0, target };
}

/**
 * SHA-256 of the message and frames; with a target, SHA-256 of that hash and the target (TRIAGE-1):
 * two locators timing out on one line of one file are two causes, and a failure without a target
 * keeps the fingerprint it had before targets counted. Migration 0027 chains the stored groups'
 * fingerprints with their failures' targets the same way: this must stay the chain it copied.
 */
function fingerprintOf(message: string, frames: readonly Frame[], target: string | null): string {
  const base = createHash('sha256')
    .update(`${message}\n\n${frames.map((frame) => `${frame.file} ${frame.function}`).join('\n')}`)
    .digest('hex');
  return target === null ? base : createHash('sha256').update(`${base}\ntarget ${target}`).digest('hex');
}
