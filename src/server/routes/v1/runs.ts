import * as api from '../../../api/v1/runs.ts';
import type { AppContext } from '../../context.ts';
import { presentRun } from '../../presenters/runs.ts';
import { keepRun } from '../../services/operations/retention.ts';
import { deleteRun } from '../../services/records/deletions.ts';
import { claimRun, heartbeatRun } from '../../services/records/run-claims.ts';
import { changeRunStatus, createRun, getRun, listRuns } from '../../services/records/runs.ts';
import { listedRunsProject, namedProject, runOwner } from '../owners.ts';
import { noContent, pageOf, route } from '../route.ts';

export function runRoutes(ctx: AppContext) {
  return [
    route(api.createRun, {
      owner: (request) => namedProject(ctx, request.body, 'body'),
      handler: async (request, reply) => {
        const { run, created } = await createRun(ctx, request.projectId, request.body, request.principal.user.id);
        reply.code(created ? 201 : 200);
        return presentRun(run);
      },
    }),

    route(api.listRuns, {
      owner: (request) => listedRunsProject(ctx, request),
      handler: async (request) => {
        const { cursor: _cursor, limit: _limit, projectId: _projectId, ...filters } = request.query;
        const page = await listRuns(ctx, request.projectId, filters, pageOf(ctx.config, request.query));
        return { items: page.items.map(presentRun), nextCursor: page.nextCursor };
      },
    }),

    route(api.getRun, {
      owner: (request) => runOwner(ctx, request),
      handler: async (request) => presentRun(await getRun(ctx, request.params.testRunId)),
    }),

    route(api.deleteRun, {
      owner: (request) => runOwner(ctx, request),
      handler: async (request, reply) => {
        await deleteRun(ctx, request.params.testRunId, { userId: request.principal.user.id, requestId: request.id });
        return noContent(reply);
      },
    }),

    route(api.keepRun, {
      owner: (request) => runOwner(ctx, request),
      handler: async (request) => presentRun(await keepRun(ctx, request.params.testRunId, request.body.keep)),
    }),

    route(api.updateRun, {
      owner: (request) => runOwner(ctx, request),
      handler: async (request) => presentRun(await changeRunStatus(ctx, request.params.testRunId, request.body)),
    }),

    // No owner: a claim spans the caller's projects, and the query itself is scoped to them (SEC-1a).
    route(api.claimRun, {
      handler: async (request, reply) => {
        const run = await claimRun(ctx, request.body, request.principal.projects);
        return run ? presentRun(run) : noContent(reply);
      },
    }),

    route(api.heartbeatRun, {
      owner: (request) => runOwner(ctx, request),
      handler: async (request) => presentRun(await heartbeatRun(ctx, request.params.testRunId, request.body)),
    }),
  ];
}
