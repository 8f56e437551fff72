import { accountExamples } from './accounts.ts';
import { artifactExamples } from './artifacts.ts';
import { failureExamples } from './failures.ts';
import { importExamples } from './imports.ts';
import { insightExamples } from './insights.ts';
import { integrationExamples } from './integrations.ts';
import { labExamples } from './lab.ts';
import { lifecycleExamples } from './lifecycle.ts';
import { testCaseExamples } from './test-cases.ts';
import { testingExamples } from './testing.ts';
import type { OperationExamples } from './types.ts';
import { webhookExamples } from './webhooks.ts';

export { PROBLEM_EXAMPLES } from './problems.ts';
export type { OperationExamples } from './types.ts';
export { EVENT_EXAMPLES } from './webhooks.ts';

/**
 * The examples of every operation of the document, by operationId: request bodies and 2xx JSON
 * answers, typed against the contract (see types.ts) and built from one cast of sample records
 * (samples.ts), so ids agree across operations.
 */
export const OPERATION_EXAMPLES: ReadonlyMap<string, OperationExamples> = new Map([
  ...accountExamples,
  ...labExamples,
  ...testingExamples,
  ...lifecycleExamples,
  ...testCaseExamples,
  ...artifactExamples,
  ...importExamples,
  ...failureExamples,
  ...insightExamples,
  ...integrationExamples,
  ...webhookExamples,
]);
