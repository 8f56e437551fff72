import assert from 'node:assert/strict';
import type { AttestClient } from '../../src/client/index.ts';
import { v1 } from '../../src/client/index.ts';
import { jsonHeaders, rawRequest } from './http.ts';

// The case of TRIAGE-14 and TRIAGE-15: jobs of 10 Playwright tests in which one test, `badge looks
// right`, fails and then passes on its retry every time; the last job also has a second flaky test
// and a test that fails on all three of its attempts. Imported through the real import path.

export const FLAKY = 'badge looks right';
export const ALSO_FLAKY = 'login works';
export const FAILING = 'cart total is right';
export const STEADY = ['home loads', 'search finds', 'menu opens', 'footer links', 'profile saves', 'logout works', 'help opens'];

type Attempt = { status: 'passed' | 'failed'; duration: number };

const pass = (duration: number): Attempt => ({ status: 'passed', duration });
const fail = (duration: number): Attempt => ({ status: 'failed', duration });

/** Each test's attempts in one job: durations in ms, which the flaky cost adds up (TRIAGE-15). */
export function jobPlan(last: boolean): Record<string, Attempt[]> {
  const plan: Record<string, Attempt[]> = { [FLAKY]: [fail(1_000), pass(400)] };
  plan[ALSO_FLAKY] = last ? [fail(2_500), pass(300)] : [pass(300)];
  plan[FAILING] = last ? [fail(700), fail(800), fail(900)] : [pass(200)];
  for (const title of STEADY) plan[title] = [pass(100)];
  return plan;
}

/** A Playwright JSON report of the plan, its attempts one after another from `start`. */
function report(file: string, plan: Record<string, Attempt[]>, start: number) {
  let at = start;
  return {
    config: { projects: [{ name: 'chromium' }] },
    suites: [
      {
        title: file,
        specs: Object.entries(plan).map(([title, attempts]) => ({
          title,
          tests: [
            {
              projectName: 'chromium',
              results: attempts.map((attempt, retry) => {
                const startTime = new Date(at).toISOString();
                at += attempt.duration;
                return {
                  status: attempt.status,
                  retry,
                  duration: attempt.duration,
                  startTime,
                  ...(attempt.status === 'failed'
                    ? {
                        errors: [{ message: `Error: expect(received).toBe(expected)\n\nExpected: 2\nReceived: ${retry + 3}` }],
                        error: { message: 'Error: expect(received).toBe(expected)' },
                      }
                    : {}),
                };
              }),
            },
          ],
        })),
      },
    ],
  };
}

/** Imports a Playwright JSON report into the project through `POST /projects/{id}/imports`; answers its job. */
export async function importPlaywright(
  url: string,
  key: string,
  client: AttestClient,
  projectId: string,
  body: unknown,
  build: string,
): Promise<string> {
  const bytes = Buffer.from(JSON.stringify(body));
  const answer = await rawRequest(`${url}/api/v1/projects/${projectId}/imports?build=${encodeURIComponent(build)}`, {
    method: 'POST',
    headers: { ...jsonHeaders(key), 'content-type': 'application/json', 'content-length': bytes.length },
    body: bytes,
  });
  assert.equal(answer.status, 202, answer.text);
  for (let i = 0; i < 800; i++) {
    const record = await client.call(v1.imports.getImport, { params: { projectId, importId: String(answer.json.id) } });
    if (record.status === 'completed') return record.jobId as string;
    assert.notEqual(record.status, 'failed', record.error ?? '');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error('the import did not finish');
}

/**
 * Six jobs of the case, an hour apart from `start` (ms), the last with its extra failures; answers
 * the jobs, oldest first. `advance` moves the server's clock between them.
 */
export async function importFlakyJobs(options: {
  url: string;
  key: string;
  client: AttestClient;
  projectId: string;
  file: string;
  start: number;
  advance: (ms: number) => void;
}): Promise<string[]> {
  const jobs: string[] = [];
  for (let i = 0; i < 6; i++) {
    const body = report(options.file, jobPlan(i === 5), options.start + i * 3_600_000);
    jobs.push(await importPlaywright(options.url, options.key, options.client, options.projectId, body, `${options.file}-${i}`));
    options.advance(3_600_000);
  }
  return jobs;
}
