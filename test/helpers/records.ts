import type { AttestClient } from '../../src/client/index.ts';
import { v1 } from '../../src/client/index.ts';
import { unique } from './factories.ts';

// Runs and steps for artifact tests, created through the API like any reporter would.

/** Starts a run (it is `running` from then on). */
export async function startRun(client: AttestClient, projectId: string, name = unique('run-')) {
  return client.call(v1.runs.createRun, { body: { projectId, name } });
}

/** Appends passed steps under the given client keys; answers their ids by key. */
export async function addSteps(client: AttestClient, testRunId: string, keys: string[]): Promise<Record<string, string>> {
  const reply = await client.call(v1.results.appendResults, {
    params: { testRunId },
    body: { steps: keys.map((key) => ({ key, title: `Step ${key}`, status: 'passed' as const })) },
  });
  return Object.fromEntries(reply.steps.map((step) => [step.key as string, step.id]));
}

/** Completes a run with a verdict, which freezes its results. */
export async function completeRun(client: AttestClient, testRunId: string, verdict: 'passed' | 'failed' = 'passed') {
  return client.call(v1.runs.updateRun, { params: { testRunId }, body: { status: 'completed', verdict } });
}
