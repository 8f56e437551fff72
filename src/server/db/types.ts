import type { Kysely, Transaction } from 'kysely';
import type { ForgeChecksTable, ForgeSettingsTable, IssueLinksTable, IssueTrackersTable } from './integration-types.ts';
import type { SigningKeysTable, TestLifecyclesTable } from './lifecycle-types.ts';
import type { SsoIdentitiesTable, SsoLoginsTable } from './sso-types.ts';
import type { TestLinksTable } from './test-case-types.ts';
import type {
  FailureGroupBranchesTable,
  FailureGroupsTable,
  FailureGroupTestsTable,
  FailureOccurrencesTable,
  GroupDaysTable,
  RunDaysTable,
  TestHealthTable,
  TestQuarantinesTable,
} from './triage-types.ts';
import type { ProjectBlobsTable, ProjectUsageTable, UsageCounters } from './usage-types.ts';
import type { WebhookAttemptsTable, WebhookDeliveriesTable, WebhooksTable } from './webhook-types.ts';

// The tables kept in files of their own are re-exported whole: every row shape is imported from here.
export type * from './integration-types.ts';
export type * from './lifecycle-types.ts';
export type * from './sso-types.ts';
export type * from './test-case-types.ts';
export type * from './triage-types.ts';
export type * from './usage-types.ts';
export type * from './webhook-types.ts';

// Row shapes as both dialects store them (see the initial migration): timestamps are ISO-8601 UTC
// text, booleans 0/1, JSON columns text. Presenters turn these into the wire shape.

export interface UsersTable {
  id: string;
  email: string;
  name: string;
  roles: string;
  password_hash: string | null;
  created_at: string;
  updated_at: string;
  deleted_at: string | null;
}

export interface ApiKeysTable {
  id: string;
  user_id: string;
  name: string;
  format: 'standard' | 'legacy' | 'session';
  scope: 'full' | 'read';
  key_digest: string;
  email_digest: string | null;
  display_hint: string;
  created_at: string;
  created_by: string | null;
  expires_at: string | null;
  last_used_at: string | null;
  revoked_at: string | null;
}

export interface ProjectsTable {
  id: string;
  key: string;
  name: string;
  description: string;
  created_at: string;
  updated_at: string;
  created_by: string | null;
  /** JSON of the project's retention policy; null follows the instance default. */
  retention: string | null;
  /** Most stored bytes the project's artifacts may take (RET-5); null: no quota. */
  quota_bytes: number | null;
  /** JSON: the ordered category rules (TRIAGE-3); null: none. */
  failure_rules: string | null;
  /** JSON: the project's triage thresholds (TRIAGE-4, TRIAGE-6); null: the defaults. */
  triage_settings: string | null;
  /** The branch other branches' jobs are compared with (TRIAGE-16, migration 0031); null: inferred from its jobs. */
  default_branch: string | null;
}

/** A project as answers show it: its row and its counters. */
export type ProjectWithUsage = ProjectsTable & { usage: UsageCounters };

export interface ProjectMembersTable {
  project_id: string;
  user_id: string;
  added_at: string;
}

export interface DevicesTable {
  id: string;
  name: string;
  platform: string;
  os_version: string | null;
  model: string | null;
  manufacturer: string | null;
  status: string;
  labels: string;
  last_seen_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface DeviceLabelsTable {
  device_id: string;
  label: string;
}

export interface TestsTable {
  id: string;
  project_id: string;
  name: string;
  description: string;
  steps: string;
  tags: string;
  source_format: 'json' | 'gherkin';
  source: string | null;
  /** The full name a report gives the test; imports and reporters find the test by it. */
  full_name: string | null;
  created_at: string;
  created_by: string | null;
  // Migration 0017 (TCM-*): the folder path, null for none; the links as answered (JSON; `test_links`
  // indexes them); the version (1 at creation); when and by whom the current version was made.
  suite: string | null;
  links: string;
  version: number;
  updated_at: string;
  updated_by: string | null;
  /** Its health's flaky score in thousandths, 0 until first scored; kept by triggers on test_health (migration 0021). */
  flaky_milli: number;
}

/** A superseded version of a test, as it was while current (TCM-2): made at `created_at` by `created_by`. */
export type TestVersionsTable = Pick<
  TestsTable,
  'name' | 'description' | 'steps' | 'tags' | 'suite' | 'links' | 'source_format' | 'source' | 'version' | 'created_at' | 'created_by'
> & { test_id: string };

export interface JobsTable {
  id: string;
  project_id: string;
  name: string;
  request: string;
  cancelled_at: string | null;
  created_at: string;
  created_by: string | null;
  idempotency_key: string | null;
  idempotency_fingerprint: string | null;
  /** When its reporter closed the launch (`POST /testmgmt/jobs/{jobId}/complete`, migration 0011); null while open. */
  closed_at: string | null;
  /** The CI build that made the job (an http(s) URL), if the client gave one. */
  ci_url: string | null;
  /** The error group behind most of the job's failures (TRIAGE-4), and how many failed runs it had then. */
  incident_group_id: string | null;
  incident_failed_runs: number | null;
  /** The request's branch and build, as columns the lookups index (TRIAGE-17, migration 0032). */
  branch: string | null;
  build: string | null;
}

/**
 * A job's runs counted by status and, the completed ones, by verdict, with their first start, last
 * finish and last creation: kept by the `test_runs` triggers (JOB-1, SCALE-11, migration 0035). The
 * times are those of a `stale` row's runs only until a run that held one changed or went: then
 * they are read from the runs.
 */
export interface JobRollupsTable {
  job_id: string;
  queued: number | string;
  running: number | string;
  completed: number | string;
  aborted: number | string;
  passed: number | string;
  failed: number | string;
  broken: number | string;
  skipped: number | string;
  first_started: string | null;
  last_finished: string | null;
  last_created: string | null;
  stale: number;
}

export interface ImportsTable {
  id: string;
  project_id: string;
  job_id: string | null;
  status: 'queued' | 'processing' | 'completed' | 'failed';
  file_name: string;
  source_type: 'xml' | 'json' | 'zip';
  source_sha256: string;
  source_size: number;
  /** JSON of the import's options. */
  options: string;
  /** JSON of the counts and per-file outcome, once read. */
  summary: string | null;
  error: string | null;
  idempotency_key: string | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  created_by: string | null;
}

export interface TestRunsTable {
  id: string;
  project_id: string;
  test_id: string | null;
  job_id: string | null;
  device_id: string | null;
  name: string;
  status: 'queued' | 'running' | 'completed' | 'aborted';
  verdict: 'passed' | 'failed' | 'broken' | 'skipped' | null;
  environment: string | null;
  branch: string | null;
  build: string | null;
  commit_sha: string | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  created_by: string | null;
  /** The runner that claimed the run and holds its lease (SCALE-6; indexes: migration 0014). */
  lease_owner: string | null;
  /** When that lease ends unless renewed; null once the run is finished or back in the queue. */
  lease_expires_at: string | null;
  idempotency_key: string | null;
  idempotency_fingerprint: string | null;
  /** 1: never expired by retention. */
  keep: number;
  /** Artifacts the run holds, kept by triggers (migration 0007). */
  artifact_count: number;
  /** The CI build that made the run (an http(s) URL), if the client gave one (migration 0011). */
  ci_url: string | null;
  /** The error group of the run's failure (TRIAGE-1); set when a failed or broken run completes. */
  failure_group_id: string | null;
  /** 0 for a first attempt; retries of the same test in the same job count up (TRIAGE-5). */
  attempt: number;
  /** The version of its test the run executes (TCM-3); null without a test. */
  test_version: number | null;
  /** 1 while a later attempt of its test in its job exists (TRIAGE-5), kept by triggers (migration 0023). */
  superseded: number;
}

export interface ResultPostsTable {
  run_id: string;
  idempotency_key: string;
  fingerprint: string;
  /** The JSON answer of the post. */
  receipt: string;
  created_at: string;
}

export interface StepsTable {
  id: string;
  run_id: string;
  parent_id: string | null;
  depth: number;
  client_key: string | null;
  position: number;
  title: string;
  status: 'passed' | 'failed' | 'broken' | 'skipped' | 'running';
  started_at: string | null;
  duration_ms: number | null;
  error_message: string | null;
  created_at: string;
  /** The error group of a failed or broken step (TRIAGE-1); set when its run completes. */
  failure_group_id: string | null;
}

export interface TextCellsTable {
  id: string;
  run_id: string;
  step_id: string | null;
  client_key: string | null;
  position: number;
  name: string;
  media_type: string;
  text: string;
  created_at: string;
}

export interface ImagesTable {
  id: string;
  sha256: string;
  content_type: string;
  width: number;
  height: number;
  size: number;
  thumbnail_sha256: string | null;
  created_at: string;
}

export interface ArtifactsTable {
  id: string;
  project_id: string;
  run_id: string;
  step_id: string | null;
  kind: 'screenshot' | 'video' | 'log' | 'trace' | 'file' | 'visual-diff';
  name: string;
  content_type: string;
  size: number;
  sha256: string;
  idempotency_key: string | null;
  created_at: string;
  created_by: string | null;
}

export interface ArtifactImagesTable {
  artifact_id: string;
  image_id: string;
  role: 'screenshot' | 'baseline' | 'actual' | 'diff';
  position: number;
}

export interface AuditLogTable {
  id: string;
  at: string;
  actor_user_id: string | null;
  action: string;
  target_type: string;
  target_id: string;
  details: string;
  request_id: string | null;
}

/** Background work (SCALE-5): a due task is claimed by one instance for a lease it renews while it runs. */
export interface TasksTable {
  id: string;
  /** Which handler runs it: `import`, `gc`, `retention`, … */
  kind: string;
  /** JSON the handler reads. */
  payload: string;
  /** Unique: enqueueing a key already there adds nothing (`import:<id>`, `periodic:<kind>`). */
  key: string;
  /** Due from then on; a periodic task's next run, a failed task's retry. */
  run_at: string;
  /** Times claimed since it last succeeded: a task that keeps dying with its instance is bounded too. */
  attempts: number;
  /** The instance running it, until `lease_until`; after that any instance may claim it. */
  lease_owner: string | null;
  lease_until: string | null;
  last_error: string | null;
  created_at: string;
}

/**
 * The cross-instance fence between uploads and garbage collection (SCALE-2): an upload's hold on a
 * digest, or a deletion's mark on it (one per digest). A row past `expires_at` is a dead instance's
 * and counts for nothing.
 */
export interface BlobFencesTable {
  id: string;
  sha256: string;
  kind: 'hold' | 'deletion';
  /** The instance that wrote it, for diagnosis. */
  holder: string;
  expires_at: string;
}

export interface Database {
  users: UsersTable;
  api_keys: ApiKeysTable;
  projects: ProjectsTable;
  project_members: ProjectMembersTable;
  project_usage: ProjectUsageTable;
  project_blobs: ProjectBlobsTable;
  run_days: RunDaysTable;
  group_days: GroupDaysTable;
  devices: DevicesTable;
  device_labels: DeviceLabelsTable;
  tests: TestsTable;
  jobs: JobsTable;
  job_rollups: JobRollupsTable;
  imports: ImportsTable;
  test_runs: TestRunsTable;
  steps: StepsTable;
  text_cells: TextCellsTable;
  result_posts: ResultPostsTable;
  images: ImagesTable;
  artifacts: ArtifactsTable;
  artifact_images: ArtifactImagesTable;
  audit_log: AuditLogTable;
  blob_fences: BlobFencesTable;
  tasks: TasksTable;
  failure_groups: FailureGroupsTable;
  failure_occurrences: FailureOccurrencesTable;
  failure_group_tests: FailureGroupTestsTable;
  failure_group_branches: FailureGroupBranchesTable;
  test_health: TestHealthTable;
  test_quarantines: TestQuarantinesTable;
  test_lifecycles: TestLifecyclesTable;
  test_versions: TestVersionsTable;
  test_links: TestLinksTable;
  sso_logins: SsoLoginsTable;
  sso_identities: SsoIdentitiesTable;
  forge_settings: ForgeSettingsTable;
  forge_checks: ForgeChecksTable;
  issue_trackers: IssueTrackersTable;
  issue_links: IssueLinksTable;
  webhooks: WebhooksTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
  signing_keys: SigningKeysTable;
}

export type DB = Kysely<Database>;
/** A database handle or an open transaction: repositories accept either. */
export type Executor = Kysely<Database> | Transaction<Database>;
export type Dialect = 'sqlite' | 'postgres';

/** An image row as an artifact uses it. */
export type ArtifactImageRow = ImagesTable & Pick<ArtifactImagesTable, 'artifact_id' | 'role' | 'position'>;

/** The projects a caller may see, as queries filter by them: every project, or these ids. */
export type VisibleProjects = 'all' | ReadonlySet<string>;
