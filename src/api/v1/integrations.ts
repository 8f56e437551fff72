import { Type } from 'typebox';
import { NAME_MAX, NoContent, Nullable, TEXT_MAX, Timestamp, Uuid } from '../common.ts';
import { endpoint } from '../endpoint.ts';
import { ProjectParams, ProjectRef } from './projects.ts';

// Integrations (FORGE-*, docs/integrations.md): a project's code host (GitHub or GitLab), to which
// its jobs report as check runs or commit statuses, and its issue tracker (Jira or GitHub Issues),
// where error groups and runs are filed. Secrets are write-only: an answer says whether one is set.

/** An http(s) base URL of an API. */
const ApiUrl = Type.String({
  minLength: 10,
  maxLength: 2000,
  pattern: '^[Hh][Tt][Tt][Pp][Ss]?://[!-~]+$',
  description: 'An absolute http(s) URL of printable ASCII, without a trailing slash needed.',
});

/** `owner/name` on GitHub; `group/subgroup/name` on GitLab. */
export const REPOSITORY_PATTERN = '^[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)+$';
export const Repository = Type.String({
  minLength: 3,
  maxLength: 255,
  pattern: REPOSITORY_PATTERN,
  description: 'The repository: `owner/name` on GitHub, the project path (`group/subgroup/name`) on GitLab.',
});

const Secret = (what: string) =>
  Type.String({
    minLength: 1,
    maxLength: 16_384,
    description: `${what} Write-only: never answered (the answer says whether one is set). Left out, the stored one is kept.`,
  });

const ForgeKind = Type.Union([Type.Literal('github'), Type.Literal('gitlab')], {
  description: '`github` (github.com or GitHub Enterprise Server) or `gitlab` (gitlab.com or self-managed).',
});
const FORGE_AUTH_DESCRIPTION =
  '`token`: a personal, fine-grained or project access token; `app`: a GitHub App (`appId`, `privateKey`, `installationId`).';
const ForgeAuth = Type.Union([Type.Literal('token'), Type.Literal('app')], { description: FORGE_AUTH_DESCRIPTION });
const AppNumber = Type.String({ pattern: '^[0-9]{1,20}$', maxLength: 20 });
const CheckName = Type.String({
  minLength: 1,
  maxLength: 100,
  description: 'The check run (GitHub) or commit status (GitLab) name. Default `Attest`.',
});

export const ForgeSettings = Type.Object(
  {
    kind: ForgeKind,
    apiUrl: {
      ...ApiUrl,
      description: 'The API root: `https://api.github.com`, `https://ghe.example.com/api/v3`, `https://gitlab.com/api/v4`.',
    },
    auth: ForgeAuth,
    tokenSet: Type.Boolean({ description: 'Whether a token is stored.' }),
    appId: Nullable(AppNumber),
    privateKeySet: Type.Boolean({ description: "Whether a GitHub App's private key is stored." }),
    installationId: Nullable(AppNumber),
    checkName: CheckName,
    pullRequestComment: Type.Boolean({
      description:
        'Whether one comment on the pull (merge) request of the commit is kept up to date (edited in place, never one per push).',
    }),
    enabled: Type.Boolean(),
    updatedAt: Timestamp,
  },
  { additionalProperties: false },
);

export const ForgeSettingsAnswer = Type.Object(
  { forge: { ...Nullable(ForgeSettings), description: 'Null while the project has no code host configured.' } },
  { additionalProperties: false },
);

export const getForgeSettings = endpoint({
  operationId: 'getForgeSettings',
  method: 'GET',
  path: '/projects/{projectId}/integrations/forge',
  summary: "The project's code host (GitHub or GitLab) configuration, secrets left out (manager).",
  tag: 'Integrations',
  access: { scope: 'project', role: 'manager' },
  params: ProjectParams,
  responses: { 200: ForgeSettingsAnswer },
});

export const putForgeSettings = endpoint({
  operationId: 'putForgeSettings',
  method: 'PUT',
  path: '/projects/{projectId}/integrations/forge',
  summary: "Set the project's code host: its jobs then report as GitHub check runs or GitLab commit statuses (manager).",
  description:
    'A job created with a `commit` and a `repository` reports to it (FORGE-2): on GitHub a check run created when the job is ' +
    'created, updated as its runs start and finish, and completed with its conclusion, a summary and one annotation per failed ' +
    'test (at the file and line its trace names, else under the test name); on GitLab a commit status. With ' +
    '`pullRequestComment`, one comment on the pull (merge) request of the commit is kept up to date, found again by a hidden ' +
    'marker. Calls are made by background tasks, retried on failure, never inside a request.\n\n' +
    'Secrets (`token`, `privateKey`) are write-only: left out, the stored ones are kept; they are never answered. A `PUT` that ' +
    'changes `kind` or `apiUrl` must give the secret in use again (400 `INVALID_INPUT` naming it otherwise, and nothing ' +
    'changes): a stored secret is never sent to a place it was not given for (FORGE-8). `auth: token` ' +
    'needs a token (given now or stored); `auth: app` (GitHub only) needs `appId`, `installationId` and a private key. ' +
    '`apiUrl` defaults to `https://api.github.com` or `https://gitlab.com/api/v4`; loopback and private addresses are refused ' +
    'unless the instance allows them (`ATTEST_INTEGRATIONS_ALLOW_PRIVATE`). Audited (`forge.set`, with the previous place when ' +
    'it moved), secrets left out.',
  tag: 'Integrations',
  access: { scope: 'project', role: 'manager' },
  params: ProjectParams,
  body: Type.Object(
    {
      kind: ForgeKind,
      apiUrl: Type.Optional(ApiUrl),
      auth: Type.Optional(
        Type.Union([Type.Literal('token'), Type.Literal('app')], { description: `${FORGE_AUTH_DESCRIPTION} Default \`token\`.` }),
      ),
      token: Type.Optional(Secret('The access token.')),
      appId: Type.Optional(AppNumber),
      privateKey: Type.Optional(Secret("The GitHub App's private key, PEM.")),
      installationId: Type.Optional(AppNumber),
      checkName: Type.Optional(CheckName),
      pullRequestComment: Type.Optional(Type.Boolean({ description: 'Default false.' })),
      enabled: Type.Optional(Type.Boolean({ description: 'Default true; false keeps the configuration and sends nothing.' })),
    },
    { additionalProperties: false },
  ),
  responses: { 200: ForgeSettingsAnswer },
});

export const deleteForgeSettings = endpoint({
  operationId: 'deleteForgeSettings',
  method: 'DELETE',
  path: '/projects/{projectId}/integrations/forge',
  summary: "Remove the project's code host with its secrets (manager); idempotent.",
  description: 'Jobs stop reporting to it; check runs already sent stay as they are. Audited (`forge.delete`).',
  tag: 'Integrations',
  access: { scope: 'project', role: 'manager' },
  params: ProjectParams,
  responses: { 204: NoContent },
});

const TrackerKind = Type.Union([Type.Literal('jira'), Type.Literal('github')], {
  description: '`jira` (Cloud, Server or Data Center) or `github` (GitHub Issues).',
});
const JiraProjectKey = Type.String({ pattern: '^[A-Z][A-Z0-9_]{0,49}$', maxLength: 50 });
const IssueType = Type.String({ minLength: 1, maxLength: 100, description: 'The Jira issue type to file, default `Bug`.' });

export const IssueTracker = Type.Object(
  {
    kind: TrackerKind,
    baseUrl: {
      ...ApiUrl,
      description: 'Jira: the site (`https://acme.atlassian.net`); GitHub: the API root (`https://api.github.com`).',
    },
    apiVersion: Nullable(Type.Union([Type.Literal(2), Type.Literal(3)], { description: "Jira's REST API version." })),
    email: Nullable(
      Type.String({
        maxLength: 254,
        description: 'Jira Cloud: the account the API token belongs to; null: the token is a personal access token.',
      }),
    ),
    tokenSet: Type.Boolean({ description: 'Whether a token is stored.' }),
    projectKey: Nullable(JiraProjectKey),
    issueType: Nullable(IssueType),
    repository: Nullable(Repository),
    updatedAt: Timestamp,
  },
  { additionalProperties: false },
);

export const IssueTrackerAnswer = Type.Object(
  { tracker: { ...Nullable(IssueTracker), description: 'Null while the project has no issue tracker configured.' } },
  { additionalProperties: false },
);

export const getIssueTracker = endpoint({
  operationId: 'getIssueTracker',
  method: 'GET',
  path: '/projects/{projectId}/integrations/issue-tracker',
  summary: "The project's issue tracker (Jira or GitHub Issues) configuration, its token left out (viewer).",
  description: 'Viewers see it too, so the web interface knows whether to offer "Create issue"; the token is never answered.',
  tag: 'Integrations',
  access: { scope: 'project', role: 'viewer' },
  params: ProjectParams,
  responses: { 200: IssueTrackerAnswer },
});

export const putIssueTracker = endpoint({
  operationId: 'putIssueTracker',
  method: 'PUT',
  path: '/projects/{projectId}/integrations/issue-tracker',
  summary: 'Set the project\'s issue tracker, where "Create issue" files error groups and runs (manager).',
  description:
    'Jira needs `baseUrl`, `projectKey` and a token: with `email`, an Atlassian API token (basic authentication, Jira Cloud); ' +
    'without, a personal access token (bearer, Server and Data Center). `apiVersion` 3 (default) writes the description in ' +
    "Atlassian's document format, 2 as text. GitHub Issues needs `repository` and a token; `baseUrl` defaults to " +
    '`https://api.github.com`. The token is write-only: left out, the stored one is kept, unless the `PUT` changes `kind` or ' +
    '`baseUrl`: then the token must be given again (400 `INVALID_INPUT` naming `/body/token` otherwise, and nothing changes), ' +
    'so a stored token is never sent to a host it was not given for (FORGE-8). Loopback, private and other special-purpose ' +
    'addresses are refused unless the instance allows them (`ATTEST_INTEGRATIONS_ALLOW_PRIVATE`). Audited ' +
    '(`issue-tracker.set`, with the previous place when it moved).',
  tag: 'Integrations',
  access: { scope: 'project', role: 'manager' },
  params: ProjectParams,
  body: Type.Object(
    {
      kind: TrackerKind,
      baseUrl: Type.Optional(ApiUrl),
      apiVersion: Type.Optional(Type.Union([Type.Literal(2), Type.Literal(3)])),
      email: Type.Optional(Nullable(Type.String({ minLength: 3, maxLength: 254 }))),
      token: Type.Optional(Secret('The API token or personal access token.')),
      projectKey: Type.Optional(JiraProjectKey),
      issueType: Type.Optional(IssueType),
      repository: Type.Optional(Repository),
    },
    { additionalProperties: false },
  ),
  responses: { 200: IssueTrackerAnswer },
});

export const deleteIssueTracker = endpoint({
  operationId: 'deleteIssueTracker',
  method: 'DELETE',
  path: '/projects/{projectId}/integrations/issue-tracker',
  summary: "Remove the project's issue tracker with its token (manager); idempotent.",
  description: 'Issue links already made stay, and are no longer refreshed. Audited (`issue-tracker.delete`).',
  tag: 'Integrations',
  access: { scope: 'project', role: 'manager' },
  params: ProjectParams,
  responses: { 204: NoContent },
});

export const IssueLink = Type.Object(
  {
    id: Uuid,
    projectId: Uuid,
    failureGroupId: Nullable(Uuid),
    testRunId: Nullable(Uuid),
    tracker: TrackerKind,
    key: Type.String({ maxLength: 100, description: 'The Jira key (`SHOP-12`) or the GitHub issue number (`#12`).' }),
    url: Type.String({
      minLength: 10,
      maxLength: 2048,
      pattern: '^[Hh][Tt][Tt][Pp][Ss]?://[!-~]+$',
      description: 'The issue on the tracker, for people: an http(s) URL. A tracker answering anything else is refused (FORGE-10).',
    }),
    title: Type.String({ maxLength: NAME_MAX }),
    status: Nullable(Type.String({ maxLength: 100, description: 'As the tracker names it (`To Do`, `open`, `closed`), as last read.' })),
    refreshedAt: Nullable({ ...Timestamp, description: 'When the title and status were last read from the tracker.' }),
    createdAt: Timestamp,
  },
  { additionalProperties: false },
);

const CreateIssueBody = Type.Object(
  {
    title: Type.Optional(Type.String({ minLength: 1, maxLength: 250, description: "The issue's title; default from the failure." })),
    note: Type.Optional(Type.String({ maxLength: TEXT_MAX, description: 'Text put first in the description.' })),
  },
  { additionalProperties: false },
);

const CREATE_DESCRIPTION =
  "Files an issue on the project's tracker with the failure (its message, category, first frames), the steps of the failed " +
  'run and links back to Attest, stores the link (its key, URL, title and status), and answers it. The tracker is called in ' +
  'the request, since the person waits for the key; a tracker that refuses or cannot be reached answers 502 ' +
  '`UPSTREAM_FAILED` and nothing is stored (its `detail` says why, credentials masked), as does one answering an issue ' +
  'address that is not an http(s) URL (FORGE-10). No tracker configured: 409 `STATE_CONFLICT`. Titles and statuses are then ' +
  'refreshed in the background (FORGE-6).';

export const createFailureGroupIssue = endpoint({
  operationId: 'createFailureGroupIssue',
  method: 'POST',
  path: '/projects/{projectId}/failures/{groupId}/issue',
  summary: "File an issue for an error group on the project's tracker; the group's `issueUrl` becomes its link (tester).",
  description: `${CREATE_DESCRIPTION} The group's \`issueUrl\` is set to the issue.`,
  tag: 'Integrations',
  access: { scope: 'project', role: 'tester' },
  params: Type.Object({ projectId: ProjectRef, groupId: Uuid }, { additionalProperties: false }),
  body: CreateIssueBody,
  responses: { 201: IssueLink },
});

export const createRunIssue = endpoint({
  operationId: 'createRunIssue',
  method: 'POST',
  path: '/testmgmt/testruns/{testRunId}/issue',
  summary: "File an issue for a run's failure on its project's tracker (tester).",
  description: CREATE_DESCRIPTION,
  tag: 'Integrations',
  access: { scope: 'project', role: 'tester' },
  params: Type.Object({ testRunId: Uuid }, { additionalProperties: false }),
  body: CreateIssueBody,
  responses: { 201: IssueLink },
});

export const listIssueLinks = endpoint({
  operationId: 'listIssueLinks',
  method: 'GET',
  path: '/projects/{projectId}/issue-links',
  summary: 'The issues filed from Attest for an error group or a run, newest first, with their title and status (viewer).',
  description: "Give `failureGroupId` or `testRunId` (or both: the links of either). Without either, the project's latest 100.",
  tag: 'Integrations',
  access: { scope: 'project', role: 'viewer' },
  params: ProjectParams,
  querystring: Type.Object({ failureGroupId: Type.Optional(Uuid), testRunId: Type.Optional(Uuid) }, { additionalProperties: false }),
  responses: { 200: Type.Object({ items: Type.Array(IssueLink, { maxItems: 100 }) }, { additionalProperties: false }) },
});
