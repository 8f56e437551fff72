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

/** A test of one step ("Do it", "Done") in the project, made with `client`; answers its id. */
export async function createOneStepTest(client: AttestClient, projectId: string, name = unique('test-')): Promise<string> {
  return (await client.call(v1.tests.createTest, { body: { projectId, name, steps: [{ action: 'Do it', expected: 'Done' }] } })).id;
}

/** A failed run in the project, made with `client`, whose failing step opens a new error group; answers the run and its group. */
export async function failedGroup(client: AttestClient, projectId: string): Promise<{ runId: string; groupId: string }> {
  const run = await client.call(v1.runs.createRun, {
    body: {
      projectId,
      name: `checkout ${unique()}`,
      verdict: 'failed',
      results: { steps: [{ title: 'pay', status: 'failed', error: `payment declined ${unique()}` }] },
    },
  });
  const read = await client.call(v1.runs.getRun, { params: { testRunId: run.id } });
  return { runId: run.id, groupId: read.failureGroupId as string };
}
