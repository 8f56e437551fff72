import type { Static } from 'typebox';
import type { QueryOf } from '../../../src/api/endpoint.ts';
import { AttestClient, v1 } from '../../../src/client/index.ts';

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

export interface DashboardDay {
  day: string;
  runs: number;
  passed: number;
  failed: number;
  skipped: number;
  /** passed / (passed + failed), null on a day with neither. */
  passRate: number | null;
  meanDurationMs: number | null;
}

/** A job as the dashboard and the comparison carry it: the job answer, with `progress.tests` and `incident`. */
export type JobAnswer = Static<typeof v1.jobs.Job>;
/** Tests in a job, retries folded into their test (TRIAGE-5). */
export type TestProgress = Static<typeof v1.jobs.JobTestProgress>;

export interface DashboardJob {
  job: JobAnswer;
  /** Tests passed or flaky, of those that passed, were flaky or failed. */
  passRate: number | null;
  durationMs: number | null;
}

export interface TopGroup {
  id: string;
  title: string;
  category: string;
  rule: string | null;
  status: FailureStatus;
  defectType: DefectType | null;
  issueUrl: string | null;
  assignee: string | null;
  /** Failed runs in the window. */
  occurrences: number;
  totalOccurrences: number;
  trend: Trend;
}

export interface HealthEntry {
  testId: string;
  name: string;
  fullName: string | null;
  state: 'stable' | 'flaky' | 'broken';
  flakyScore: number;
  runsConsidered: number;
  failingStreak: number;
}

export interface QuarantinedTest {
  testId: string;
  name: string;
  fullName: string | null;
  owner: string;
  reason: string;
  expiresAt: string;
  expired: boolean;
}

export interface Dashboard {
  branch: string | null;
  days: number;
  /** Every day of the window, oldest first. */
  daily: DashboardDay[];
  /** The latest 20 jobs, newest first. */
  jobs: DashboardJob[];
  topGroups: TopGroup[];
  flaky: HealthEntry[];
  broken: HealthEntry[];
  quarantined: QuarantinedTest[];
}

export interface ComparedTest {
  testKey: string;
  testId: string | null;
  name: string;
  verdict: string | null;
  baseVerdict: string | null;
  attempts: number;
  runId: string | null;
  baseRunId: string | null;
  failureGroupId: string | null;
  quarantined: boolean;
}

export interface ComparedGroup {
  id: string;
  title: string;
  category: string;
  status: FailureStatus;
  defectType: DefectType | null;
  issueUrl: string | null;
  /** Tests of the job it failed. */
  tests: number;
  /** Every such test passed in the end (flaky). */
  flakyOnly: boolean;
}

export const COMPARISON_SECTIONS = ['newFailures', 'fixed', 'stillFailing', 'newErrorGroups', 'flaky', 'quarantined'] as const;
export type ComparisonSection = (typeof COMPARISON_SECTIONS)[number];

export interface Comparison {
  job: JobAnswer;
  base: JobAnswer | null;
  counts: Record<ComparisonSection | 'tests', number>;
  newFailures: ComparedTest[];
  fixed: ComparedTest[];
  stillFailing: ComparedTest[];
  flaky: ComparedTest[];
  quarantined: ComparedTest[];
  newErrorGroups: ComparedGroup[];
}

/** The query string of defined values. */
function search(query: Record<string, string | number | undefined>): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (value !== undefined && value !== '') params.set(name, String(value));
  const text = params.toString();
  return text ? `?${text}` : '';
}

async function json<T>(client: AttestClient, method: string, path: string, body?: unknown): Promise<T> {
  const response = await client.fetchRaw(method, path, body === undefined ? {} : { body: JSON.stringify(body) });
  return (await AttestClient.read(response)) as T;
}

const project = (projectId: string) => `/projects/${encodeURIComponent(projectId)}`;

export function getDashboard(client: AttestClient, projectId: string, query: { branch?: string; days?: number }): Promise<Dashboard> {
  return json(client, 'GET', `${project(projectId)}/dashboard${search(query)}`);
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
  return json(client, 'GET', `/testmgmt/jobs/${encodeURIComponent(jobId)}/comparison${search(base)}`);
}
