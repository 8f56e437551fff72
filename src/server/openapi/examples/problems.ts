import type { Static } from 'typebox';
import type { Problem } from '../../../api/common.ts';
import { ERRORS, type ErrorCode, problemType } from '../../errors.ts';
import { IDS } from './samples.ts';

const problem = (code: ErrorCode, detail: string, extra: Partial<Static<typeof Problem>> = {}): Static<typeof Problem> => ({
  type: problemType(code),
  title: ERRORS[code].title,
  status: ERRORS[code].status,
  code,
  detail,
  instance: IDS.request,
  ...extra,
});

/** One problem example per documented error status (`default` stands for the 409 state conflicts and 5xx). */
export const PROBLEM_EXAMPLES: Record<string, Static<typeof Problem>> = {
  400: problem('INVALID_INPUT', '/body/name: must NOT have fewer than 1 characters', {
    errors: [{ pointer: '/body/name', message: 'must NOT have fewer than 1 characters' }],
  }),
  401: problem('UNAUTHENTICATED', 'Invalid or missing credentials'),
  403: problem('FORBIDDEN', 'This operation needs the tester role.'),
  404: problem('NOT_FOUND', 'The test run does not exist or is not visible to you.'),
  406: problem('NOT_ACCEPTABLE', 'This operation answers application/json; the Accept header excludes it.'),
  413: problem('PAYLOAD_TOO_LARGE', 'The request body is too large'),
  415: problem('UNSUPPORTED_MEDIA_TYPE', 'Content-Type text/csv is not supported here.'),
  429: problem('RATE_LIMITED', 'Too many requests; retry after 12 seconds.'),
  default: problem('STATE_CONFLICT', 'The test run is queued; start it before appending results.'),
};
