import * as api from '../../../api/v1/results.ts';
import type { AppContext } from '../../context.ts';
import { presentRunResults } from '../../presenters/results.ts';
import { appendResults, readResults } from '../../services/results.ts';
import { runOwner } from '../owners.ts';
import { route } from '../route.ts';

export function resultRoutes(ctx: AppContext) {
  return [
    route(api.appendResults, {
      owner: (request) => runOwner(ctx, request),
      handler: async (request) => {
        return appendResults(ctx, request.params.testRunId, request.body ?? {});
      },
    }),

    route(api.getResults, {
      owner: (request) => runOwner(ctx, request),
      handler: async (request) =>
        presentRunResults(await readResults(ctx, request.params.testRunId, { partial: request.query.partial === true })),
    }),
  ];
}
