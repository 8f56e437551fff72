import type { Static } from 'typebox';
import type { QueryOf } from '../../../src/api/endpoint.ts';
import { type AttestClient, v1 } from '../../../src/client/index.ts';

// What the triage pages read (docs/triage.md): error groups and their triage (the failures
// contract), the project dashboard and the comparison of two jobs.

export const { FAILURE_STATUSES, DEFECT_TYPES, FAILURE_CATEGORIES, FAILURE_SORTS } = v1.failures;

export type FailureStatus = (typeof FAILURE_STATUSES)[number];
export type DefectType = (typeof DEFECT_TYPES)[number];

/** How a defect type reads on a page. */
export const DEFECT_LABEL: Record<DefectType, string> = {
  product_bug: 'Product bug',
  automation_bug: 'Automation bug',
  system_issue: 'System issue',
  no_defect: 'No defect',
  to_investigate: 'To investigate',
};

export const defectLabel = (type: string | null | undefined): string => (type ? (DEFECT_LABEL[type as DefectType] ?? type) : '—');

export type FailureGroup = Static<typeof v1.failures.FailureGroup>;
export type FailureGroupDetail = Static<typeof v1.failures.FailureGroupDetails>;
export type Occurrence = Static<typeof v1.failures.FailureOccurrence>;
/** What `PATCH …/failures/{groupId}` changes; null clears a text field. */
export type TriageChanges = Static<typeof v1.failures.FailureTriage>;
/** Occurrences per UTC day (`YYYY-MM-DD`), oldest first. */
export type Trend = FailureGroupDetail['trend'];
/** The outage guard's mark on a job (TRIAGE-4). */
export type Incident = NonNullable<Static<typeof v1.jobs.Job>['incident']>;

/** A job as the dashboard and the comparison carry it: the job answer, with `progress.tests` and `incident`. */
export type JobAnswer = Static<typeof v1.jobs.Job>;
/** Tests in a job, retries folded into their test (TRIAGE-5). */
export type TestProgress = Static<typeof v1.jobs.JobTestProgress>;

export type Dashboard = Static<typeof v1.dashboard.Dashboard>;
export type DashboardDay = Dashboard['daily'][number];
export type DashboardJob = Dashboard['jobs'][number];
export type TopGroup = Dashboard['topGroups'][number];
export type HealthEntry = Dashboard['flaky'][number];
export type QuarantinedTest = Dashboard['quarantined'][number];

export type Comparison = Static<typeof v1.comparison.Comparison>;
export type ComparedTest = Comparison['newFailures'][number];
export type ComparedGroup = Comparison['newErrorGroups'][number];

export const COMPARISON_SECTIONS = ['newFailures', 'fixed', 'stillFailing', 'newErrorGroups', 'flaky', 'quarantined'] as const;
export type ComparisonSection = (typeof COMPARISON_SECTIONS)[number];

export function getDashboard(client: AttestClient, projectId: string, query: { branch?: string; days?: number }): Promise<Dashboard> {
  return client.call(v1.dashboard.getDashboard, {
    params: { projectId },
    query: { ...(query.branch ? { branch: query.branch } : {}), ...(query.days !== undefined ? { days: query.days } : {}) },
  });
}

export type FailureQuery = QueryOf<typeof v1.failures.listFailureGroups>;

export function listFailures(client: AttestClient, projectId: string, query: FailureQuery) {
  return client.call(v1.failures.listFailureGroups, { params: { projectId }, query });
}

export function getFailureGroup(client: AttestClient, projectId: string, groupId: string): Promise<FailureGroupDetail> {
  return client.call(v1.failures.getFailureGroup, { params: { projectId, groupId } });
}

export function triageFailureGroup(
  client: AttestClient,
  projectId: string,
  groupId: string,
  changes: TriageChanges,
): Promise<FailureGroup> {
  return client.call(v1.failures.triageFailureGroup, { params: { projectId, groupId }, body: changes });
}

export function triageFailureGroups(client: AttestClient, projectId: string, groupIds: string[], changes: TriageChanges) {
  return client.call(v1.failures.triageFailureGroups, { params: { projectId }, body: { groupIds, changes } });
}

export function getComparison(client: AttestClient, jobId: string, base: { base?: string; baseBranch?: string }): Promise<Comparison> {
  return client.call(v1.comparison.compareJobs, {
    params: { jobId },
    query: { ...(base.base ? { base: base.base } : {}), ...(base.baseBranch ? { baseBranch: base.baseBranch } : {}) },
  });
}
