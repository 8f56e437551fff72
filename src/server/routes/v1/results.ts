import * as api from '../../../api/v1/results.ts';
import type { AppContext } from '../../context.ts';
import { presentAppendedResults, presentRunResults } from '../../presenters/results.ts';
import { appendResults, readResults } from '../../services/records/results.ts';
import { runOwner } from '../owners.ts';
import { route, sentRunExport } from '../route.ts';

export function resultRoutes(ctx: AppContext) {
  return [
    route(api.appendResults, {
      owner: (request) => runOwner(ctx, request),
      handler: async (request) => presentAppendedResults(await appendResults(ctx, request.params.testRunId, request.body ?? {})),
    }),

    route(api.getResults, {
      owner: (request) => runOwner(ctx, request),
      // A completed run's results never change: they are answered from bytes built once (PERF-2),
      // after the access hooks have checked the caller like on every request.
      keeps: { in: ctx.frozenResults, key: (request) => request.params.testRunId, when: (answer) => answer.status === 'completed' },
      handler: async (request) =>
        presentRunResults(await readResults(ctx, request.params.testRunId, { partial: request.query.partial === true })),
    }),

    route(api.exportRun, {
      owner: (request) => runOwner(ctx, request),
      handler: (request, reply) =>
        sentRunExport(request, reply, request.params.testRunId, request.query.format, {
          partial: request.query.partial === true,
          xrayProject: request.query.xrayProject,
        }),
    }),
  ];
}
