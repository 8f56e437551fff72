import * as api from '../../../api/v1/jobs.ts';
import type { AppContext } from '../../context.ts';
import { presentJob } from '../../presenters/jobs.ts';
import { deleteJob } from '../../services/records/deletions.ts';
import { cancelJob, completeJob, createJob, getJob, listJobs } from '../../services/records/jobs.ts';
import { jobOwner, namedProject } from '../owners.ts';
import { noContent, pageOf, route, sentJobExport } from '../route.ts';

export function jobRoutes(ctx: AppContext) {
  return [
    route(api.createJob, {
      owner: (request) => namedProject(ctx, request.body, 'body'),
      handler: async (request, reply) => {
        const { job, created } = await createJob(ctx, request.projectId, request.body, request.principal.user.id);
        reply.code(created ? 201 : 200);
        return presentJob(job);
      },
    }),

    route(api.listJobs, {
      owner: (request) => namedProject(ctx, request.query, 'query'),
      handler: async (request) => {
        const { build, ciUrl, branch } = request.query;
        const page = await listJobs(ctx, request.projectId, pageOf(ctx.config, request.query), { build, ciUrl, branch });
        return { items: page.items.map(presentJob), nextCursor: page.nextCursor };
      },
    }),

    route(api.getJob, {
      owner: (request) => jobOwner(ctx, request),
      handler: async (request) => presentJob(await getJob(ctx, request.params.jobId)),
    }),

    route(api.deleteJob, {
      owner: (request) => jobOwner(ctx, request),
      handler: async (request, reply) => {
        await deleteJob(ctx, request.params.jobId, { userId: request.principal.user.id, requestId: request.id });
        return noContent(reply);
      },
    }),

    route(api.cancelJob, {
      owner: (request) => jobOwner(ctx, request),
      handler: async (request) => presentJob(await cancelJob(ctx, request.params.jobId)),
    }),

    route(api.completeJob, {
      owner: (request) => jobOwner(ctx, request),
      handler: async (request) => presentJob(await completeJob(ctx, request.params.jobId)),
    }),
    route(api.exportJob, {
      owner: (request) => jobOwner(ctx, request),
      handler: (request, reply) =>
        sentJobExport(request, reply, request.params.jobId, request.query.format, { xrayProject: request.query.xrayProject }),
    }),
  ];
}
