import * as api from '../../../api/v1/projects.ts';
import type { AppContext } from '../../context.ts';
import { presentMember, presentProject, presentUsage } from '../../presenters/identity.ts';
import { roleAtLeast } from '../../security/roles.ts';
import {
  addMember,
  createProject,
  deleteProject,
  getProject,
  listMembers,
  listProjects,
  removeMember,
  updateProject,
} from '../../services/records/projects.ts';
import { pathProject } from '../owners.ts';
import { noContent, pageOf, route } from '../route.ts';

export function projectRoutes(ctx: AppContext) {
  /** The project named in the path owns itself; unknown ids resolve to nothing (404). */
  const ownProject = (request: Parameters<typeof pathProject>[1]) => pathProject(ctx, request);

  return [
    route(api.listProjects, {
      handler: async (request) => {
        const page = await listProjects(ctx, request.principal.projects, pageOf(ctx.config, request.query), request.query.key);
        return { items: page.items.map(presentProject), nextCursor: page.nextCursor };
      },
    }),

    route(api.createProject, {
      handler: async (request, reply) => {
        const project = await createProject(ctx, request.body, request.principal.user.id);
        reply.code(201);
        return presentProject(project);
      },
    }),

    route(api.getProject, { owner: ownProject, handler: async (request) => presentProject(await getProject(ctx, request.projectId)) }),

    route(api.getProjectUsage, {
      owner: ownProject,
      handler: async (request) => presentUsage(await getProject(ctx, request.projectId)),
    }),

    route(api.updateProject, {
      owner: ownProject,
      handler: async (request) => {
        const actor = { userId: request.principal.user.id, requestId: request.id, admin: request.principal.role === 'admin' };
        return presentProject(await updateProject(ctx, request.projectId, request.body, actor));
      },
    }),

    route(api.deleteProject, {
      owner: ownProject,
      handler: async (request, reply) => {
        await deleteProject(ctx, request.projectId, { userId: request.principal.user.id, requestId: request.id });
        return noContent(reply);
      },
    }),

    route(api.listMembers, {
      owner: ownProject,
      handler: async (request) => {
        const page = await listMembers(ctx, request.projectId, pageOf(ctx.config, request.query));
        // E-mails go only to those who manage membership (ERR-4).
        const showEmail = roleAtLeast(request.principal.role, 'manager');
        return { items: page.items.map((row) => presentMember(row, showEmail)), nextCursor: page.nextCursor };
      },
    }),

    route(api.addMember, {
      owner: ownProject,
      handler: async (request) => {
        const member = await addMember(ctx, request.projectId, request.params.email, {
          userId: request.principal.user.id,
          requestId: request.id,
        });
        // Only managers and admins reach this route, and they named the e-mail themselves.
        return presentMember(member, true);
      },
    }),

    route(api.removeMember, {
      owner: ownProject,
      handler: async (request, reply) => {
        await removeMember(ctx, request.projectId, request.params.email, { userId: request.principal.user.id, requestId: request.id });
        return noContent(reply);
      },
    }),
  ];
}
