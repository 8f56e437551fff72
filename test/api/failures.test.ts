import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Static } from 'typebox';
import type { FailureGroup } from '../../src/api/v1/failures.ts';
import { type AttestClient, v1 } from '../../src/client/index.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createProject, createUser, type TestUser, twoProjects, unique } from '../helpers/factories.ts';
import { jsonHeaders, rawRequest } from '../helpers/http.ts';
import { firstPointer, isProblem } from '../helpers/problems.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

// TRIAGE-2, TRIAGE-3, TRIAGE-4: failures grouped by cause, triaged once, and the outage guard.

type Group = Static<typeof FailureGroup>;

const xmlText = (text: string) => text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;');

interface Case {
  name: string;
  /** A failure: its message attribute and its body (the stack). */
  failure?: { message: string; type?: string; body?: string };
  error?: { message: string; type?: string; body?: string };
}

/** A JUnit XML report of one suite. */
function junit(suite: string, cases: readonly Case[], timestamp = '2026-03-02T09:29:12'): Buffer {
  const problem = (tag: string, p: { message: string; type?: string; body?: string }) =>
    `<${tag} message="${xmlText(p.message)}" type="${xmlText(p.type ?? 'AssertionError')}">${xmlText(p.body ?? '')}</${tag}>`;
  const body = cases
    .map(
      (c) =>
        `<testcase classname="${suite}" name="${xmlText(c.name)}" time="0.5">${c.failure ? problem('failure', c.failure) : ''}${
          c.error ? problem('error', c.error) : ''
        }</testcase>`,
    )
    .join('\n');
  return Buffer.from(
    `<?xml version="1.0" encoding="UTF-8"?>\n<testsuites><testsuite name="${suite}" tests="${cases.length}" timestamp="${timestamp}">\n${body}\n</testsuite></testsuites>`,
  );
}

/** The checkout suite as one CI run prints it: its numbers, ports and ids are this run's own. */
function checkoutSuite(seed: number): Case[] {
  const port = 40_000 + seed * 7;
  const order = `${(0x1a2b3c4d + seed * 7919).toString(16)}-0000-4000-8000-${String(seed).padStart(12, '0')}`;
  return [
    { name: 'shows the basket' },
    {
      name: 'pays with a saved card',
      failure: {
        message: `expected:<200> but was:<500> from http://localhost:${port}/api/orders/${1000 + seed}`,
        body: `AssertionError: expected:<200> but was:<500>\n    at payWithCard (tests/checkout.spec.ts:${40 + seed}:11)\n    at Context.<anonymous> (tests/checkout.spec.ts:12:5)`,
      },
    },
    {
      name: 'applies a voucher',
      failure: {
        message: `Timeout ${3000 + seed * 10}ms exceeded waiting for locator('#voucher') of order ${order}`,
        type: 'TimeoutError',
        body: `TimeoutError: Timeout exceeded\n    at applyVoucher (tests/voucher.spec.ts:${20 + seed}:3)`,
      },
    },
    {
      name: 'sends the receipt',
      error: {
        message: `connect ECONNREFUSED 127.0.0.1:${port + 1}`,
        type: 'Error',
        body: `Error: connect ECONNREFUSED 127.0.0.1:${port + 1}\n    at sendReceipt (tests/receipt.spec.ts:${7 + seed}:9)`,
      },
    },
  ];
}

for (const dialect of DIALECTS) {
  describe(`[${dialect}] error groups`, () => {
    let server: TestServer;
    let projectA: string;
    let projectB: string;
    let tester: TestUser;
    let viewer: TestUser;
    let manager: TestUser;

    before(async () => {
      server = await startTestServer(dialect);
      ({ projectA, projectB, tester, viewer } = await twoProjects(server));
      manager = await createUser(server, ['manager'], { projects: [projectA] });
    });
    after(() => server.close());

    /** Imports a JUnit report into the project and waits until it is written; answers its job id. */
    const importJunit = async (xml: Buffer, projectId = projectA, query = '') => {
      const response = await rawRequest(`${server.url}/api/v1/projects/${projectId}/imports${query}`, {
        method: 'POST',
        headers: { ...jsonHeaders(tester.key), 'content-type': 'application/xml', 'content-length': xml.length },
        body: xml,
      });
      assert.equal(response.status, 202, response.text);
      const importId = response.json.id as string;
      for (let i = 0; i < 800; i++) {
        const record = await viewer.client.call(v1.imports.getImport, { params: { projectId, importId } }).catch(() => undefined);
        if (record?.status === 'completed') return record.jobId as string;
        if (record?.status === 'failed') throw new Error(`the import failed: ${record.error}`);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      throw new Error('the import did not finish');
    };

    const runsOfJob = async (jobId: string, client: AttestClient = viewer.client) => {
      const runs = [];
      let cursor: string | undefined;
      do {
        const page = await client.call(v1.runs.listRuns, { query: { jobId, limit: 200, ...(cursor ? { cursor } : {}) } });
        runs.push(...page.items);
        cursor = page.nextCursor ?? undefined;
      } while (cursor);
      return runs;
    };

    const groupsOf = async (query: Record<string, string | number> = {}, projectId = projectA) =>
      (await viewer.client.call(v1.failures.listFailureGroups, { params: { projectId }, query: { limit: 200, ...query } })).items;

    const groupOf = (groupId: string, projectId = projectA) =>
      viewer.client.call(v1.failures.getFailureGroup, { params: { projectId, groupId } });

    /** The groups of the job's failed runs, by run name. */
    const groupsByRunName = async (jobId: string) =>
      new Map((await runsOfJob(jobId)).filter((run) => run.failureGroupId !== null).map((run) => [run.name, run.failureGroupId as string]));

    describe('recording failures', () => {
      test('two imports of the same failing suite give the same groups; the second finds them known, with the triage set after the first', async () => {
        const suite = unique('checkout-');
        const firstJob = await importJunit(junit(suite, checkoutSuite(1), '2026-03-02T09:29:12'));
        const first = await groupsByRunName(firstJob);
        assert.equal(first.size, 3, 'three failed runs, each with its group');
        assert.equal(new Set(first.values()).size, 3, 'three causes, three groups');
        const passed = (await runsOfJob(firstJob)).find((run) => run.name === 'shows the basket');
        assert.equal(passed?.failureGroupId, null);
        assert.equal(passed?.attempt, 0);
        for (const groupId of first.values()) {
          const group = await groupOf(groupId);
          assert.equal(group.status, 'new');
          assert.equal(group.occurrences, 1);
          assert.equal(group.affectedTests, 1);
          assert.equal(group.firstSeenJobId, firstJob);
        }
        const payGroup = await groupOf(first.get('pays with a saved card') as string);
        assert.equal(payGroup.category, 'assertion');
        assert.match(payGroup.title, /but was/);
        assert.doesNotMatch(payGroup.title, /4000\d|1001/, 'the port and the order id are placeholders');
        assert.equal((await groupOf(first.get('applies a voucher') as string)).category, 'timeout');
        assert.equal((await groupOf(first.get('sends the receipt') as string)).category, 'network');

        const triaged = await tester.client.call(v1.failures.triageFailureGroup, {
          params: { projectId: projectA, groupId: payGroup.id },
          body: {
            defectType: 'product_bug',
            issueUrl: 'https://issues.example.com/SHOP-12',
            assignee: 'ana@example.com',
            comment: 'API 500',
          },
        });
        assert.equal(triaged.defectType, 'product_bug');
        assert.ok(triaged.triagedAt);

        server.clock.advance(86_400_000);
        const secondJob = await importJunit(junit(suite, checkoutSuite(2), '2026-03-03T07:01:55'));
        const second = await groupsByRunName(secondJob);
        assert.deepEqual(second, first, 'every failure fell into the group of the same failure the day before');
        for (const groupId of second.values()) {
          const group = await groupOf(groupId);
          assert.equal(group.status, 'known', 'seen in a second job');
          assert.equal(group.occurrences, 2);
          assert.equal(group.affectedTests, 1, 'the same test both times');
          assert.equal(group.firstSeenJobId, firstJob);
          assert.equal(group.lastSeenJobId, secondJob);
          assert.equal(group.latestOccurrences.length, 2);
          assert.equal(group.latestOccurrences[0]?.jobId, secondJob, 'newest first');
        }
        const pay = await groupOf(payGroup.id);
        assert.equal(pay.defectType, 'product_bug', 'the triage is carried to the new failure');
        assert.equal(pay.issueUrl, 'https://issues.example.com/SHOP-12');
        assert.equal(pay.assignee, 'ana@example.com');
      });

      test('each failed step names its group in the results answer, and the run its own', async () => {
        const jobId = await importJunit(junit(unique('steps-'), checkoutSuite(3)));
        for (const run of await runsOfJob(jobId)) {
          const results = await viewer.client.call(v1.results.getResults, { params: { testRunId: run.id } });
          assert.equal(results.failureGroupId, run.failureGroupId);
          for (const step of results.steps) {
            if (step.status === 'failed' || step.status === 'broken') assert.equal(step.failureGroupId, run.failureGroupId);
            else assert.equal(step.failureGroupId, null);
          }
        }
      });

      test('a live run (a failed step with its trace, then PATCH completed) and an imported split message and stack share a group', async () => {
        const message = 'expected order total 42.00 but got 41.99 (order 7f3a9c01-2b4d-4e6f-8a1b-3c5d7e9f1a2b)';
        const stack = '    at checkTotal (tests/totals.spec.ts:88:14)\n    at Context.<anonymous> (tests/totals.spec.ts:20:3)';
        const run = await tester.client.call(v1.runs.createRun, { body: { projectId: projectA, name: 'live totals' } });
        await tester.client.call(v1.results.appendResults, {
          params: { testRunId: run.id },
          body: {
            steps: [
              {
                key: 'total',
                title: 'Check the total',
                status: 'failed',
                error: message,
                cells: [{ name: 'trace', mediaType: 'text/plain', text: `AssertionError: ${message}\n${stack}` }],
              },
            ],
          },
        });
        const completed = await tester.client.call(v1.runs.updateRun, {
          params: { testRunId: run.id },
          body: { status: 'completed', verdict: 'failed' },
        });
        assert.ok(completed.failureGroupId, 'the PATCH answer names the group');
        const read = await viewer.client.call(v1.runs.getRun, { params: { testRunId: run.id } });
        assert.equal(read.failureGroupId, completed.failureGroupId);

        const other = message.replace('7f3a9c01-2b4d-4e6f-8a1b-3c5d7e9f1a2b', '0d1e2f3a-4b5c-4d6e-9f80-112233445566');
        const jobId = await importJunit(
          junit(unique('totals-'), [
            { name: 'imported totals', failure: { message: other, body: `AssertionError: ${other}\n${stack.replace('88:14', '91:2')}` } },
          ]),
        );
        const [imported] = await runsOfJob(jobId);
        assert.equal(imported?.failureGroupId, completed.failureGroupId);
        const group = await groupOf(completed.failureGroupId as string);
        assert.equal(group.status, 'known', 'a run without a job is a job of its own');
        assert.deepEqual(group.frames, ['tests/totals.spec.ts:checkTotal', 'tests/totals.spec.ts:Context.<anonymous>']);
      });

      test('a failed run without any message falls into "Failed without an error message"', async () => {
        const run = await tester.client.call(v1.runs.createRun, { body: { projectId: projectA, name: 'silent', verdict: 'broken' } });
        assert.ok(run.failureGroupId);
        const group = await groupOf(run.failureGroupId);
        assert.equal(group.title, 'Failed without an error message');
        assert.equal(group.category, 'other');
        const passed = await tester.client.call(v1.runs.createRun, { body: { projectId: projectA, name: 'fine', verdict: 'passed' } });
        assert.equal(passed.failureGroupId, null);
      });
    });
  });
}
