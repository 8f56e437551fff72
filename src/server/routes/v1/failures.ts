import * as api from '../../../api/v1/failures.ts';
import type { AppContext } from '../../context.ts';
import { presentFailureGroup, presentFailureGroupDetails } from '../../presenters/failures.ts';
import {
  getFailureGroup,
  getFailureRules,
  groupsOfRunFailures,
  listFailureGroups,
  putFailureRules,
  triageFailureGroup,
  triageFailureGroups,
} from '../../services/triage/failures.ts';
import { pathProject, runOwner } from '../owners.ts';
import { pageOf, route } from '../route.ts';

export function failureRoutes(ctx: AppContext) {
  // A group is addressed under its project: the caller needs that project's role, and a group of
  // another project answers 404 (the services read it by project and id).
  const ownProject = (request: Parameters<typeof pathProject>[1]) => pathProject(ctx, request);

  return [
    route(api.listFailureGroups, {
      owner: ownProject,
      handler: async (request) => {
        const { cursor, limit, ...query } = request.query;
        const page = await listFailureGroups(ctx, request.projectId, query, pageOf(ctx.config, { cursor, limit }));
        return { items: page.items.map(presentFailureGroup), nextCursor: page.nextCursor };
      },
    }),

    route(api.getFailureGroup, {
      owner: ownProject,
      handler: async (request) => presentFailureGroupDetails(await getFailureGroup(ctx, request.projectId, request.params.groupId)),
    }),

    route(api.triageFailureGroup, {
      owner: ownProject,
      handler: async (request) => {
        const actor = { userId: request.principal.user.id, requestId: request.id };
        return presentFailureGroup(await triageFailureGroup(ctx, request.projectId, request.params.groupId, request.body, actor));
      },
    }),

    route(api.triageFailureGroups, {
      owner: ownProject,
      handler: async (request) => {
        const actor = { userId: request.principal.user.id, requestId: request.id };
        const groups = await triageFailureGroups(ctx, request.projectId, request.body.groupIds, request.body.changes, actor);
        return { items: groups.map(presentFailureGroup) };
      },
    }),

    route(api.getFailureRules, {
      owner: ownProject,
      handler: async (request) => ({ rules: await getFailureRules(ctx, request.projectId) }),
    }),

    route(api.putFailureRules, {
      owner: ownProject,
      handler: async (request) => {
        const actor = { userId: request.principal.user.id, requestId: request.id };
        return { rules: await putFailureRules(ctx, request.projectId, request.body, actor) };
      },
    }),

    route(api.getRunFailures, {
      owner: (request) => runOwner(ctx, request),
      handler: async (request) => ({ items: (await groupsOfRunFailures(ctx, request.params.testRunId)).map(presentFailureGroup) }),
    }),
  ];
}
