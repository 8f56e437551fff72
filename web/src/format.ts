import type { Static } from 'typebox';
import type { v1 } from '../../src/client/index.ts';

/** Display helpers shared by the pages. */

// One formatter for every time shown: `toLocaleString` with options builds a new one per call,
// which cost a 2,000-run job's page 140 ms.
const TIME = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });

export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : TIME.format(date);
}

export function formatDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '—';
  if (ms < 1000) return `${ms} ms`;
  const seconds = ms / 1000;
  if (seconds < 60) return `${seconds.toFixed(seconds < 10 ? 2 : 1)} s`;
  const minutes = Math.floor(seconds / 60);
  return `${minutes} min ${Math.round(seconds % 60)} s`;
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  if (bytes < 1024 ** 3) return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
  return `${(bytes / 1024 ** 3).toFixed(1)} GB`;
}

/** Milliseconds between two times, or null. */
export function between(from: string | null | undefined, to: string | null | undefined): number | null {
  if (!from || !to) return null;
  return Math.max(0, Date.parse(to) - Date.parse(from));
}

/** A set of tests, retries folded into each (TRIAGE-14): a job's `progress.tests`, a test's `outcomeSummary`. */
export type FoldedCounts = Omit<Static<typeof v1.jobs.JobTestProgress>, 'total'>;

/**
 * The one way every page words folded tests (TRIAGE-14): the flaky ones passed in the end, so they
 * are among the passed, said beside them; `9 passed (2 flaky), 1 failed of 10 tests`.
 */
export function formatTestCounts(counts: FoldedCounts, total: number): string {
  const parts = [`${counts.passed + counts.flaky} passed${counts.flaky > 0 ? ` (${counts.flaky} flaky)` : ''}`, `${counts.failed} failed`];
  if (counts.broken > 0) parts.push(`${counts.broken} broken`);
  if (counts.skipped > 0) parts.push(`${counts.skipped} skipped`);
  if (counts.unfinished > 0) parts.push(`${counts.unfinished} unfinished`);
  return `${parts.join(', ')} of ${total} ${total === 1 ? 'test' : 'tests'}`;
}

/** A flaky score, as every page shows it (TRIAGE-14). */
export const formatScore = (score: number): string => score.toFixed(2);
