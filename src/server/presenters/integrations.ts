import type { Static } from 'typebox';
import type { ForgeSettings, IssueLink, IssueTracker } from '../../api/v1/integrations.ts';
import type { ForgeSettingsTable, IssueLinksTable, IssueTrackersTable } from '../db/types.ts';
import { webLinkProblem } from '../outgoing/web-link.ts';

// Integrations as the API shows them (docs/integrations.md): secrets never, only whether one is set.

export function presentForgeSettings(row: ForgeSettingsTable): Static<typeof ForgeSettings> {
  return {
    kind: row.kind,
    apiUrl: row.api_url,
    auth: row.auth,
    tokenSet: row.token !== null,
    appId: row.app_id,
    privateKeySet: row.private_key !== null,
    installationId: row.installation_id,
    checkName: row.check_name,
    pullRequestComment: row.pull_request_comment === 1,
    enabled: row.enabled === 1,
    updatedAt: row.updated_at,
  };
}

export function presentIssueTracker(row: IssueTrackersTable): Static<typeof IssueTracker> {
  return {
    kind: row.kind,
    baseUrl: row.base_url,
    apiVersion: row.api_version === 2 || row.api_version === 3 ? row.api_version : null,
    email: row.email,
    tokenSet: row.token !== null,
    projectKey: row.project_key,
    issueType: row.issue_type,
    repository: row.repository,
    updatedAt: row.updated_at,
  };
}

/**
 * The links to show: one an older version stored from a tracker's answer with an address that is
 * no http(s) link is left out (FORGE-10); it has nothing to open, and its address must not become one.
 */
export const presentIssueLinks = (rows: readonly IssueLinksTable[]): Static<typeof IssueLink>[] =>
  rows.filter((row) => webLinkProblem(row.url) === undefined).map(presentIssueLink);

export function presentIssueLink(row: IssueLinksTable): Static<typeof IssueLink> {
  return {
    id: row.id,
    projectId: row.project_id,
    failureGroupId: row.failure_group_id,
    testRunId: row.run_id,
    tracker: row.tracker,
    key: row.key,
    url: row.url,
    title: row.title,
    status: row.status,
    refreshedAt: row.refreshed_at,
    createdAt: row.created_at,
  };
}
