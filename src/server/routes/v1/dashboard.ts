import * as comparisonApi from '../../../api/v1/comparison.ts';
import * as api from '../../../api/v1/dashboard.ts';
import * as flakyCostApi from '../../../api/v1/flaky-cost.ts';
import { FLAKY_COST_DAYS_DEFAULT } from '../../../api/v1/flaky-cost.ts';
import type { AppContext } from '../../context.ts';
import { presentComparison } from '../../presenters/comparison.ts';
import { presentDashboard } from '../../presenters/dashboard.ts';
import { compareJobs } from '../../services/triage/comparison.ts';
import { projectDashboard } from '../../services/triage/dashboard.ts';
import { flakyCost } from '../../services/triage/flaky-cost.ts';
import { jobOwner, pathProject } from '../owners.ts';
import { route } from '../route.ts';

/** Answers across runs that only read (TRIAGE-7, TRIAGE-8, TRIAGE-15): a project's dashboard, its flaky cost and the comparison of two jobs. */
export function dashboardRoutes(ctx: AppContext) {
  return [
    route(api.getDashboard, {
      owner: (request) => pathProject(ctx, request),
      handler: async (request) =>
        presentDashboard(
          await projectDashboard(ctx, request.projectId, { branch: request.query.branch ?? null, days: request.query.days ?? 14 }),
        ),
    }),

    route(flakyCostApi.getFlakyCost, {
      owner: (request) => pathProject(ctx, request),
      handler: async (request) =>
        flakyCost(ctx, request.projectId, { days: request.query.days ?? FLAKY_COST_DAYS_DEFAULT, testId: request.query.testId }),
    }),

    route(comparisonApi.compareJobs, {
      owner: (request) => jobOwner(ctx, request),
      handler: async (request) =>
        presentComparison(
          await compareJobs(ctx, request.params.jobId, {
            baseJobId: request.query.base,
            baseBranch: request.query.baseBranch,
            allowFlaky: request.query.allowFlaky,
          }),
        ),
    }),
  ];
}
