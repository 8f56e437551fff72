import { AttestClient } from '../../../src/client/index.ts';

// The answers of the issue-30 endpoints (docs/triage.md) the triage pages read: error groups and
// their triage, the project dashboard and the comparison of two jobs.

export const FAILURE_STATUSES = ['new', 'known', 'regressed', 'resolved'] as const;
export const DEFECT_TYPES = ['product_bug', 'automation_bug', 'system_issue', 'no_defect', 'to_investigate'] as const;
export const FAILURE_CATEGORIES = ['assertion', 'element', 'timeout', 'network', 'crash', 'other'] as const;
export const FAILURE_SORTS = ['lastSeen', 'occurrences', 'affectedTests'] as const;

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

export const defectLabel = (type: string | null | undefined): string => (type ? (DEFECT_LABEL[type as DefectType] ?? type) : 'Not triaged');

export interface FailureGroup {
  id: string;
  projectId: string;
  fingerprint: string;
  title: string;
  message: string;
  frames: string[];
  category: string;
  action: string | null;
  target: string | null;
  rule: string | null;
  status: FailureStatus;
  defectType: DefectType | null;
  comment: string | null;
  issueUrl: string | null;
  assignee: string | null;
  firstSeenAt: string;
  firstSeenRunId: string | null;
  firstSeenJobId: string | null;
  lastSeenAt: string;
  lastSeenRunId: string | null;
  lastSeenJobId: string | null;
  occurrences: number;
  affectedTests: number;
  affectedBranches: number;
  triagedAt: string | null;
  triagedBy: string | null;
}

/** Occurrences per UTC day (`YYYY-MM-DD`), oldest first. */
export type Trend = { day: string; occurrences: number }[];

export interface Occurrence {
  runId: string;
  runName: string;
  stepId: string | null;
  stepTitle: string | null;
  testId: string | null;
  jobId: string | null;
  branch: string | null;
  at: string;
  screenshotId: string | null;
}

export interface FailureGroupDetail extends FailureGroup {
  latestOccurrences: Occurrence[];
  trend: Trend;
}

/** What `PATCH …/failures/{groupId}` changes; null clears a text field. */
export interface TriageChanges {
  defectType?: DefectType | null;
  status?: FailureStatus;
  comment?: string | null;
  issueUrl?: string | null;
  assignee?: string | null;
}

export interface Incident {
  failureGroupId: string;
  failedRuns: number;
}

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
export interface JobAnswer {
  id: string;
  name: string;
  projectId: string;
  status: string;
  branch: string | null;
  createdAt: string;
  progress: { total: number; passed: number; failed: number; tests?: TestProgress | null };
  incident?: Incident | null;
}

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

/** The error group a run or a step failed with (`failureGroupId`), once its run has completed. */
export const failureGroupOf = (thing: object): string | null => (thing as { failureGroupId?: string | null }).failureGroupId ?? null;

/** A run's attempt (0 for the first execution), when the server says it. */
export const attemptOf = (thing: object): number | undefined => (thing as { attempt?: number }).attempt;

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

export interface FailureQuery {
  status?: string;
  category?: string;
  defectType?: string;
  branch?: string;
  since?: string;
  testId?: string;
  q?: string;
  sort?: string;
  limit?: number;
  cursor?: string;
}

export function listFailures(
  client: AttestClient,
  projectId: string,
  query: FailureQuery,
): Promise<{ items: FailureGroup[]; nextCursor: string | null }> {
  return json(client, 'GET', `${project(projectId)}/failures${search({ ...query })}`);
}

export function getFailureGroup(client: AttestClient, projectId: string, groupId: string): Promise<FailureGroupDetail> {
  return json(client, 'GET', `${project(projectId)}/failures/${encodeURIComponent(groupId)}`);
}

export function triageFailureGroup(
  client: AttestClient,
  projectId: string,
  groupId: string,
  changes: TriageChanges,
): Promise<FailureGroup> {
  return json(client, 'PATCH', `${project(projectId)}/failures/${encodeURIComponent(groupId)}`, changes);
}

export function triageFailureGroups(
  client: AttestClient,
  projectId: string,
  groupIds: string[],
  changes: TriageChanges,
): Promise<{ items: FailureGroup[] }> {
  return json(client, 'PATCH', `${project(projectId)}/failures`, { groupIds, changes });
}

export function getComparison(client: AttestClient, jobId: string, base: { base?: string; baseBranch?: string }): Promise<Comparison> {
  return json(client, 'GET', `/testmgmt/jobs/${encodeURIComponent(jobId)}/comparison${search(base)}`);
}

/** Tests in a job, retries folded into their test (TRIAGE-5): `progress.tests` of a job answer. */
export interface TestProgress {
  total: number;
  passed: number;
  failed: number;
  broken: number;
  skipped: number;
  flaky: number;
  unfinished: number;
}

/** The incident a job answer names (TRIAGE-4), or null. */
export const incidentOf = (job: object): Incident | null => (job as { incident?: Incident | null }).incident ?? null;

/** A job's progress counted per test, when the server gives it. */
export const testProgressOf = (job: { progress: object }): TestProgress | null =>
  (job.progress as { tests?: TestProgress | null }).tests ?? null;
