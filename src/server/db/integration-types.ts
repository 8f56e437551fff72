// Row shapes of the integration tables (migration 0020, docs/integrations.md), beside types.ts,
// which holds the Database that lists them. Secrets are plain columns: the API never answers them.

/** A project's code host (FORGE-1). */
export interface ForgeSettingsTable {
  project_id: string;
  kind: 'github' | 'gitlab';
  api_url: string;
  auth: 'token' | 'app';
  /** Secret: a personal or project access token. */
  token: string | null;
  app_id: string | null;
  /** Secret: a GitHub App's private key (PEM). */
  private_key: string | null;
  installation_id: string | null;
  check_name: string;
  pull_request_comment: number;
  enabled: number;
  updated_at: string;
  updated_by: string | null;
}

/** A job that reports to its project's code host (FORGE-2). */
export interface ForgeChecksTable {
  job_id: string;
  project_id: string;
  repository: string;
  commit_sha: string;
  /** GitHub's check run id, once created. */
  check_run_id: string | null;
  /** The state last sent (a signature of status and counts); null before the first. */
  synced: string | null;
  /** 1 once the job's final state was sent. */
  settled: number;
  last_error: string | null;
  created_at: string;
  updated_at: string;
}

/** A project's issue tracker (FORGE-5). */
export interface IssueTrackersTable {
  project_id: string;
  kind: 'jira' | 'github';
  base_url: string;
  /** Jira's REST version, 2 or 3. */
  api_version: number | null;
  /** Jira Cloud: the account's e-mail (basic auth with the token); null: the token is a personal access token (bearer). */
  email: string | null;
  /** Secret. */
  token: string | null;
  project_key: string | null;
  issue_type: string | null;
  /** GitHub Issues: `owner/name`. */
  repository: string | null;
  updated_at: string;
  updated_by: string | null;
}

/** An issue filed from Attest (FORGE-6). */
export interface IssueLinksTable {
  id: string;
  project_id: string;
  failure_group_id: string | null;
  run_id: string | null;
  tracker: 'jira' | 'github';
  key: string;
  url: string;
  title: string;
  status: string | null;
  refreshed_at: string | null;
  created_at: string;
  created_by: string | null;
}
