import type { Endpoint } from '../endpoint.ts';
import * as artifacts from './artifacts.ts';
import * as comparison from './comparison.ts';
import * as dashboard from './dashboard.ts';
import * as devices from './devices.ts';
import * as failures from './failures.ts';
import * as flakyCost from './flaky-cost.ts';
import * as images from './images.ts';
import * as imports from './imports.ts';
import * as integrations from './integrations.ts';
import * as jobs from './jobs.ts';
import * as meta from './meta.ts';
import * as projects from './projects.ts';
import * as results from './results.ts';
import * as runs from './runs.ts';
import * as lifecycle from './test-lifecycle.ts';
import * as tests from './tests.ts';
import * as users from './users.ts';
import * as webhooks from './webhooks.ts';

export * as artifacts from './artifacts.ts';
export * as comparison from './comparison.ts';
export * as dashboard from './dashboard.ts';
export * as devices from './devices.ts';
export * as failures from './failures.ts';
export * as flakyCost from './flaky-cost.ts';
export * as images from './images.ts';
export * as imports from './imports.ts';
export * as integrations from './integrations.ts';
export * as jobs from './jobs.ts';
export * as meta from './meta.ts';
export * as projects from './projects.ts';
export * as results from './results.ts';
export * as runs from './runs.ts';
export * as lifecycle from './test-lifecycle.ts';
export * as tests from './tests.ts';
export * as users from './users.ts';
export * as webhooks from './webhooks.ts';

function endpointsOf(modules: Record<string, unknown>[]): Endpoint[] {
  return modules.flatMap((m) =>
    Object.values(m).filter((v): v is Endpoint => typeof v === 'object' && v !== null && 'operationId' in v && 'method' in v),
  );
}

/** Every operation of API version 1, in documentation order. */
export const v1Endpoints: Endpoint[] = endpointsOf([
  meta,
  users,
  projects,
  devices,
  tests,
  lifecycle,
  jobs,
  runs,
  results,
  artifacts,
  images,
  imports,
  failures,
  integrations,
  dashboard,
  flakyCost,
  comparison,
  webhooks,
]);
