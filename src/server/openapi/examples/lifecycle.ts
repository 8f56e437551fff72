import type { Static } from 'typebox';
import { disableTest, enableTest, type FixAttempt, startFixAttempt } from '../../../api/v1/test-lifecycle.ts';
import { IDS, TESTER_EMAIL } from './samples.ts';
import type { OperationExamples } from './types.ts';
import { examplesOf } from './types.ts';

// The quarantine lifecycle (TRIAGE-13): the login test, quarantined, takes a fix attempt on main.

export const LOGIN_FIX_ATTEMPT: Static<typeof FixAttempt> = {
  outcome: 'pending',
  commit: '9f2c4e1',
  note: 'Waits for the lab Wi-Fi before signing in',
  branch: 'main',
  startedAt: '2026-03-03T10:15:00.000Z',
  startedBy: IDS.tester,
  required: 20,
  passes: 0,
  endedAt: null,
  failedRunId: null,
};

export const lifecycleExamples: [string, OperationExamples][] = [
  examplesOf(startFixAttempt, {
    request: { commit: '9f2c4e1', note: 'Waits for the lab Wi-Fi before signing in' },
    responses: { 200: { state: 'fix-pending', fixAttempt: LOGIN_FIX_ATTEMPT, disabled: null } },
  }),
  examplesOf(disableTest, {
    request: { reason: 'The login page is being rebuilt; this test is rewritten with it' },
    responses: {
      200: {
        state: 'disabled',
        fixAttempt: null,
        disabled: {
          reason: 'The login page is being rebuilt; this test is rewritten with it',
          at: '2026-03-03T11:00:00.000Z',
          by: IDS.tester,
        },
      },
    },
  }),
  examplesOf(enableTest, { responses: { 200: { state: 'active', fixAttempt: null, disabled: null } } }),
];

/** The body of each lifecycle event (data only), the login test being verified and then fixed. */
export const LIFECYCLE_EVENT_EXAMPLES = (project: { id: string; key: string; name: string }, base: string) => {
  const test = { id: IDS.testLogin, name: 'Log in with a valid account', url: `${base}/tests/${IDS.testLogin}` };
  const quarantine = {
    owner: TESTER_EMAIL,
    reason: 'Times out on the lab Wi-Fi; see LAB-812',
    expiresAt: '2026-03-16T09:00:00.000Z',
    automatic: false,
  };
  const common = { project, test, quarantine, run: null, actorUserId: IDS.tester, reason: null };
  const fixed = { ...LOGIN_FIX_ATTEMPT, outcome: 'fixed' as const, passes: 20, endedAt: '2026-03-04T16:40:00.000Z' };
  return {
    'test.quarantined': { ...common, state: 'quarantined', previousState: 'active', fixAttempt: null },
    'test.fix_pending': { ...common, state: 'fix-pending', previousState: 'quarantined', fixAttempt: LOGIN_FIX_ATTEMPT },
    'test.fixed': {
      ...common,
      state: 'fixed',
      previousState: 'fix-pending',
      fixAttempt: fixed,
      run: { id: IDS.run, url: `${base}/runs/${IDS.run}` },
      actorUserId: null,
    },
    'test.unquarantined': { ...common, state: 'active', previousState: 'quarantined', fixAttempt: null },
    'test.disabled': {
      ...common,
      state: 'disabled',
      previousState: 'quarantined',
      fixAttempt: null,
      reason: 'The login page is being rebuilt; this test is rewritten with it',
    },
    'test.enabled': { ...common, state: 'quarantined', previousState: 'disabled', fixAttempt: null },
  } as const;
};
