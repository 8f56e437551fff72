import type { TestOutcome } from './outcomes.ts';
import type { TriageSettings } from './settings.ts';

// Health by named monitors (TRIAGE-11, docs/triage.md): over a test's outcomes on one branch (runs
// of incident jobs already left out), `broken` fires when its last `brokenAfter` outcomes failed
// and always wins; else `retry` when, within its window, a job failed then passed it on a retry or
// a commit had both verdicts; else `rate` when its failure rate over its window reaches the
// threshold. Each needs its minimum of samples. None fired: stable.

export type MonitorName = 'retry' | 'rate' | 'broken';

/** The thresholds the monitors read (the project's triage settings). */
export type MonitorSettings = Pick<
  TriageSettings,
  'brokenAfter' | 'retryWindow' | 'retryMinSamples' | 'retryMinEvents' | 'rateWindow' | 'rateMinSamples' | 'rateThreshold'
>;

/** What the monitor that fired saw: its events among the samples it read, and the runs that are its evidence. */
export interface MonitorEvidence {
  /** Retries (retry), counted failures (rate) or failures in a row (broken). */
  events: number;
  /** Outcomes the monitor read (at most its window). */
  samples: number;
  /** The final run and job of each outcome that is an event, newest first, at most `EVIDENCE_MAX`. */
  runs: { runId: string; jobId: string | null }[];
}

export interface MonitorVerdict {
  state: 'stable' | 'flaky' | 'broken';
  monitor: MonitorName | null;
  evidence: MonitorEvidence | null;
}

export const EVIDENCE_MAX = 20;

type Outcome = Pick<TestOutcome, 'verdict' | 'commit' | 'runId' | 'jobId'>;

const failing = (outcome: Outcome) => outcome.verdict === 'failed' || outcome.verdict === 'broken';

const evidenceOf = (events: readonly Outcome[], samples: number): MonitorEvidence => ({
  events: events.length,
  samples,
  runs: events.slice(0, EVIDENCE_MAX).map((outcome) => ({ runId: outcome.runId, jobId: outcome.jobId })),
});

/** Failing outcomes in a row, newest first. */
export function failingStreakOf(considered: readonly Outcome[]): number {
  let streak = 0;
  while (streak < considered.length && failing(considered[streak] as Outcome)) streak++;
  return streak;
}

/**
 * The monitors over `considered`: a test's counted outcomes (passed, flaky, failed, broken) on one
 * branch, newest first.
 */
export function runMonitors(considered: readonly Outcome[], settings: MonitorSettings): MonitorVerdict {
  const streak = failingStreakOf(considered);
  if (streak >= settings.brokenAfter) {
    return { state: 'broken', monitor: 'broken', evidence: evidenceOf(considered.slice(0, streak), streak) };
  }

  // retry: a failure then a pass in one job (`flaky`), and each commit whose outcomes have both sides, once.
  const retryWindow = considered.slice(0, settings.retryWindow);
  const retries: Outcome[] = retryWindow.filter((outcome) => outcome.verdict === 'flaky');
  const sidesOfCommit = new Map<string, { pass: boolean; fail?: Outcome }>();
  for (const outcome of retryWindow) {
    if (outcome.commit === null) continue;
    const sides = sidesOfCommit.get(outcome.commit) ?? { pass: false };
    if (failing(outcome)) sides.fail ??= outcome;
    else sides.pass = true;
    sidesOfCommit.set(outcome.commit, sides);
  }
  for (const sides of sidesOfCommit.values()) if (sides.pass && sides.fail) retries.push(sides.fail);
  if (retryWindow.length >= settings.retryMinSamples && retries.length >= settings.retryMinEvents) {
    return { state: 'flaky', monitor: 'retry', evidence: evidenceOf(retries, retryWindow.length) };
  }

  // rate: failures over the window, leaving out the newest failing streak (not yet followed by a
  // pass: it may be a break starting) and every stretch of brokenAfter failures or more (a break and its fix).
  const rateWindow = considered.slice(0, settings.rateWindow);
  const counted: Outcome[] = [];
  let at = streak;
  while (at < rateWindow.length) {
    if (!failing(rateWindow[at] as Outcome)) {
      at++;
      continue;
    }
    let end = at;
    while (end < rateWindow.length && failing(rateWindow[end] as Outcome)) end++;
    if (end - at < settings.brokenAfter) counted.push(...rateWindow.slice(at, end));
    at = end;
  }
  if (rateWindow.length >= settings.rateMinSamples && counted.length / rateWindow.length >= settings.rateThreshold) {
    return { state: 'flaky', monitor: 'rate', evidence: evidenceOf(counted, rateWindow.length) };
  }
  return { state: 'stable', monitor: null, evidence: null };
}
