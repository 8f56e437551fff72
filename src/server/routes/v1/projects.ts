import { randomUUID } from 'node:crypto';
import * as api from '../../../api/v1/projects.ts';
import type { AppContext } from '../../context.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import type { ProjectsTable } from '../../db/types.ts';
import { AppError, notFound } from '../../errors.ts';
import { keysetPage } from '../../pagination.ts';
import { presentMember, presentProject } from '../../presenters/identity.ts';
import { normaliseEmail } from '../../security/api-key.ts';
import { audit } from '../../services/audit.ts';
import { roleAtLeast } from '../../services/authenticate.ts';
import { requireActiveUser } from '../../services/users.ts';
import { rawField, route } from '../route.ts';

export function projectRoutes(ctx: AppContext) {
  /** The project named in the path owns itself; unknown ids resolve to nothing (404). */
  const ownProject = async (request: { params: unknown }) => {
    const id = rawField(request.params, 'projectId');
    if (!id) return undefined;
    const row = await ctx.db.selectFrom('projects').select('id').where('id', '=', id).executeTakeFirst();
    return row?.id;
  };
  const loadProject = async (id: string): Promise<ProjectsTable> => {
    const row = await ctx.db.selectFrom('projects').selectAll().where('id', '=', id).executeTakeFirst();
    if (!row) throw notFound('The project');
    return row;
  };

  return [
    route(api.listProjects, {
      handler: async (request) => {
        const { principal } = request;
        let query = ctx.db.selectFrom('projects').selectAll();
        if (principal.projects !== 'all') {
          const visible = [...principal.projects];
          if (visible.length === 0) return { items: [], nextCursor: null };
          query = query.where('id', 'in', visible);
        }
        const page = await keysetPage(ctx, query, {
          columns: ['key', 'id'],
          direction: 'asc',
          cursor: request.query.cursor,
          limit: request.query.limit,
        });
        return { items: page.items.map(presentProject), nextCursor: page.nextCursor };
      },
    }),

    route(api.createProject, {
      handler: async (request, reply) => {
        const now = ctx.clock().toISOString();
        const row: ProjectsTable = {
          id: randomUUID(),
          key: request.body.key,
          name: request.body.name,
          description: request.body.description ?? '',
          created_at: now,
          updated_at: now,
          created_by: request.principal.user.id,
        };
        const clash = await ctx.db.selectFrom('projects').select('id').where('key', '=', row.key).executeTakeFirst();
        if (clash) throw new AppError('ALREADY_EXISTS', `A project with key ${row.key} already exists.`);
        try {
          await ctx.db.transaction().execute(async (trx) => {
            await trx.insertInto('projects').values(row).execute();
            await trx
              .insertInto('project_members')
              .values({ project_id: row.id, user_id: request.principal.user.id, added_at: now })
              .execute();
          });
        } catch (error) {
          // Two concurrent creations with one key: the unique index decides, the loser gets 409.
          if (isUniqueViolation(error)) throw new AppError('ALREADY_EXISTS', `A project with key ${row.key} already exists.`);
          throw error;
        }
        reply.code(201);
        return presentProject(row);
      },
    }),

    route(api.getProject, { owner: ownProject, handler: async (request) => presentProject(await loadProject(request.projectId)) }),

    route(api.updateProject, {
      owner: ownProject,
      handler: async (request) => {
        const changes = { ...request.body, updated_at: ctx.clock().toISOString() };
        await ctx.db.updateTable('projects').set(changes).where('id', '=', request.projectId).execute();
        return presentProject(await loadProject(request.projectId));
      },
    }),

    route(api.deleteProject, {
      owner: ownProject,
      handler: async (request, reply) => {
        await ctx.db.transaction().execute(async (trx) => {
          const project = await trx.selectFrom('projects').selectAll().where('id', '=', request.projectId).executeTakeFirstOrThrow();
          // Child rows go with the project (ON DELETE CASCADE); blobs they referenced become
          // unreferenced and are reclaimed by the blob garbage collector.
          await trx.deleteFrom('projects').where('id', '=', project.id).execute();
          await audit(ctx, trx, {
            actorUserId: request.principal.user.id,
            action: 'project.delete',
            targetType: 'project',
            targetId: project.id,
            details: { key: project.key, name: project.name },
            requestId: request.id,
          });
        });
        return reply.code(204).send();
      },
    }),

    route(api.listMembers, {
      owner: ownProject,
      handler: async (request) => {
        const query = ctx.db
          .selectFrom('project_members as m')
          .innerJoin('users as u', 'u.id', 'm.user_id')
          .select(['m.user_id', 'u.email', 'u.name', 'm.added_at'])
          .where('m.project_id', '=', request.projectId)
          .where('u.deleted_at', 'is', null);
        // Ordered by name, not e-mail: the cursor carries the sort key, and a viewer must not be
        // able to read e-mails out of it.
        const page = await keysetPage(ctx, query, {
          columns: ['u.name', 'm.user_id'],
          direction: 'asc',
          cursor: request.query.cursor,
          limit: request.query.limit,
        });
        const showEmail = roleAtLeast(request.principal.role, 'manager');
        return { items: page.items.map((row) => presentMember(row, showEmail)), nextCursor: page.nextCursor };
      },
    }),

    route(api.addMember, {
      owner: ownProject,
      handler: async (request) => {
        const user = await requireActiveUser(ctx.db, request.params.email);
        const now = ctx.clock().toISOString();
        await ctx.db.transaction().execute(async (trx) => {
          const existing = await trx
            .selectFrom('project_members')
            .select('user_id')
            .where('project_id', '=', request.projectId)
            .where('user_id', '=', user.id)
            .executeTakeFirst();
          if (existing) return;
          await trx.insertInto('project_members').values({ project_id: request.projectId, user_id: user.id, added_at: now }).execute();
          await audit(ctx, trx, {
            actorUserId: request.principal.user.id,
            action: 'project.member.add',
            targetType: 'project',
            targetId: request.projectId,
            details: { userId: user.id },
            requestId: request.id,
          });
        });
        const member = await ctx.db
          .selectFrom('project_members')
          .select(['user_id', 'added_at'])
          .where('project_id', '=', request.projectId)
          .where('user_id', '=', user.id)
          .executeTakeFirstOrThrow();
        // Only managers and admins reach this route, and they named the e-mail themselves.
        return presentMember({ ...member, email: user.email, name: user.name }, true);
      },
    }),

    route(api.removeMember, {
      owner: ownProject,
      handler: async (request, reply) => {
        const email = normaliseEmail(request.params.email);
        await ctx.db.transaction().execute(async (trx) => {
          const user = await trx
            .selectFrom('users')
            .select('id')
            .where('email', '=', email)
            .where('deleted_at', 'is', null)
            .executeTakeFirst();
          const removed = user
            ? await trx
                .deleteFrom('project_members')
                .where('project_id', '=', request.projectId)
                .where('user_id', '=', user.id)
                .executeTakeFirst()
            : undefined;
          if (!user || Number(removed?.numDeletedRows ?? 0) === 0) throw notFound('The member');
          await audit(ctx, trx, {
            actorUserId: request.principal.user.id,
            action: 'project.member.remove',
            targetType: 'project',
            targetId: request.projectId,
            details: { userId: user.id },
            requestId: request.id,
          });
        });
        return reply.code(204).send();
      },
    }),
  ];
}
