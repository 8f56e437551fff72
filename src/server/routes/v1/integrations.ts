import * as api from '../../../api/v1/integrations.ts';
import type { AppContext } from '../../context.ts';
import { presentForgeSettings, presentIssueLink, presentIssueLinks, presentIssueTracker } from '../../presenters/integrations.ts';
import { deleteForgeSettings, getForgeSettings, putForgeSettings } from '../../services/integrations/forge.ts';
import {
  createFailureGroupIssue,
  createRunIssue,
  deleteIssueTracker,
  getIssueTracker,
  listIssueLinks,
  putIssueTracker,
} from '../../services/integrations/issue-links.ts';
import { pathProject, runOwner } from '../owners.ts';
import { noContent, route } from '../route.ts';

export function integrationRoutes(ctx: AppContext) {
  const ownProject = (request: Parameters<typeof pathProject>[1]) => pathProject(ctx, request);
  const actorOf = (request: { principal: { user: { id: string } }; id: string }) => ({
    userId: request.principal.user.id,
    requestId: request.id,
  });

  return [
    route(api.getForgeSettings, {
      owner: ownProject,
      handler: async (request) => {
        const row = await getForgeSettings(ctx, request.projectId);
        return { forge: row ? presentForgeSettings(row) : null };
      },
    }),

    route(api.putForgeSettings, {
      owner: ownProject,
      handler: async (request) => ({
        forge: presentForgeSettings(await putForgeSettings(ctx, request.projectId, request.body, actorOf(request))),
      }),
    }),

    route(api.deleteForgeSettings, {
      owner: ownProject,
      handler: async (request, reply) => {
        await deleteForgeSettings(ctx, request.projectId, actorOf(request));
        return noContent(reply);
      },
    }),

    route(api.getIssueTracker, {
      owner: ownProject,
      handler: async (request) => {
        const row = await getIssueTracker(ctx, request.projectId);
        return { tracker: row ? presentIssueTracker(row) : null };
      },
    }),

    route(api.putIssueTracker, {
      owner: ownProject,
      handler: async (request) => ({
        tracker: presentIssueTracker(await putIssueTracker(ctx, request.projectId, request.body, actorOf(request))),
      }),
    }),

    route(api.deleteIssueTracker, {
      owner: ownProject,
      handler: async (request, reply) => {
        await deleteIssueTracker(ctx, request.projectId, actorOf(request));
        return noContent(reply);
      },
    }),

    route(api.createFailureGroupIssue, {
      owner: ownProject,
      handler: async (request, reply) => {
        const link = await createFailureGroupIssue(ctx, request.projectId, request.params.groupId, request.body, actorOf(request));
        reply.code(201);
        return presentIssueLink(link);
      },
    }),

    route(api.createRunIssue, {
      owner: (request) => runOwner(ctx, request),
      handler: async (request, reply) => {
        const link = await createRunIssue(ctx, request.params.testRunId, request.body, actorOf(request));
        reply.code(201);
        return presentIssueLink(link);
      },
    }),

    route(api.listIssueLinks, {
      owner: ownProject,
      handler: async (request) => {
        const rows = await listIssueLinks(ctx, request.projectId, {
          failureGroupId: request.query.failureGroupId,
          runId: request.query.testRunId,
        });
        return { items: presentIssueLinks(rows) };
      },
    }),
  ];
}
