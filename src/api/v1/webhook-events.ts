import { type TSchema, Type } from 'typebox';
import { NAME_MAX, Nullable, Timestamp, Uuid } from '../common.ts';
import { JobTestProgress } from './jobs.ts';
import { FixAttempt, LifecycleState } from './test-lifecycle.ts';
import type { WebhookEventType } from './webhooks.ts';

// The bodies Attest POSTs to `standard` webhooks (HOOK-7), one schema per event: the OpenAPI
// document lists them under `webhooks`, and the server builds them typed by these.

const Link = Nullable(
  Type.String({ maxLength: 2100, description: "A page of Attest's web interface; null when `ATTEST_PUBLIC_URL` is not set." }),
);
const Text = Type.String({ maxLength: NAME_MAX });
const Verdict = Nullable(
  Type.Union([Type.Literal('passed'), Type.Literal('failed'), Type.Literal('broken'), Type.Literal('skipped')], {
    description: "The run's verdict; null for a run not completed.",
  }),
);

export const EventProject = Type.Object({ id: Uuid, key: Type.String({ maxLength: 16 }), name: Text }, { additionalProperties: false });

export const EventRun = Type.Object(
  {
    id: Uuid,
    name: Text,
    status: Type.String({ maxLength: 20 }),
    verdict: Verdict,
    testId: Nullable(Uuid),
    jobId: Nullable(Uuid),
    environment: Nullable(Text),
    branch: Nullable(Text),
    commit: Nullable(Text),
    startedAt: Nullable(Timestamp),
    finishedAt: Nullable(Timestamp),
    url: Link,
  },
  { additionalProperties: false },
);

const EventJobRef = Type.Object({ id: Uuid, name: Text, url: Link }, { additionalProperties: false });

export const EventJob = Type.Object(
  {
    id: Uuid,
    name: Text,
    status: Type.String({ maxLength: 20 }),
    branch: Nullable(Text),
    targetBranch: Nullable({ ...Text, description: 'The branch its pull request merges into, when its CI named it.' }),
    build: Nullable({ ...Text, description: 'The CI build it belongs to, as its client named it.' }),
    ciUrl: Nullable(Type.String({ maxLength: 2100, description: 'The CI page of its build, when its client sent one.' })),
    commit: Nullable(Text),
    startedAt: Nullable(Timestamp),
    finishedAt: Nullable(Timestamp),
    url: Link,
    tests: {
      ...JobTestProgress,
      description: "The job's tests, retries folded (TRIAGE-14): the final attempt of each decides; `flaky` passed after a failed attempt.",
    },
    runs: Type.Object(
      {
        total: Type.Integer({ minimum: 0 }),
        passed: Type.Integer({ minimum: 0 }),
        failed: Type.Integer({ minimum: 0 }),
        broken: Type.Integer({ minimum: 0 }),
        skipped: Type.Integer({ minimum: 0 }),
        aborted: Type.Integer({ minimum: 0 }),
      },
      { additionalProperties: false, description: "The job's runs by verdict (retries counted each); `tests` counts tests." },
    ),
  },
  { additionalProperties: false },
);

const ComparedTest = Type.Object({ name: Text, runId: Nullable(Uuid), url: Link }, { additionalProperties: false });

export const EventFailure = Type.Object(
  {
    runId: Uuid,
    name: Text,
    verdict: Verdict,
    url: Link,
    screenshotUrl: Nullable(
      Type.String({
        maxLength: 2100,
        description:
          "The run's first screenshot as a thumbnail, by a signed link that opens without a session until it expires " +
          '(`GET /images/{imageId}/signed`, HOOK-14); null when none, or when `ATTEST_PUBLIC_URL` is not set.',
      }),
    ),
  },
  { additionalProperties: false },
);

export const EventComparison = Type.Object(
  {
    baseJobId: Nullable({ ...Uuid, description: 'The completed job on the base branch compared against; null when there is none.' }),
    baseBranch: Nullable({
      ...Text,
      description: "That job's branch: the pull request's target when its CI named it, else the project's default branch (TRIAGE-16).",
    }),
    newFailures: Type.Array(ComparedTest, { maxItems: 50 }),
    fixed: Type.Array(ComparedTest, { maxItems: 50 }),
    newErrorGroups: Type.Array(
      Type.Object(
        { id: Uuid, title: Type.String({ maxLength: 2000 }), tests: Type.Integer({ minimum: 1 }) },
        { additionalProperties: false },
      ),
      { maxItems: 50 },
    ),
  },
  { additionalProperties: false, description: 'The job against the base branch (docs/triage.md, TRIAGE-7): each list at most 50 long.' },
);

/** The `data` of each transition of a test's quarantine lifecycle (TRIAGE-13). */
const EventLifecycle = Type.Object(
  {
    project: EventProject,
    test: Type.Object({ id: Uuid, name: Text, url: Link }, { additionalProperties: false }),
    state: { ...LifecycleState, description: "The test's state after the transition." },
    previousState: { ...LifecycleState, description: 'Its state before.' },
    quarantine: Nullable(
      Type.Object(
        { owner: Text, reason: Type.String({ maxLength: 2000 }), expiresAt: Timestamp, automatic: Type.Boolean() },
        {
          additionalProperties: false,
          description: 'The quarantine in force after the transition (for `test.unquarantined` and `test.fixed`, the one released).',
        },
      ),
    ),
    fixAttempt: Nullable({ ...FixAttempt, description: 'The fix attempt the transition started or ended; null when none.' }),
    run: Nullable(
      Type.Object({ id: Uuid, url: Link }, { additionalProperties: false, description: 'The run that made the transition, when one did.' }),
    ),
    actorUserId: Nullable({ ...Uuid, description: 'Who made the transition; null when Attest did, as runs completed.' }),
    reason: Nullable(Type.String({ maxLength: 2000, description: 'Why the test was disabled (`test.disabled`); null otherwise.' })),
  },
  { additionalProperties: false },
);

/** The `data` of each event. */
export const EVENT_DATA = {
  'run.completed': Type.Object({ project: EventProject, run: EventRun }, { additionalProperties: false }),
  'run.failed_first': Type.Object({ project: EventProject, job: EventJobRef, run: EventRun }, { additionalProperties: false }),
  'job.completed': Type.Object(
    {
      project: EventProject,
      job: EventJob,
      failures: Type.Array(EventFailure, { maxItems: 20, description: 'The first 20 failed or broken runs.' }),
      comparison: EventComparison,
    },
    { additionalProperties: false },
  ),
  'import.completed': Type.Object(
    {
      project: EventProject,
      import: Type.Object(
        {
          id: Uuid,
          fileName: Type.String({ maxLength: 1000 }),
          status: Type.Literal('completed'),
          jobId: Nullable(Uuid),
          url: Link,
          cases: Type.Integer({ minimum: 0, description: 'Test cases read from the report (one completed run each).' }),
        },
        { additionalProperties: false },
      ),
    },
    { additionalProperties: false },
  ),
  'quarantine.expired': Type.Object(
    {
      project: EventProject,
      test: Type.Object({ id: Uuid, name: Text, url: Link }, { additionalProperties: false }),
      quarantine: Type.Object(
        { owner: Text, reason: Type.String({ maxLength: 2000 }), expiresAt: Timestamp },
        { additionalProperties: false },
      ),
    },
    { additionalProperties: false },
  ),
  'test.quarantined': EventLifecycle,
  'test.fix_pending': EventLifecycle,
  'test.fixed': EventLifecycle,
  'test.unquarantined': EventLifecycle,
  'test.disabled': EventLifecycle,
  'test.enabled': EventLifecycle,
  'webhook.test': Type.Object(
    {
      project: EventProject,
      webhook: Type.Object({ id: Uuid, name: Text }, { additionalProperties: false }),
      message: Type.String({ maxLength: 200 }),
    },
    { additionalProperties: false },
  ),
} satisfies Record<WebhookEventType, TSchema>;

/** The body of every `standard` delivery: the Standard Webhooks envelope around the event's data. */
export const eventEnvelope = <T extends TSchema>(type: string, data: T) =>
  Type.Object(
    {
      type: Type.Literal(type),
      timestamp: {
        ...Timestamp,
        description: 'When the event happened (each attempt also says when it was sent, in `webhook-timestamp`).',
      },
      data,
    },
    { additionalProperties: false },
  );

export const EVENT_DESCRIPTIONS: Record<WebhookEventType, string> = {
  'run.completed': 'A run completed (through the API; imported runs are announced by `import.completed`).',
  'run.failed_first': 'The first failed or broken run of a job, at once, while the rest of the job still runs: once per job.',
  'job.completed':
    'A job completed (all its runs finished, or its launch closed), with its failures and the comparison against the base branch.',
  'import.completed': 'An imported report was written as a job of completed runs.',
  'quarantine.expired':
    "A test's quarantine expired (announced within a minute of its expiry); renewed quarantines are announced again when they expire.",
  'test.quarantined':
    'A test was quarantined: by hand (not a renewal), automatically (`autoQuarantine`, a flaky test failing), or back ' +
    'from a fix attempt that a failed run ended (`run` names it).',
  'test.fix_pending': 'A fix attempt was claimed for a quarantined test: its next runs on the branch verify it.',
  'test.fixed': "A fix attempt was verified by its passing runs: the test's quarantine is released (`run` is the last of them).",
  'test.unquarantined': "A test's quarantine was released by hand.",
  'test.disabled': 'A test was disabled by hand.',
  'test.enabled': 'A disabled test was enabled again.',
  'webhook.test': 'Sent by the "send test event" button (`POST …/webhooks/{webhookId}/test`) only.',
};
