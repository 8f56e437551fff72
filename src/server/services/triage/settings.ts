import { TRIAGE_DEFAULTS } from '../../../api/v1/projects.ts';
import type { ProjectsTable } from '../../db/types.ts';

// The triage thresholds of a project (docs/triage.md): what it set with `PATCH /projects/{id}`
// `triage`, the defaults for the rest. Read by the outage guard (failure-recording.ts), by
// test health (health.ts) and by the quarantine lifecycle (quarantine-lifecycle.ts).

export interface TriageSettings {
  /** Failed tests a job needs before one cause can make it an incident (TRIAGE-4). */
  incidentMinFailures: number;
  /** The share of those one cause must exceed. */
  incidentShare: number;
  /** Failing outcomes in a row that make a test broken (TRIAGE-6). */
  brokenAfter: number;
  /** Latest job outcomes a test's health considers. */
  healthWindow: number;
  /** Passing runs in a row that verify a fix attempt (TRIAGE-13). */
  fixPasses: number;
  /** Quarantine tests whose health turns flaky (TRIAGE-13). */
  autoQuarantine: boolean;
  /** The retry monitor (TRIAGE-11): its window, the samples it needs, the retries that fire it. */
  retryWindow: number;
  retryMinSamples: number;
  retryMinEvents: number;
  /** The rate monitor (TRIAGE-11): its window, the samples it needs, the failure rate that fires it. */
  rateWindow: number;
  rateMinSamples: number;
  rateThreshold: number;
}

/** The settings in effect for a project; a stored value of the wrong kind (never written by the API) falls back to its default. */
export function triageSettingsOf(row: Pick<ProjectsTable, 'triage_settings'>): TriageSettings {
  let stored: Record<string, unknown> = {};
  if (row.triage_settings !== null) {
    try {
      const parsed: unknown = JSON.parse(row.triage_settings);
      if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) stored = parsed as Record<string, unknown>;
    } catch {
      // A damaged value reads as none: the defaults.
    }
  }
  const pick = (name: Exclude<keyof TriageSettings, 'autoQuarantine'>): number => {
    const value = stored[name];
    return typeof value === 'number' && Number.isFinite(value) ? value : TRIAGE_DEFAULTS[name];
  };
  return {
    incidentMinFailures: pick('incidentMinFailures'),
    incidentShare: pick('incidentShare'),
    brokenAfter: pick('brokenAfter'),
    healthWindow: pick('healthWindow'),
    fixPasses: pick('fixPasses'),
    autoQuarantine: typeof stored.autoQuarantine === 'boolean' ? stored.autoQuarantine : TRIAGE_DEFAULTS.autoQuarantine,
    retryWindow: pick('retryWindow'),
    retryMinSamples: pick('retryMinSamples'),
    retryMinEvents: pick('retryMinEvents'),
    rateWindow: pick('rateWindow'),
    rateMinSamples: pick('rateMinSamples'),
    rateThreshold: pick('rateThreshold'),
  };
}
