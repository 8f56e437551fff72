import { Type } from 'typebox';
import { NAME_MAX, Nullable, PageQuery, TEXT_MAX, Timestamp, Uuid } from '../common.ts';
import { endpoint } from '../endpoint.ts';
import { ProjectRef } from './projects.ts';
import { RunLabel } from './runs.ts';

// Error groups (TRIAGE-2), their triage (TRIAGE-3) and the project's category rules: docs/triage.md.

export const FAILURE_STATUSES = ['new', 'known', 'regressed', 'resolved'] as const;
export const FailureStatus = Type.Union([Type.Literal('new'), Type.Literal('known'), Type.Literal('regressed'), Type.Literal('resolved')], {
  description:
    '`new` until the cause occurs in a second job (a run without a job is a job of its own), then `known`; a `resolved` group that ' +
    'occurs again is `regressed`. Triage may set any of them.',
});

/** ReportPortal's defect types, so its imports map. */
export const DEFECT_TYPES = ['product_bug', 'automation_bug', 'system_issue', 'no_defect', 'to_investigate'] as const;
export const DefectType = Type.Union(
  [
    Type.Literal('product_bug'),
    Type.Literal('automation_bug'),
    Type.Literal('system_issue'),
    Type.Literal('no_defect'),
    Type.Literal('to_investigate'),
  ],
  { description: "ReportPortal's defect types; `to_investigate` until a rule or a person says otherwise." },
);

export const FAILURE_CATEGORIES = ['assertion', 'timeout', 'network', 'crash', 'element', 'other'] as const;
export const FailureCategory = Type.Union(
  [
    Type.Literal('assertion'),
    Type.Literal('timeout'),
    Type.Literal('network'),
    Type.Literal('crash'),
    Type.Literal('element'),
    Type.Literal('other'),
  ],
  { description: "The coarse kind of the failure, from the normaliser's signature." },
);

/** Most groups one bulk triage names. */
export const BULK_TRIAGE_MAX = 100;
/** Most category rules a project holds, and the longest regex one may carry. */
export const FAILURE_RULES_MAX = 100;
export const RULE_REGEX_MAX = 1000;
/** Most occurrences a group's answer lists, and the days its trend covers. */
export const LATEST_OCCURRENCES_MAX = 20;
export const TREND_DAYS = 14;

const IssueUrl = Type.String({
  minLength: 10,
  maxLength: 2048,
  pattern: '^[Hh][Tt][Tt][Pp][Ss]?://[!-~]+$',
  description: 'A link to the issue tracking the cause: an absolute http(s) URL of printable ASCII (percent-encode the rest).',
});
const Assignee = Type.String({ minLength: 1, maxLength: NAME_MAX, description: 'Who looks at it: free text, usually an e-mail.' });
const Comment = Type.String({ maxLength: TEXT_MAX });

export const FailureGroup = Type.Object(
  {
    id: Uuid,
    projectId: Uuid,
    fingerprint: Type.String({ maxLength: 64, description: 'Hex SHA-256 of the normalised message and project frames.' }),
    title: Type.String({ maxLength: TEXT_MAX, description: 'The normalised message, bounded: what a list shows.' }),
    message: Type.String({ maxLength: TEXT_MAX, description: "The first occurrence's message as written." }),
    frames: Type.Array(Type.String({ maxLength: 1000 }), {
      maxItems: 10,
      description: 'The first project frames, `file:function`, innermost first.',
    }),
    category: FailureCategory,
    action: Nullable(Type.String({ maxLength: 1000, description: 'The matcher, assertion method or step that failed.' })),
    target: Nullable(Type.String({ maxLength: 1000, description: 'The locator, URL template or address it failed on.' })),
    rule: Nullable(Type.String({ maxLength: NAME_MAX, description: 'The name of the first category rule that matched the group.' })),
    status: FailureStatus,
    defectType: DefectType,
    comment: Nullable(Comment),
    issueUrl: Nullable(IssueUrl),
    assignee: Nullable(Assignee),
    firstSeenAt: Timestamp,
    firstSeenRunId: Uuid,
    firstSeenJobId: Nullable(Uuid),
    lastSeenAt: Timestamp,
    lastSeenRunId: Uuid,
    lastSeenJobId: Nullable(Uuid),
    occurrences: Type.Integer({
      minimum: 0,
      description: 'Failed runs with this cause (a run counts once, however many of its steps share it).',
    }),
    affectedTests: Type.Integer({ minimum: 0, description: 'Distinct tests (test id, else run name) it occurred in.' }),
    affectedBranches: Type.Integer({ minimum: 0, description: 'Distinct branches it occurred on (runs without a branch not counted).' }),
    triagedAt: Nullable({ ...Timestamp, description: 'When someone last triaged it by hand; null while only rules named it.' }),
    triagedBy: Nullable(Uuid),
  },
  { additionalProperties: false },
);

export const FailureOccurrence = Type.Object(
  {
    runId: Uuid,
    runName: Type.String({ maxLength: NAME_MAX }),
    stepId: Nullable({ ...Uuid, description: 'The first failed step with this cause; null for a run-level error.' }),
    stepTitle: Nullable(Type.String({ maxLength: 1000 })),
    testId: Nullable(Uuid),
    jobId: Nullable(Uuid),
    branch: Nullable(RunLabel),
    at: { ...Timestamp, description: "The run's finish time." },
    screenshotId: Nullable({ ...Uuid, description: "A screenshot artifact of the run (the failing step's, else the run's last), if any." }),
  },
  { additionalProperties: false },
);

export const FailureGroupDetails = Type.Object(
  {
    ...FailureGroup.properties,
    latestOccurrences: Type.Array(FailureOccurrence, {
      maxItems: LATEST_OCCURRENCES_MAX,
      description: `The latest occurrences still stored, newest first (at most ${LATEST_OCCURRENCES_MAX}).`,
    }),
    trend: Type.Array(
      Type.Object(
        { day: Type.String({ format: 'date', maxLength: 10 }), occurrences: Type.Integer({ minimum: 0 }) },
        { additionalProperties: false },
      ),
      { maxItems: TREND_DAYS, description: `Occurrences per UTC day over the last ${TREND_DAYS} days, oldest first.` },
    ),
  },
  { additionalProperties: false },
);

/** What triage may change; `null` clears a text field. */
export const FailureTriage = Type.Object(
  {
    defectType: Type.Optional(DefectType),
    comment: Type.Optional(Nullable(Comment)),
    issueUrl: Type.Optional(Nullable(IssueUrl)),
    assignee: Type.Optional(Nullable(Assignee)),
    status: Type.Optional(FailureStatus),
  },
  { additionalProperties: false, minProperties: 1 },
);

const StatusName = Type.Union([Type.Literal('failed'), Type.Literal('broken')]);
const RuleRegex = (what: string) =>
  Type.String({
    minLength: 1,
    maxLength: RULE_REGEX_MAX,
    description: `A regular expression in RE2 syntax (no backreferences or lookaround) that must match the whole ${what} (\`s\` mode), as Allure's do.`,
  });

/** One category rule: the shape of an entry of Allure's `categories.json`, plus a defect type. */
export const FailureRule = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: NAME_MAX }),
    messageRegex: Type.Optional(RuleRegex('error message')),
    traceRegex: Type.Optional(RuleRegex('trace')),
    matchedStatuses: Type.Optional(Type.Array(StatusName, { maxItems: 2, description: 'The verdicts the rule applies to; absent: both.' })),
    defectType: Type.Optional(DefectType),
  },
  // Allure's categories.json carries `flaky` and `description`; they are accepted and not kept.
  { additionalProperties: true, maxProperties: 20 },
);

/** Allure's statuses in a categories.json (`passed` and `skipped` match no failure, so they are accepted and dropped). */
const AllureStatusName = Type.Union([StatusName, Type.Literal('passed'), Type.Literal('skipped'), Type.Literal('unknown')]);
const AllureCategory = Type.Object(
  {
    ...FailureRule.properties,
    matchedStatuses: Type.Optional(Type.Array(AllureStatusName, { maxItems: 5 })),
  },
  { additionalProperties: true, maxProperties: 20 },
);

export const FailureRules = Type.Object(
  { rules: Type.Array(FailureRule, { maxItems: FAILURE_RULES_MAX, description: 'In order: the first rule that matches names a group.' }) },
  { additionalProperties: false },
);

const ProjectParams = Type.Object({ projectId: ProjectRef }, { additionalProperties: false });
const GroupParams = Type.Object({ projectId: ProjectRef, groupId: Uuid }, { additionalProperties: false });

export const FAILURE_SORTS = ['lastSeen', 'occurrences', 'affectedTests'] as const;

export const listFailureGroups = endpoint({
  operationId: 'listFailureGroups',
  method: 'GET',
  path: '/projects/{projectId}/failures',
  summary: "A project's error groups: failures grouped by cause (TRIAGE-2).",
  description:
    'Every filter narrows the list: `status`, `category`, `defectType`, `branch` (groups that occurred on it), `since` ' +
    '(last seen at or after), `testId` (groups that affected the test), `q` (case-insensitive substring of the title or ' +
    'the rule name). `sort`: `lastSeen` (default, newest first), `occurrences` or `affectedTests` (largest first).',
  tag: 'Failures',
  access: { scope: 'project', role: 'viewer' },
  params: ProjectParams,
  querystring: Type.Object(
    {
      ...PageQuery,
      status: Type.Optional(FailureStatus),
      category: Type.Optional(FailureCategory),
      defectType: Type.Optional(DefectType),
      branch: Type.Optional(RunLabel),
      since: Type.Optional(Timestamp),
      testId: Type.Optional(Uuid),
      q: Type.Optional(
        Type.String({
          minLength: 1,
          maxLength: 200,
          description:
            'Case-insensitive substring, taken literally, of the title, the rule name, or the full name of a test the group ' +
            'failed (a run without a test: its name).',
        }),
      ),
      sort: Type.Optional(Type.Union([Type.Literal('lastSeen'), Type.Literal('occurrences'), Type.Literal('affectedTests')])),
    },
    { additionalProperties: false },
  ),
  responses: {
    200: Type.Object(
      { items: Type.Array(FailureGroup, { maxItems: 10_000 }), nextCursor: Nullable(Type.String({ maxLength: 500 })) },
      { additionalProperties: false },
    ),
  },
});

export const getFailureGroup = endpoint({
  operationId: 'getFailureGroup',
  method: 'GET',
  path: '/projects/{projectId}/failures/{groupId}',
  summary: 'One error group, with its latest occurrences and its trend.',
  tag: 'Failures',
  access: { scope: 'project', role: 'viewer' },
  params: GroupParams,
  responses: { 200: FailureGroupDetails },
});

export const triageFailureGroup = endpoint({
  operationId: 'triageFailureGroup',
  method: 'PATCH',
  path: '/projects/{projectId}/failures/{groupId}',
  summary: 'Triage an error group: defect type, comment, issue link, assignee, status (tester).',
  description:
    'Later failures with the same fingerprint arrive already triaged: the triage lives on the group. `null` clears a text ' +
    'field. Audited (`failure-group.triage`, with the fields changed).',
  tag: 'Failures',
  access: { scope: 'project', role: 'tester' },
  params: GroupParams,
  body: FailureTriage,
  responses: { 200: FailureGroup },
});

export const triageFailureGroups = endpoint({
  operationId: 'triageFailureGroups',
  method: 'PATCH',
  path: '/projects/{projectId}/failures',
  summary: 'Triage several error groups at once, in one transaction (tester).',
  description: `At most ${BULK_TRIAGE_MAX} groups, each of this project (an unknown one is a 404 and nothing changes). One audit entry per group.`,
  tag: 'Failures',
  access: { scope: 'project', role: 'tester' },
  params: ProjectParams,
  body: Type.Object(
    { groupIds: Type.Array(Uuid, { minItems: 1, maxItems: BULK_TRIAGE_MAX, uniqueItems: true }), changes: FailureTriage },
    { additionalProperties: false },
  ),
  responses: { 200: Type.Object({ items: Type.Array(FailureGroup, { maxItems: BULK_TRIAGE_MAX }) }, { additionalProperties: false }) },
});

export const getFailureRules = endpoint({
  operationId: 'getFailureRules',
  method: 'GET',
  path: '/projects/{projectId}/failure-rules',
  summary: "The project's ordered category rules.",
  tag: 'Failures',
  access: { scope: 'project', role: 'viewer' },
  params: ProjectParams,
  responses: { 200: FailureRules },
});

export const putFailureRules = endpoint({
  operationId: 'putFailureRules',
  method: 'PUT',
  path: '/projects/{projectId}/failure-rules',
  summary: "Replace the project's category rules (manager); Allure's categories.json is accepted as it is.",
  description:
    "The body is `{ rules: [...] }` or Allure's `categories.json` array itself. The first rule whose regexes both match (an absent " +
    'one matches anything; a regex must match the whole text, `s` mode) and whose `matchedStatuses` include the verdict names the ' +
    'group, and gives it its `defectType` until someone triages it. The rules are applied again at once to every group not ' +
    `triaged by hand. Regexes are RE2 syntax, matched in time linear in the text: one longer than ${RULE_REGEX_MAX} characters ` +
    `or that RE2 cannot compile (backreferences, lookaround) is refused (400). At most ${FAILURE_RULES_MAX} rules. Audited (\`failure-rules.set\`).`,
  tag: 'Failures',
  access: { scope: 'project', role: 'manager' },
  params: ProjectParams,
  body: Type.Union([FailureRules, Type.Array(AllureCategory, { maxItems: FAILURE_RULES_MAX })]),
  responses: { 200: FailureRules },
});

export const getRunFailures = endpoint({
  operationId: 'getRunFailures',
  method: 'GET',
  path: '/testmgmt/testruns/{testRunId}/failures',
  summary: "The error groups of a run's failure and of its failed steps, with their triage.",
  description:
    'The groups `failureGroupId` names on the run and in its results, each once: what exports read to carry the defect type, ' +
    'category and issue link. Empty for a run that did not fail, or has not completed.',
  tag: 'Failures',
  access: { scope: 'project', role: 'viewer' },
  params: Type.Object({ testRunId: Uuid }, { additionalProperties: false }),
  responses: { 200: Type.Object({ items: Type.Array(FailureGroup, { maxItems: 1000 }) }, { additionalProperties: false }) },
});
