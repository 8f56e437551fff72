import { Type } from 'typebox';
import { Nullable, TEXT_MAX, Timestamp, Uuid } from '../common.ts';
import { endpoint } from '../endpoint.ts';
import { RunLabel } from './runs.ts';

// The quarantine lifecycle of a test (TRIAGE-13, docs/triage.md): active → quarantined →
// fix-pending → fixed (or back to quarantined), and the manual disabled.

export const LIFECYCLE_STATES = ['active', 'quarantined', 'fix-pending', 'fixed', 'disabled'] as const;

export const LifecycleState = Type.Union(
  [Type.Literal('active'), Type.Literal('quarantined'), Type.Literal('fix-pending'), Type.Literal('fixed'), Type.Literal('disabled')],
  {
    description:
      '`quarantined`: a quarantine in force. `fix-pending`: a fix attempt is being verified by its next passing runs (the ' +
      'quarantine still in force). `fixed`: the last fix attempt was verified and its quarantine released. `disabled`: ' +
      'set by hand; the lifecycle leaves the test alone until it is enabled. `active` otherwise (an expired quarantine too).',
  },
);

export const FixAttempt = Type.Object(
  {
    outcome: Type.Union([Type.Literal('pending'), Type.Literal('fixed'), Type.Literal('failed'), Type.Literal('cancelled')], {
      description: '`cancelled`: the quarantine was released, or the test disabled, while it was pending.',
    }),
    commit: Nullable({ ...RunLabel, description: 'The commit that claims the fix, as given.' }),
    note: Nullable(Type.String({ maxLength: TEXT_MAX })),
    branch: Nullable({
      ...RunLabel,
      description: "The branch whose runs verify it: the one given, else the project's default; null: runs of any branch.",
    }),
    startedAt: Timestamp,
    startedBy: Nullable(Uuid),
    required: Type.Integer({ minimum: 1, description: "Passing runs in a row it needs (the project's `fixPasses`, default 20)." }),
    passes: Type.Integer({ minimum: 0, description: 'Passing runs counted so far.' }),
    endedAt: Nullable(Timestamp),
    failedRunId: Nullable({ ...Uuid, description: 'The run whose failure returned the test to quarantine; null otherwise.' }),
  },
  { additionalProperties: false },
);

/** Where a test stands in the quarantine lifecycle, on every test answer (`health.lifecycle`). */
export const TestLifecycle = Type.Object(
  {
    state: LifecycleState,
    fixAttempt: Nullable({ ...FixAttempt, description: 'The last fix attempt; null when none was made (or since a new quarantine).' }),
    disabled: Nullable(
      Type.Object(
        { reason: Type.String({ maxLength: TEXT_MAX }), at: Timestamp, by: Nullable(Uuid) },
        { additionalProperties: false, description: 'Who disabled the test, when and why; null unless disabled.' },
      ),
    ),
  },
  { additionalProperties: false },
);

const TestParams = Type.Object({ testId: Uuid }, { additionalProperties: false });

export const startFixAttempt = endpoint({
  operationId: 'startFixAttempt',
  method: 'POST',
  path: '/testmgmt/tests/{testId}/fix-attempt',
  summary: 'Claim a fix of a quarantined test: its next runs verify it (tester).',
  description:
    'Moves a `quarantined` test to `fix-pending` (any other state answers 409 `STATE_CONFLICT`). Its quarantine stays in ' +
    "force while its next `fixPasses` (the project's triage setting, default 20) completed runs on the branch are counted: " +
    'all passing mark it `fixed` and release the quarantine; a failed or broken run returns it to `quarantined`, naming ' +
    "that run. The branch is `branch` when given, else the project's default branch (for now, the branch most of its jobs " +
    'ran on); runs created before the attempt, skipped runs and runs of other branches do not count. Audited as ' +
    '`test.fix-attempt`, announced as `test.fix_pending`.',
  tag: 'Tests',
  access: { scope: 'project', role: 'tester' },
  params: TestParams,
  body: Type.Object(
    {
      commit: Type.Optional({ ...RunLabel, description: 'The commit that claims the fix.' }),
      note: Type.Optional(Type.String({ minLength: 1, maxLength: TEXT_MAX })),
      branch: Type.Optional({ ...RunLabel, description: 'The branch whose runs verify the fix.' }),
    },
    { additionalProperties: false },
  ),
  responses: { 200: TestLifecycle },
});

export const disableTest = endpoint({
  operationId: 'disableTest',
  method: 'POST',
  path: '/testmgmt/tests/{testId}/disable',
  summary: 'Disable a test by hand (tester).',
  description:
    'The test reads `disabled` until enabled: a pending fix attempt ends, and automatic quarantine passes it by. Its ' +
    'quarantine, if any, stays as it is. A test already disabled answers 409 `STATE_CONFLICT`. Audited as ' +
    '`test.disable`, announced as `test.disabled`.',
  tag: 'Tests',
  access: { scope: 'project', role: 'tester' },
  params: TestParams,
  body: Type.Object({ reason: Type.String({ minLength: 1, maxLength: TEXT_MAX }) }, { additionalProperties: false }),
  responses: { 200: TestLifecycle },
});

export const enableTest = endpoint({
  operationId: 'enableTest',
  method: 'POST',
  path: '/testmgmt/tests/{testId}/enable',
  summary: 'Enable a disabled test (tester).',
  description:
    'The test returns to the state its quarantine gives it: `quarantined` while one is in force, else `active`. A test ' +
    'that is not disabled answers 409 `STATE_CONFLICT`. Audited as `test.enable`, announced as `test.enabled`.',
  tag: 'Tests',
  access: { scope: 'project', role: 'tester' },
  params: TestParams,
  responses: { 200: TestLifecycle },
});
