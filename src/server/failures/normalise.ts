/**
 * The failure normaliser: an error message and its stack become a fingerprint that is the same for
 * the same cause on every run, whatever the numbers, ids, times, ports and paths of that run, and
 * different for a different assertion, target or place in the code. Pure and deterministic: no
 * I/O, no clock; it looks at a bounded part of its input (the `LIMITS`), so a megabyte of log costs
 * what its first few kilobytes cost.
 */

import type { Frame } from './frames.ts';
import { failureStatement, LIMITS } from './rules-2026-12-02/statements.ts';
import { actionOf, categoryOf, type FailureSignature } from './signature.ts';

export type { Frame } from './frames.ts';
// Today's rules are the ones frozen on 2026-12-02 (./rules-2026-12-02/, which migrations 0027 and
// 0029 re-fingerprinted by): to change one, copy its file here first and change the copy; the
// frozen file stays as it is.
export { fingerprintOf, LIMITS } from './rules-2026-12-02/statements.ts';
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

/** The first lines of the statement, bounded: a group's title. */
function titleOf(lines: readonly string[]): string {
  const title = lines.slice(0, LIMITS.titleLines).join('\n');
  if (title === '') return '(no message)';
  return title.length > LIMITS.titleChars ? `${title.slice(0, LIMITS.titleChars - 1)}…` : title;
}

/** Normalises one failure: see the module's README for the rules. */
export function normaliseFailure(input: FailureInput): NormalisedFailure {
  const read = failureStatement(input.message, input.trace, input.projectRoots ?? []);
  const category = categoryOf(read.message);
  return {
    fingerprint: read.fingerprint,
    title: titleOf(read.lines),
    message: read.message,
    frames: read.frames,
    signature: {
      category,
      action: actionOf(category, read.message, read.frameLines.length > 0 ? read.frameLines : read.messageLines),
      target: read.target,
    },
  };
}
