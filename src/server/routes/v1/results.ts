import * as api from '../../../api/v1/results.ts';
import type { AppContext } from '../../context.ts';
import { sendFrozen } from '../../http/frozen-answers.ts';
import { sendRunExport } from '../../http/run-export.ts';
import { presentAppendedResults, presentRunResults } from '../../presenters/results.ts';
import { appendResults, readResults } from '../../services/results.ts';
import { runOwner } from '../owners.ts';
import { route } from '../route.ts';

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
      handler: async (request, reply) => {
        const runId = request.params.testRunId;
        const kept = ctx.frozenResults.get(runId);
        if (kept) return sendFrozen(request, reply, runId, kept, ctx.frozenResults);
        const ticket = ctx.frozenResults.ticket();
        const content = await readResults(ctx, runId, { partial: request.query.partial === true });
        const answer = presentRunResults(content);
        if (content.run.status !== 'completed') return answer;
        const frozen = ctx.frozenResults.store(runId, JSON.stringify(answer), ticket);
        return sendFrozen(request, reply, runId, frozen, ctx.frozenResults);
      },
    }),

    route(api.exportRun, {
      owner: (request) => runOwner(ctx, request),
      handler: (request, reply) =>
        sendRunExport(request, reply, request.params.testRunId, request.query.format, {
          partial: request.query.partial === true,
          xrayProject: request.query.xrayProject,
        }),
    }),
  ];
}
