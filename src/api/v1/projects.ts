import { Type } from 'typebox';
import { Description, Email, NAME_MAX, Name, NoContent, Nullable, Page, PageQuery, Timestamp, UUID_PATTERN, Uuid } from '../common.ts';
import { endpoint } from '../endpoint.ts';

/** A branch name, as run labels take it: free text on one line. */
const BranchName = Type.String({ minLength: 1, maxLength: NAME_MAX, pattern: '^[^\\r\\n]+$' });

const ProjectKey = Type.String({ pattern: '^[A-Z][A-Z0-9]{1,15}$', maxLength: 16, description: 'Short upper-case key, e.g. WEB.' });

/** Longest a retention period may be: 100 years, which is forever for test results. */
const RETENTION_DAYS_MAX = 36_500;

/**
 * How long a project keeps its finished runs (RET-2). A run stays while any rule set keeps it: it
 * finished within `days` (`failedDays` for failed and broken runs), or it is among the last
 * `lastRunsPerTest` finished runs of its test. Runs marked `keep` are never expired.
 */
export const RetentionPolicy = Type.Object(
  {
    days: Type.Optional(Type.Integer({ minimum: 1, maximum: RETENTION_DAYS_MAX, description: 'Keep finished runs this many days.' })),
    failedDays: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: RETENTION_DAYS_MAX,
        description: 'Keep failed and broken runs this many days instead (longer, usually).',
      }),
    ),
    lastRunsPerTest: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 100_000, description: 'Keep at least the last this many finished runs of each test.' }),
    ),
  },
  { additionalProperties: false },
);

/** Largest quota that can be set: 1 PiB, far below 2^53 so byte counts stay exact in JSON. */
const QUOTA_BYTES_MAX = 2 ** 50;

const Count = (description: string) => Type.Integer({ minimum: 0, description });

/**
 * How much a project holds (RET-4), kept current as runs and artifacts come and go: reading it
 * never scans the project.
 */
export const ProjectUsage = Type.Object(
  {
    runs: Count('Test runs the project holds.'),
    artifacts: Count('Artifacts (screenshots, videos, logs, files, visual diffs) of those runs.'),
    logicalBytes: Count('Sum of the artifact sizes, every upload counted, as a copy would take.'),
    storedBytes: Count(
      "Bytes of the distinct blobs the project's artifacts reference (identical uploads stored once). " +
        'A blob that another project uses too is counted in each; derived thumbnails are not counted. The quota applies to this figure.',
    ),
    quotaBytes: Nullable(Count('Most stored bytes the project may take; null: no quota.')),
  },
  { additionalProperties: false },
);

/** Defaults of the triage thresholds (docs/triage.md), for a project that sets none. */
export const TRIAGE_DEFAULTS = {
  incidentMinFailures: 20,
  incidentShare: 0.5,
  brokenAfter: 5,
  healthWindow: 30,
  fixPasses: 20,
  autoQuarantine: false,
  retryWindow: 20,
  retryMinSamples: 1,
  retryMinEvents: 1,
  rateWindow: 30,
  rateMinSamples: 10,
  rateThreshold: 0.05,
} as const;

const triageFields = {
  incidentMinFailures: Type.Integer({
    minimum: 1,
    maximum: 100_000,
    description: `The outage guard (TRIAGE-4): failed tests a job needs before one cause can make it an incident (default ${TRIAGE_DEFAULTS.incidentMinFailures}).`,
  }),
  incidentShare: Type.Number({
    minimum: 0,
    maximum: 1,
    description: `The share of a job's failed tests one cause must exceed to make it an incident (default ${TRIAGE_DEFAULTS.incidentShare}).`,
  }),
  brokenAfter: Type.Integer({
    minimum: 1,
    maximum: 1000,
    description: `Failing outcomes in a row that make a test broken, never flaky (TRIAGE-6; default ${TRIAGE_DEFAULTS.brokenAfter}).`,
  }),
  healthWindow: Type.Integer({
    minimum: 2,
    maximum: 1000,
    description: `Latest job outcomes a test's health considers (TRIAGE-6; default ${TRIAGE_DEFAULTS.healthWindow}).`,
  }),
  fixPasses: Type.Integer({
    minimum: 1,
    maximum: 1000,
    description: `Passing runs in a row on its branch that verify a fix attempt (TRIAGE-13; default ${TRIAGE_DEFAULTS.fixPasses}).`,
  }),
  autoQuarantine: Type.Boolean({
    description:
      'Quarantine a test as soon as its health turns flaky (never a broken one), owner `attest` for the default 14 days ' +
      '(TRIAGE-13; default false).',
  }),
  retryWindow: Type.Integer({
    minimum: 1,
    maximum: 1000,
    description: `The retry monitor (TRIAGE-11): latest outcomes on the branch it reads for a failure then a pass in one job, or a commit with both verdicts (default ${TRIAGE_DEFAULTS.retryWindow}).`,
  }),
  retryMinSamples: Type.Integer({
    minimum: 1,
    maximum: 1000,
    description: `Outcomes the retry monitor needs before it may fire (default ${TRIAGE_DEFAULTS.retryMinSamples}).`,
  }),
  retryMinEvents: Type.Integer({
    minimum: 1,
    maximum: 1000,
    description: `Retries (flaky outcomes and split commits) within its window that fire the retry monitor (default ${TRIAGE_DEFAULTS.retryMinEvents}).`,
  }),
  rateWindow: Type.Integer({
    minimum: 1,
    maximum: 1000,
    description: `The rate monitor (TRIAGE-11): latest outcomes on the branch whose failure rate it reads (default ${TRIAGE_DEFAULTS.rateWindow}).`,
  }),
  rateMinSamples: Type.Integer({
    minimum: 1,
    maximum: 1000,
    description: `Outcomes the rate monitor needs before it may fire (default ${TRIAGE_DEFAULTS.rateMinSamples}).`,
  }),
  rateThreshold: Type.Number({
    exclusiveMinimum: 0,
    maximum: 1,
    description: `The failure rate at or above which the rate monitor fires (default ${TRIAGE_DEFAULTS.rateThreshold}); a failing streak not yet followed by a pass, and a break of brokenAfter failures in a row, are not counted.`,
  }),
};

/** The triage thresholds in effect: the project's own, the defaults for the rest. */
export const TriageSettings = Type.Object(triageFields, { additionalProperties: false });

/** A change of the triage thresholds: the fields given replace the project's own; `null` returns them all to the defaults. */
export const TriageSettingsChange = Type.Object(
  {
    incidentMinFailures: Type.Optional(triageFields.incidentMinFailures),
    incidentShare: Type.Optional(triageFields.incidentShare),
    brokenAfter: Type.Optional(triageFields.brokenAfter),
    healthWindow: Type.Optional(triageFields.healthWindow),
    fixPasses: Type.Optional(triageFields.fixPasses),
    autoQuarantine: Type.Optional(triageFields.autoQuarantine),
    retryWindow: Type.Optional(triageFields.retryWindow),
    retryMinSamples: Type.Optional(triageFields.retryMinSamples),
    retryMinEvents: Type.Optional(triageFields.retryMinEvents),
    rateWindow: Type.Optional(triageFields.rateWindow),
    rateMinSamples: Type.Optional(triageFields.rateMinSamples),
    rateThreshold: Type.Optional(triageFields.rateThreshold),
  },
  { additionalProperties: false },
);

export const Project = Type.Object(
  {
    id: Uuid,
    key: ProjectKey,
    name: Type.String({ maxLength: NAME_MAX }),
    description: Description,
    createdAt: Timestamp,
    updatedAt: Timestamp,
    retention: Nullable({ ...RetentionPolicy, description: "The project's own retention policy; null follows the instance's default." }),
    usage: ProjectUsage,
    triage: { ...TriageSettings, description: 'The triage thresholds in effect (`PATCH` with `triage` sets them).' },
    defaultBranch: Nullable({
      ...BranchName,
      description:
        'The branch a job on another branch is compared with (TRIAGE-16): the one set with `PATCH`, else the branch most of ' +
        "the project's latest 100 jobs ran on; null while neither is known.",
    }),
    defaultBranchInferred: Type.Boolean({
      description: '`true` while `defaultBranch` is not set but inferred from the jobs; `false` once it is set.',
    }),
  },
  { additionalProperties: false },
);

/**
 * A project in a path: its id (a UUID) or its short key in any case (`WEB`, `web`). The two forms
 * cannot be confused: a key starts with a letter and has no hyphen.
 */
export const PROJECT_REF_PATTERN = `^(?:${UUID_PATTERN}|[A-Za-z][A-Za-z0-9]{1,15})$`;
export const ProjectRef = Type.String({
  pattern: PROJECT_REF_PATTERN,
  maxLength: 36,
  description: "The project's id (a UUID) or its short key, compared case-insensitively (`WEB` or `web`).",
});

export const ProjectParams = Type.Object({ projectId: ProjectRef }, { additionalProperties: false });

/**
 * A project member. An e-mail is half of an old-format credential, so only those who manage
 * membership see it: managers (their key not read-only) and admins. Everyone else gets the
 * display name and the user id (ERR-4).
 */
export const Member = Type.Object(
  {
    userId: Uuid,
    email: Type.Optional({
      ...Email,
      description: 'Present only when the caller is a manager (with a full key) or an admin; absent for everyone else.',
    }),
    name: Type.String({ maxLength: NAME_MAX }),
    addedAt: Timestamp,
  },
  { additionalProperties: false },
);

export const listProjects = endpoint({
  operationId: 'listProjects',
  method: 'GET',
  path: '/projects',
  summary: 'Projects the caller can see (admins see all), by key.',
  description: '`?key=WEB` (any case) narrows the list to the visible project with that key: one item, or none.',
  tag: 'Projects',
  access: { scope: 'global', role: 'viewer' },
  querystring: Type.Object(
    {
      ...PageQuery,
      key: Type.Optional(
        Type.String({ pattern: '^[A-Za-z][A-Za-z0-9]{1,15}$', maxLength: 16, description: 'Only the project with this key (any case).' }),
      ),
    },
    { additionalProperties: false },
  ),
  responses: { 200: Page(Project) },
});

export const createProject = endpoint({
  operationId: 'createProject',
  method: 'POST',
  path: '/projects',
  summary: 'Create a project (manager); the creator becomes a member.',
  tag: 'Projects',
  access: { scope: 'global', role: 'manager' },
  body: Type.Object({ key: ProjectKey, name: Name, description: Type.Optional(Description) }, { additionalProperties: false }),
  responses: { 201: Project },
});

export const getProject = endpoint({
  operationId: 'getProject',
  method: 'GET',
  path: '/projects/{projectId}',
  summary: 'Get a project.',
  tag: 'Projects',
  access: { scope: 'project', role: 'viewer' },
  params: ProjectParams,
  responses: { 200: Project },
});

export const updateProject = endpoint({
  operationId: 'updateProject',
  method: 'PATCH',
  path: '/projects/{projectId}',
  summary: "Change a project's name, description, retention policy, triage thresholds, default branch (manager) or quota (admin).",
  description:
    '`retention` sets how long the project keeps its finished runs (an object; `null` returns to the instance default, ' +
    '`ATTEST_RETENTION_*`). A background sweep deletes expired runs in small batches; `attest retention --dry-run` ' +
    'shows what it would delete. Runs marked `keep` are never expired.\n\n' +
    '`quotaBytes` caps the stored bytes of the project (`usage.storedBytes`; `null` removes the cap). Only an admin ' +
    'sets it (403 for anyone else). An upload that would take the project past it is refused with 507 ' +
    '`QUOTA_EXCEEDED` and stores nothing; a quota below the current usage refuses new bytes and deletes nothing.\n\n' +
    '`triage` sets the thresholds of the outage guard and of test health (docs/triage.md): the fields given replace the ' +
    "project's own, the others stay; `null` returns them all to the defaults. Audited (`project.triage`).\n\n" +
    '`defaultBranch` names the branch jobs on other branches are compared with (the comparison, `attest gate` and ' +
    '`job.completed`; docs/triage.md); `null` returns to inferring it from the jobs. Audited (`project.default-branch`).',
  tag: 'Projects',
  access: { scope: 'project', role: 'manager' },
  params: ProjectParams,
  body: Type.Object(
    {
      name: Type.Optional(Name),
      description: Type.Optional(Description),
      retention: Type.Optional(Nullable(RetentionPolicy)),
      quotaBytes: Type.Optional(
        Nullable(Type.Integer({ minimum: 0, maximum: QUOTA_BYTES_MAX, description: 'Most stored bytes; null: no quota (admin only).' })),
      ),
      triage: Type.Optional(Nullable(TriageSettingsChange)),
      defaultBranch: Type.Optional(
        Nullable({ ...BranchName, description: 'The default branch (TRIAGE-16); null: inferred from the jobs again.' }),
      ),
    },
    { additionalProperties: false, minProperties: 1 },
  ),
  responses: { 200: Project },
});

export const getProjectUsage = endpoint({
  operationId: 'getProjectUsage',
  method: 'GET',
  path: '/projects/{projectId}/usage',
  summary: 'How much the project holds: runs, artifacts, logical and stored bytes, and its quota.',
  description:
    'The same figures as `usage` in the project, read from counters the writes keep current (no scan). ' +
    'Space freed by deletions and retention returns to the disk at the next garbage collection.',
  tag: 'Projects',
  access: { scope: 'project', role: 'viewer' },
  params: ProjectParams,
  responses: { 200: ProjectUsage },
});

export const deleteProject = endpoint({
  operationId: 'deleteProject',
  method: 'DELETE',
  path: '/projects/{projectId}',
  summary: 'Delete a project and everything it owns (manager).',
  tag: 'Projects',
  access: { scope: 'project', role: 'manager' },
  params: ProjectParams,
  responses: { 204: NoContent },
});

export const listMembers = endpoint({
  operationId: 'listMembers',
  method: 'GET',
  path: '/projects/{projectId}/members',
  summary: "A project's members, by name. E-mails are shown to managers and admins only.",
  tag: 'Projects',
  access: { scope: 'project', role: 'viewer' },
  params: ProjectParams,
  querystring: Type.Object({ ...PageQuery }, { additionalProperties: false }),
  responses: { 200: Page(Member) },
});

const MemberParams = Type.Object({ projectId: ProjectRef, email: Email }, { additionalProperties: false });

export const addMember = endpoint({
  operationId: 'addMember',
  method: 'PUT',
  path: '/projects/{projectId}/members/{email}',
  summary: 'Add a user to a project (manager); adding a member twice is a no-op.',
  tag: 'Projects',
  access: { scope: 'project', role: 'manager' },
  params: MemberParams,
  responses: { 200: Member },
});

export const removeMember = endpoint({
  operationId: 'removeMember',
  method: 'DELETE',
  path: '/projects/{projectId}/members/{email}',
  summary: 'Remove a user from a project (manager).',
  tag: 'Projects',
  access: { scope: 'project', role: 'manager' },
  params: MemberParams,
  responses: { 204: NoContent },
});
