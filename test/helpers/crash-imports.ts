import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { type AttestClient, v1 } from '../../src/client/index.ts';
import { jsonHeaders, rawRequest } from './http.ts';
import type { SpawnedServer } from './spawned-server.ts';

// What the crash tests of imports share: a JUnit report of numbered cases, its upload to a spawned
// server (202), and the count of runs per case name in the job the import wrote.

/** A JUnit XML report of `cases` cases `case 0`…, one in seven failing, in one suite. */
export function junitReport(cases: number, suite: string): Buffer {
  const body = Array.from(
    { length: cases },
    (_, i) =>
      `<testcase classname="com.example.${suite}" name="case ${i}" time="0.01">${i % 7 === 0 ? '<failure message="no">at X</failure>' : ''}</testcase>`,
  );
  return Buffer.from(
    `<?xml version="1.0"?><testsuites name="${suite}"><testsuite name="com.example.${suite}">${body.join('')}</testsuite></testsuites>`,
  );
}

/** Creates a project on `server` and uploads `report` as its import; answers both ids once it is accepted (202). */
export async function acceptedImport(server: SpawnedServer, key: string, report: Buffer): Promise<{ projectId: string; importId: string }> {
  const project = await server.admin.call(v1.projects.createProject, {
    body: { key: `I${randomBytes(3).toString('hex').toUpperCase()}`, name: 'Crash import' },
  });
  const accepted = await rawRequest(`${server.url}/api/v1/projects/${project.id}/imports`, {
    method: 'POST',
    headers: { ...jsonHeaders(key), 'content-type': 'application/xml', 'content-length': report.length },
    body: report,
  });
  assert.equal(accepted.status, 202, accepted.text);
  return { projectId: project.id, importId: String(accepted.json.id) };
}

/** How many runs each case name has in the job, every page read. */
export async function runsPerName(client: AttestClient, projectId: string, jobId: string): Promise<Map<string, number>> {
  const names = new Map<string, number>();
  let cursor: string | undefined;
  do {
    const page = await client.call(v1.runs.listRuns, { query: { projectId, jobId, limit: 200, ...(cursor ? { cursor } : {}) } });
    for (const run of page.items) names.set(run.name, (names.get(run.name) ?? 0) + 1);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return names;
}
