import * as api from '../../../api/v1/test-lifecycle.ts';
import type { AppContext } from '../../context.ts';
import { disableTest, enableTest, startFixAttempt } from '../../services/triage/quarantine-lifecycle.ts';
import { testOwner } from '../owners.ts';
import { route } from '../route.ts';

/** The quarantine lifecycle of a test (TRIAGE-13): a fix attempt, and the manual disabled. */
export function testLifecycleRoutes(ctx: AppContext) {
  return [
    route(api.startFixAttempt, {
      owner: (request) => testOwner(ctx, request),
      handler: async (request) =>
        startFixAttempt(ctx, request.params.testId, request.body, { userId: request.principal.user.id, requestId: request.id }),
    }),
    route(api.disableTest, {
      owner: (request) => testOwner(ctx, request),
      handler: async (request) =>
        disableTest(ctx, request.params.testId, request.body, { userId: request.principal.user.id, requestId: request.id }),
    }),
    route(api.enableTest, {
      owner: (request) => testOwner(ctx, request),
      handler: async (request) => enableTest(ctx, request.params.testId, { userId: request.principal.user.id, requestId: request.id }),
    }),
  ];
}
