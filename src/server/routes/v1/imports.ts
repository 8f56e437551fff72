import type { FastifyRequest } from 'fastify';
import * as api from '../../../api/v1/imports.ts';
import type { AppContext } from '../../context.ts';
import { notFound } from '../../errors.ts';
import { readImportUpload } from '../../http/import-upload.ts';
import { presentImport } from '../../presenters/imports.ts';
import { getImport, listImports, queueImport, startImport } from '../../services/imports/accept.ts';
import { pathProject as projectOfPath } from '../owners.ts';
import { pageOf, route } from '../route.ts';

export function importRoutes(ctx: AppContext) {
  const pathProject = (request: FastifyRequest) => projectOfPath(ctx, request);
  return [
    route(api.importReport, {
      owner: pathProject,
      handler: async (request, reply) => {
        const upload = await readImportUpload(ctx, request, request.query);
        const { record, created } = await startImport(ctx, { projectId: request.projectId, actorId: request.principal.user.id, upload });
        // The job is written after the 202 has gone out (or the client left): the answer never waits
        // behind the first batch, and the import never starts before it was acknowledged.
        if (created) reply.raw.once('close', () => queueImport(ctx, record.id));
        reply.code(created ? 202 : 200);
        reply.header(
          'location',
          `${ctx.config.publicUrl ?? `${request.protocol}://${request.host}`}/api/v1/projects/${record.project_id}/imports/${record.id}`,
        );
        return presentImport(record);
      },
    }),

    route(api.getImport, {
      owner: pathProject,
      handler: async (request) => {
        const row = await getImport(ctx, request.params.importId.toLowerCase());
        if (row.project_id !== request.projectId) throw notFound('The import');
        return presentImport(row);
      },
    }),

    route(api.listImports, {
      owner: pathProject,
      handler: async (request) => {
        const page = await listImports(ctx, request.projectId, pageOf(ctx.config, request.query));
        return { items: page.items.map(presentImport), nextCursor: page.nextCursor };
      },
    }),
  ];
}
