import type { AppContext } from '../../context.ts';
import type { RegisteredRoute } from '../route.ts';
import { artifactRoutes } from './artifacts.ts';
import { dashboardRoutes } from './dashboard.ts';
import { deviceRoutes } from './devices.ts';
import { failureRoutes } from './failures.ts';
import { imageRoutes } from './images.ts';
import { importRoutes } from './imports.ts';
import { integrationRoutes } from './integrations.ts';
import { jobRoutes } from './jobs.ts';
import { metaRoutes } from './meta.ts';
import { projectRoutes } from './projects.ts';
import { resultRoutes } from './results.ts';
import { runRoutes } from './runs.ts';
import { testLifecycleRoutes } from './test-lifecycle.ts';
import { testRoutes } from './tests.ts';
import { userRoutes } from './users.ts';
import { webhookRoutes } from './webhooks.ts';

/** Every implementation of API version 1; the app checks it matches the contract one to one. */
export function v1Routes(ctx: AppContext): RegisteredRoute[] {
  return [
    ...metaRoutes(ctx),
    ...userRoutes(ctx),
    ...projectRoutes(ctx),
    ...deviceRoutes(ctx),
    ...testRoutes(ctx),
    ...testLifecycleRoutes(ctx),
    ...jobRoutes(ctx),
    ...runRoutes(ctx),
    ...resultRoutes(ctx),
    ...artifactRoutes(ctx),
    ...imageRoutes(ctx),
    ...importRoutes(ctx),
    ...failureRoutes(ctx),
    ...integrationRoutes(ctx),
    ...dashboardRoutes(ctx),
    ...webhookRoutes(ctx),
  ];
}
