import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Static } from 'typebox';
import type { BodyOf } from '../../src/api/endpoint.ts';
import type { FailureGroup } from '../../src/api/v1/failures.ts';
import { type ApiError, type AttestClient, v1 } from '../../src/client/index.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createProject, createUser, type TestUser, twoProjects, unique } from '../helpers/factories.ts';
import { jsonHeaders, rawRequest } from '../helpers/http.ts';
import { assertProblem, firstPointer } from '../helpers/problems.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

// TRIAGE-2, TRIAGE-3, TRIAGE-4: failures grouped by cause, triaged once, and the outage guard.

type Group = Static<typeof FailureGroup>;

/** A phrase of letters only: unique per call, and nothing the normaliser turns into a placeholder (hex, numbers). */
const phrase = (prefix: string) => `${prefix} ${unique('').replace(/[0-9a-f]/g, (c) => String.fromCharCode(103 + Number.parseInt(c, 16)))}`;

/** A problem answer of this status. */
const refused = (error: unknown, status: number) => (error as ApiError).status === status;

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
    /** A live run of the tester's, as a reporter sends one: created, `results` appended, then PATCHed completed and failed; answers the PATCH. */
    const liveFailedRun = async (name: string, results: BodyOf<typeof v1.results.appendResults>) => {
      const run = await tester.client.call(v1.runs.createRun, { body: { projectId: projectA, name } });
      await tester.client.call(v1.results.appendResults, { params: { testRunId: run.id }, body: results });
      return tester.client.call(v1.runs.updateRun, { params: { testRunId: run.id }, body: { status: 'completed', verdict: 'failed' } });
    };
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
        const completed = await liveFailedRun('live totals', {
          steps: [
            {
              key: 'total',
              title: 'Check the total',
              status: 'failed',
              error: message,
              cells: [{ name: 'trace', mediaType: 'text/plain', text: `AssertionError: ${message}\n${stack}` }],
            },
          ],
        });
        assert.ok(completed.failureGroupId, 'the PATCH answer names the group');
        const read = await viewer.client.call(v1.runs.getRun, { params: { testRunId: completed.id } });
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

      test('two locators timing out on one line of one spec are two groups, each with its target, imported from JUnit or Playwright JSON or sent live; one locator on other lines, ports and runs is one group', async () => {
        const pay = "getByRole('button', { name: 'Pay now' })";
        const checkout = "getByRole('link', { name: 'Checkout' })";
        const first = 'Error: locator.click: Test timeout of 30000ms exceeded.';
        // What Playwright prints for a locator timeout: the first line, the call log, the source and the stack.
        const printed = (locator: string, line: number, port: number) =>
          `${first}\nCall log:\n  - waiting for ${locator}\n    - navigated to "http://localhost:${port}/checkout"\n\n  ${line} |   await page.${locator}.click();\n\n    at /home/runner/work/shop/shop/tests/checkout.spec.ts:${line}:50`;
        const junitCase = (name: string, locator: string, line: number, port: number): Case => ({
          name,
          failure: { message: first, type: 'TimeoutError', body: printed(locator, line, port) },
        });
        const targets = async (groupIds: Iterable<string>) =>
          new Set(await Promise.all([...groupIds].map(async (id) => (await groupOf(id)).target)));

        const suite = unique('checkout.spec.ts-');
        const fromJunit = await groupsByRunName(
          await importJunit(junit(suite, [junitCase('pays', pay, 12, 3000), junitCase('checks out', checkout, 12, 3000)])),
        );
        assert.notEqual(fromJunit.get('pays'), fromJunit.get('checks out'));
        assert.deepEqual(await targets(fromJunit.values()), new Set([pay, checkout]));

        const again = await groupsByRunName(
          await importJunit(junit(suite, [junitCase('pays', pay, 19, 41234), junitCase('checks out', checkout, 27, 39011)])),
        );
        assert.equal(again.get('pays'), fromJunit.get('pays'), 'other lines and ports, one group');
        assert.equal(again.get('checks out'), fromJunit.get('checks out'));

        // Playwright's JSON report: `error` is the first error (message with its call log, stack), `errors` each formatted.
        const spec = (title: string, locator: string, line: number) => {
          const message = `${first}\nCall log:\n  - waiting for ${locator}\n`;
          const stack = `${message}\n    at /home/runner/work/shop/shop/tests/checkout.spec.ts:${line}:50`;
          const location = { file: '/home/runner/work/shop/shop/tests/checkout.spec.ts', line, column: 50 };
          return {
            title,
            ok: false,
            tags: [],
            file: 'checkout.spec.ts',
            line: line - 2,
            column: 3,
            tests: [
              {
                projectName: 'chromium',
                status: 'unexpected',
                expectedStatus: 'passed',
                annotations: [],
                results: [
                  {
                    workerIndex: 0,
                    status: 'timedOut',
                    retry: 0,
                    duration: 30_012,
                    startTime: '2026-03-02T09:00:00.000Z',
                    error: { message, stack, location, snippet: `  ${line} |   await page.${locator}.click();` },
                    errors: [{ message: `${stack}`, location }],
                    stdout: [],
                    stderr: [],
                    steps: [],
                    attachments: [],
                  },
                ],
              },
            ],
          };
        };
        const report = Buffer.from(
          JSON.stringify({
            config: { projects: [{ name: 'chromium' }] },
            suites: [
              { title: 'checkout.spec.ts', file: 'checkout.spec.ts', specs: [spec('pays', pay, 12), spec('checks out', checkout, 12)] },
            ],
            errors: [],
            stats: { startTime: '2026-03-02T09:00:00.000Z', duration: 30_500, expected: 0, unexpected: 2, flaky: 0, skipped: 0 },
          }),
        );
        const response = await rawRequest(`${server.url}/api/v1/projects/${projectA}/imports`, {
          method: 'POST',
          headers: { ...jsonHeaders(tester.key), 'content-type': 'application/json', 'content-length': report.length },
          body: report,
        });
        assert.equal(response.status, 202, response.text);
        let jobId: string | undefined;
        for (let i = 0; i < 800 && jobId === undefined; i++) {
          const record = await viewer.client.call(v1.imports.getImport, {
            params: { projectId: projectA, importId: response.json.id as string },
          });
          if (record.status === 'failed') throw new Error(`the import failed: ${record.error}`);
          if (record.status === 'completed') jobId = record.jobId as string;
          else await new Promise((resolve) => setTimeout(resolve, 25));
        }
        const fromJson = [...(await runsOfJob(jobId as string))].map((run) => run.failureGroupId as string);
        assert.equal(new Set(fromJson).size, 2);
        assert.deepEqual(await targets(fromJson), new Set([pay, checkout]));

        // Live: a step with the first line as its message and the printed error as its trace.
        const live = async (locator: string, line: number) => {
          const completed = await liveFailedRun(`live ${locator}`, {
            steps: [
              {
                key: 'click',
                title: 'Click',
                status: 'failed',
                error: first,
                cells: [{ name: 'trace', mediaType: 'text/plain', text: printed(locator, line, 5173) }],
              },
            ],
          });
          return completed.failureGroupId as string;
        };
        const livePay = await live(pay, 44);
        assert.equal(livePay, fromJunit.get('pays'), 'the live run falls into the imported group of its locator');
        assert.notEqual(await live(checkout, 44), livePay);
      });

      test("a step's error without frames and the run's error cell with them are one cause, filed under the group with frames; another statement or other frames stay apart", async () => {
        const statement = `Error: expect(locator).toHaveScreenshot(expected) failed\n\nLocator: locator('#${unique('badge-')}')\n  800 pixels (ratio 1.00 of all image pixels) are different.`;
        const stack = (line: number) => `    at /home/runner/work/shop/shop/tests/visual.spec.ts:${line}:44`;
        // As the live reporter sends Playwright's failure: the step's message alone, the run's `error` cell with its stack.
        const send = async (stepErrors: string[], cell: string) => {
          const completed = await liveFailedRun(unique('visual '), {
            steps: stepErrors.map((error, i) => ({ key: `s${i}`, title: `Step ${i}`, status: 'failed' as const, error })),
            cells: [{ name: 'error', mediaType: 'text/plain', text: cell }],
          });
          const results = await viewer.client.call(v1.results.getResults, { params: { testRunId: completed.id } });
          return { run: completed.failureGroupId as string, steps: results.steps.map((step) => step.failureGroupId as string) };
        };
        const one = await send([statement, statement], `${statement}\n\nCall log:\n  - waiting\n${stack(8)}`);
        assert.deepEqual(one.steps, [one.run, one.run]);
        const group = await groupOf(one.run);
        assert.deepEqual(group.frames, ['tests/visual.spec.ts:']);
        assert.equal(group.occurrences, 1, 'the run counts once');

        const apart = await send([`${statement}\nSnapshot: other.png`], `${statement}\n${stack(8)}`);
        assert.equal(apart.run, one.run);
        assert.notEqual(apart.steps[0], apart.run, 'another statement is another cause');
        // A step with frames of its own, elsewhere in the code, is not the run's failure either.
        const elsewhere = await send([`${statement}\n${stack(30)}`.replace('visual.spec', 'other.spec')], `${statement}\n${stack(8)}`);
        assert.notEqual(elsewhere.steps[0], elsewhere.run);
      });

      test('a failed run without any message falls into the no-message group', async () => {
        const run = await tester.client.call(v1.runs.createRun, { body: { projectId: projectA, name: 'silent', verdict: 'broken' } });
        assert.ok(run.failureGroupId);
        const group = await groupOf(run.failureGroupId);
        assert.equal(group.title, 'Failed without an error message');
        assert.equal(group.category, 'other');
        const passed = await tester.client.call(v1.runs.createRun, { body: { projectId: projectA, name: 'fine', verdict: 'passed' } });
        assert.equal(passed.failureGroupId, null);
      });
    });

    describe('the outage guard (incidents)', () => {
      test('one job with 100 failures from one cause is one incident and one group of 100 occurrences', async () => {
        const suite = unique('outage-');
        const cases: Case[] = Array.from({ length: 100 }, (_, i) => ({
          name: `order ${i}`,
          error: {
            message: `connect ECONNREFUSED 10.0.${i % 7}.${i}:${5000 + i}`,
            type: 'Error',
            body: `Error: connect ECONNREFUSED 10.0.${i % 7}.${i}:${5000 + i}\n    at placeOrder (tests/orders.spec.ts:${10 + i}:5)`,
          },
        }));
        cases.push({ name: 'lists products' }, { name: 'searches' }, { name: 'logs in' });
        cases.push({ name: 'shows a price', failure: { message: 'expected:<9.99> but was:<10.99>' } });
        cases.push({ name: 'shows a stock', failure: { message: "Timeout 5000ms exceeded waiting for locator('.stock')" } });
        const jobId = await importJunit(junit(suite, cases));
        const runs = await runsOfJob(jobId);
        const outageGroups = new Set(runs.filter((run) => run.name.startsWith('order ')).map((run) => run.failureGroupId));
        assert.equal(outageGroups.size, 1, 'the hundred failures share one group');
        const [groupId] = [...outageGroups] as [string];
        const group = await groupOf(groupId);
        assert.equal(group.occurrences, 100);
        assert.equal(group.affectedTests, 100);
        assert.equal(group.category, 'network');
        const job = await viewer.client.call(v1.jobs.getJob, { params: { jobId } });
        assert.deepEqual(job.incident, { failureGroupId: groupId, failedRuns: 100 });
      });

      test('an import of many batches whose outage comes in its last batch is an incident when it ends', async () => {
        // Batches of 250 cases: the guard looks after the 1st, 2nd and 4th batch, and when the import
        // ends; the outage's 100 failures are all in the 5th.
        const cases: Case[] = Array.from({ length: 1000 }, (_, i) => ({ name: `page ${i}` }));
        for (let i = 0; i < 100; i++) {
          cases.push({ name: `checkout ${i}`, failure: { message: `connect ECONNREFUSED 10.1.0.${i}:${6000 + i}` } });
        }
        const jobId = await importJunit(junit(unique('late-outage-'), cases));
        const runs = await runsOfJob(jobId);
        const groups = new Set(runs.filter((run) => run.name.startsWith('checkout ')).map((run) => run.failureGroupId));
        assert.equal(groups.size, 1);
        const job = await viewer.client.call(v1.jobs.getJob, { params: { jobId } });
        assert.deepEqual(job.incident, { failureGroupId: [...groups][0], failedRuns: 100 });
      });

      test('a job with fewer failed tests than incidentMinFailures is no incident; the project sets its thresholds', async () => {
        const projectId = (await createProject(server, 'thresholds')).id;
        await server.admin.client.call(v1.projects.addMember, { params: { projectId, email: tester.email } });
        await server.admin.client.call(v1.projects.addMember, { params: { projectId, email: viewer.email } });
        const defaults = await viewer.client.call(v1.projects.getProject, { params: { projectId } });
        // The monitors' settings (TRIAGE-11) are test/api/health-monitors.test.ts's.
        const { incidentMinFailures, incidentShare, brokenAfter, healthWindow } = defaults.triage;
        assert.deepEqual(
          { incidentMinFailures, incidentShare, brokenAfter, healthWindow },
          { incidentMinFailures: 20, incidentShare: 0.5, brokenAfter: 5, healthWindow: 30 },
        );

        const cases = (n: number): Case[] =>
          Array.from({ length: n }, (_, i) => ({ name: `case ${i}`, failure: { message: `expected:<1> but was:<${i + 2}>` } }));
        const small = await importJunit(junit(unique('small-'), [...cases(3), { name: 'other', failure: { message: 'boom' } }]), projectId);
        assert.equal((await viewer.client.call(v1.jobs.getJob, { params: { jobId: small } })).incident, null);

        const changed = await server.admin.client.call(v1.projects.updateProject, {
          params: { projectId },
          body: { triage: { incidentMinFailures: 4, incidentShare: 0.7 } },
        });
        assert.deepEqual(changed.triage, { ...defaults.triage, incidentMinFailures: 4, incidentShare: 0.7 });
        const again = await importJunit(junit(unique('small-'), [...cases(3), { name: 'other', failure: { message: 'boom' } }]), projectId);
        const incident = (await viewer.client.call(v1.jobs.getJob, { params: { jobId: again } })).incident;
        assert.equal(incident?.failedRuns, 3, 'three of four failed tests (75 % > 70 %) share a cause');
        const shared = (await runsOfJob(again)).find((run) => run.name === 'case 0')?.failureGroupId;
        assert.equal(incident?.failureGroupId, shared);

        const refusals: [unknown, string][] = [
          [{ incidentShare: 1.5 }, '/body/triage/incidentShare'],
          [{ incidentMinFailures: 0 }, '/body/triage/incidentMinFailures'],
          [{ healthWindow: 1 }, '/body/triage/healthWindow'],
          [{ surprise: 1 }, '/body/triage'],
        ];
        for (const [triage, pointer] of refusals) {
          await assert.rejects(
            server.admin.client.call(v1.projects.updateProject, { params: { projectId }, body: { triage } as never }),
            (error) => refused(error, 400) && (firstPointer(error as ApiError) ?? '').startsWith(pointer),
          );
        }
        await assert.rejects(
          tester.client.call(v1.projects.updateProject, { params: { projectId }, body: { triage: { brokenAfter: 3 } } }),
          (error) => refused(error, 403),
        );
        const reset = await server.admin.client.call(v1.projects.updateProject, { params: { projectId }, body: { triage: null } });
        assert.equal(reset.triage.incidentMinFailures, 20);
      });
    });

    describe('the outage guard under concurrency', () => {
      test('two completions at once in one job, of different causes, count each other: the incident is not missed', async () => {
        const projectId = (await createProject(server, 'concurrent')).id;
        for (const email of [tester.email, viewer.email])
          await server.admin.client.call(v1.projects.addMember, { params: { projectId, email } });
        await server.admin.client.call(v1.projects.updateProject, {
          params: { projectId },
          body: { triage: { incidentMinFailures: 4, incidentShare: 0.5 } },
        });
        const outage = phrase('the database is down');
        const other = phrase('the basket is empty');
        const run = (jobId: string, name: string, error: string, verdict?: 'failed') =>
          tester.client.call(v1.runs.createRun, {
            body: {
              projectId,
              jobId,
              testName: `concurrent › ${name}`,
              name,
              ...(verdict ? { verdict } : {}),
              results: { steps: [{ title: 's', status: 'failed', error }] },
            },
          });
        // Each round: two tests already failed of the outage; then, at once, a third of it and one of
        // another cause. 3 of 4 failed tests share a cause: an incident, whichever completion is last.
        // Different causes take no common group lock: only the job's row makes them count in turn.
        for (let round = 0; round < 6; round++) {
          const job = await tester.client.call(v1.jobs.createJob, { body: { projectId, testIds: [] } });
          await run(job.id, 'one', outage, 'failed');
          await run(job.id, 'two', outage, 'failed');
          const third = await run(job.id, 'three', outage);
          const fourth = await run(job.id, 'four', other);
          await Promise.all(
            [third, fourth].map((r) =>
              tester.client.call(v1.runs.updateRun, { params: { testRunId: r.id }, body: { status: 'completed', verdict: 'failed' } }),
            ),
          );
          const incident = (await viewer.client.call(v1.jobs.getJob, { params: { jobId: job.id } })).incident;
          const outageGroup = (await runsOfJob(job.id)).find((r) => r.name === 'one')?.failureGroupId;
          assert.deepEqual(incident, { failureGroupId: outageGroup, failedRuns: 3 }, `round ${round}`);
        }
      });
    });

    describe('GET /projects/{projectId}/failures', () => {
      let jobs: string[];
      let onMain: string;
      before(async () => {
        const project = await createProject(server, 'lists');
        onMain = project.id;
        for (const email of [tester.email, viewer.email])
          await server.admin.client.call(v1.projects.addMember, { params: { projectId: onMain, email } });
        jobs = [];
        // Three causes: one in 3 tests, one in 2, one in 1; the first on branch main, the rest on feature.
        const cause = (n: number) => ({ message: ['', 'the basket total is wrong', 'the login link is missing'][n] as string });
        jobs.push(
          await importJunit(
            junit('lists', [
              { name: 'a', failure: cause(1) },
              { name: 'b', failure: cause(1) },
              { name: 'c', failure: cause(1) },
            ]),
            onMain,
            '?branch=main',
          ),
        );
        server.clock.advance(60_000);
        jobs.push(
          await importJunit(
            junit('lists', [
              { name: 'd', failure: cause(2) },
              { name: 'e', failure: cause(2) },
              { name: 'f', error: { message: "Timeout 100ms exceeded waiting for locator('#f')" } },
            ]),
            onMain,
            '?branch=feature',
          ),
        );
      });

      test('sorts by last seen (default), occurrences or affected tests, and pages with a cursor', async () => {
        const byLastSeen = await groupsOf({}, onMain);
        assert.equal(byLastSeen.length, 3);
        assert.ok(byLastSeen[0]?.lastSeenAt && byLastSeen[2]?.lastSeenAt && byLastSeen[0].lastSeenAt >= byLastSeen[2].lastSeenAt);
        assert.deepEqual(
          (await groupsOf({ sort: 'occurrences' }, onMain)).map((g) => g.occurrences),
          [3, 2, 1],
        );
        assert.deepEqual(
          (await groupsOf({ sort: 'affectedTests' }, onMain)).map((g) => g.affectedTests),
          [3, 2, 1],
        );
        const paged: Group[] = [];
        let cursor: string | undefined;
        do {
          const page = await viewer.client.call(v1.failures.listFailureGroups, {
            params: { projectId: onMain },
            query: { sort: 'occurrences', limit: 1, ...(cursor ? { cursor } : {}) },
          });
          assert.ok(page.items.length <= 1);
          paged.push(...page.items);
          cursor = page.nextCursor ?? undefined;
        } while (cursor);
        assert.deepEqual(
          paged.map((g) => g.occurrences),
          [3, 2, 1],
        );
      });

      test('a cursor is of its sort: used with another sort, or forged, it is a 400 INVALID_CURSOR', async () => {
        const first = (sort?: 'lastSeen' | 'occurrences' | 'affectedTests') =>
          viewer.client.call(v1.failures.listFailureGroups, {
            params: { projectId: onMain },
            query: { limit: 1, ...(sort ? { sort } : {}) },
          });
        const list = (query: Record<string, string>) =>
          rawRequest(`${server.url}/api/v1/projects/${onMain}/failures?${new URLSearchParams(query)}`, {
            headers: jsonHeaders(viewer.key),
          });
        const cursors = {
          lastSeen: (await first()).nextCursor as string,
          occurrences: (await first('occurrences')).nextCursor as string,
          affectedTests: (await first('affectedTests')).nextCursor as string,
        };
        for (const [issued, cursor] of Object.entries(cursors)) {
          assert.ok(cursor, issued);
          for (const sort of ['lastSeen', 'occurrences', 'affectedTests']) {
            const response = await list({ limit: '1', cursor, ...(sort === 'lastSeen' ? {} : { sort }) });
            if (sort === issued) {
              assert.equal(response.status, 200, response.text);
              assert.equal((response.json.items as unknown[]).length, 1);
            } else {
              assertProblem(response, 400, 'INVALID_CURSOR');
              assert.match(String(response.json.detail), new RegExp(`another sort than ${sort}`));
            }
          }
        }
        // A cursor naming its sort but holding text where the sort's column is an integer (or the reverse).
        const forged = (values: unknown[]) => Buffer.from(JSON.stringify(values)).toString('base64url');
        for (const [sort, cursor] of [
          ['occurrences', forged(['occurrences', 'many', 'x'])],
          ['affectedTests', forged(['affectedTests', 1.5, 'x'])],
          ['lastSeen', forged(['lastSeen', 3, 'x'])],
          ['occurrences', forged([3, 'x'])],
        ] as const) {
          assertProblem(await list({ sort, cursor }), 400, 'INVALID_CURSOR');
        }
      });

      test('filters by status, category, branch, since, test, defect type and text', async () => {
        assert.equal((await groupsOf({ branch: 'main' }, onMain)).length, 1);
        assert.equal((await groupsOf({ branch: 'feature' }, onMain)).length, 2);
        assert.equal((await groupsOf({ branch: 'nope' }, onMain)).length, 0);
        const timeouts = await groupsOf({ category: 'timeout' }, onMain);
        assert.equal(timeouts.length, 1);
        assert.equal((await groupsOf({ status: 'new' }, onMain)).length, 3);
        assert.equal((await groupsOf({ status: 'known' }, onMain)).length, 0);
        assert.equal((await groupsOf({ q: 'LOCATOR(' }, onMain)).length, 1, 'case-insensitive, special characters literal');
        assert.equal((await groupsOf({ q: '%' }, onMain)).length, 0, 'a LIKE wildcard is a character');
        const latest = (await groupsOf({}, onMain))[0] as Group;
        assert.equal((await groupsOf({ since: latest.lastSeenAt }, onMain)).length, 2, 'the second job');
        const run = (await runsOfJob(jobs[0] as string)).find((r) => r.name === 'a');
        const ofTest = await groupsOf({ testId: run?.testId as string }, onMain);
        assert.deepEqual(
          ofTest.map((g) => g.id),
          [run?.failureGroupId],
        );
        await tester.client.call(v1.failures.triageFailureGroup, {
          params: { projectId: onMain, groupId: timeouts[0]?.id as string },
          body: { defectType: 'automation_bug' },
        });
        assert.deepEqual(
          (await groupsOf({ defectType: 'automation_bug' }, onMain)).map((g) => g.id),
          [timeouts[0]?.id],
        );
      });

      test("another project's groups are not listed, and a bad query is a 400", async () => {
        const listed = await server.admin.client.call(v1.failures.listFailureGroups, { params: { projectId: projectB } });
        assert.equal(listed.items.length, 0);
        await assert.rejects(
          viewer.client.call(v1.failures.listFailureGroups, { params: { projectId: onMain }, query: { sort: 'bogus' as never } }),
          (error) => refused(error, 400),
        );
        await assert.rejects(
          viewer.client.call(v1.failures.listFailureGroups, { params: { projectId: projectB } }),
          (error) => refused(error, 404) || refused(error, 403),
        );
      });
    });

    describe('PATCH /projects/{projectId}/failures/{groupId}', () => {
      let groupId: string;
      before(async () => {
        const run = await tester.client.call(v1.runs.createRun, {
          body: {
            projectId: projectA,
            name: 'to triage',
            verdict: 'failed',
            results: { steps: [{ title: 's', status: 'failed', error: phrase('cause') }] },
          },
        });
        groupId = run.failureGroupId as string;
      });

      test('refuses a bad defect type or issue link (400), a viewer (403), and a group of another project (404)', async () => {
        const patch = (body: unknown, client: AttestClient = tester.client, projectId = projectA) =>
          client.call(v1.failures.triageFailureGroup, { params: { projectId, groupId }, body: body as never });
        await assert.rejects(
          patch({ defectType: 'feature' }),
          (error) => refused(error, 400) && firstPointer(error as ApiError) === '/body/defectType',
        );
        await assert.rejects(
          patch({ issueUrl: 'ftp://issues.example.com/1' }),
          (error) => refused(error, 400) && firstPointer(error as ApiError) === '/body/issueUrl',
        );
        await assert.rejects(
          patch({ issueUrl: 'https://[oops/1' }),
          (error) => refused(error, 400) && firstPointer(error as ApiError) === '/body/issueUrl',
        );
        await assert.rejects(patch({}), (error) => refused(error, 400));
        await assert.rejects(patch({ comment: 'looked' }, viewer.client), (error) => refused(error, 403));
        await assert.rejects(patch({ comment: 'looked' }, server.admin.client, projectB), (error) => refused(error, 404));
        await assert.rejects(
          groupOf(groupId, projectB).catch((e) => Promise.reject(e)),
          (error) => refused(error, 404) || refused(error, 403),
        );
        await assert.rejects(server.admin.client.call(v1.failures.getFailureGroup, { params: { projectId: projectB, groupId } }), (error) =>
          refused(error, 404),
        );
        const group = await groupOf(groupId);
        assert.equal(group.triagedAt, null, 'nothing changed');
      });

      test('sets and clears fields, resolves and sees a resolved group regress, and audits each triage', async () => {
        const resolved = await tester.client.call(v1.failures.triageFailureGroup, {
          params: { projectId: projectA, groupId },
          body: { status: 'resolved', comment: 'fixed in 2.1', assignee: 'ana@example.com' },
        });
        assert.equal(resolved.status, 'resolved');
        const cleared = await tester.client.call(v1.failures.triageFailureGroup, {
          params: { projectId: projectA, groupId },
          body: { assignee: null },
        });
        assert.equal(cleared.assignee, null);
        assert.equal(cleared.comment, 'fixed in 2.1');
        const { message } = await groupOf(groupId);
        await tester.client.call(v1.runs.createRun, {
          body: {
            projectId: projectA,
            name: 'again',
            verdict: 'failed',
            results: { steps: [{ title: 's', status: 'failed', error: message }] },
          },
        });
        assert.equal((await groupOf(groupId)).status, 'regressed');
        const audit = await server.admin.client.call(v1.users.listAuditLog, {
          query: { action: 'failure-group.triage', targetId: groupId },
        });
        assert.equal(audit.items.length, 2);
        assert.equal(audit.items[0]?.targetType, 'failure-group');
      });

      test('bulk triage changes every group named, or none when one is unknown', async () => {
        const make = async () =>
          (
            await tester.client.call(v1.runs.createRun, {
              body: {
                projectId: projectA,
                name: 'bulk',
                verdict: 'failed',
                results: { steps: [{ title: 's', status: 'failed', error: phrase('bulk') }] },
              },
            })
          ).failureGroupId as string;
        const ids = [await make(), await make()];
        const answer = await tester.client.call(v1.failures.triageFailureGroups, {
          params: { projectId: projectA },
          body: { groupIds: ids, changes: { defectType: 'system_issue' } },
        });
        assert.deepEqual(
          answer.items.map((g) => [g.id, g.defectType]),
          ids.map((id) => [id, 'system_issue']),
        );
        await assert.rejects(
          tester.client.call(v1.failures.triageFailureGroups, {
            params: { projectId: projectA },
            body: { groupIds: [...ids, '00000000-0000-4000-8000-000000000000'], changes: { defectType: 'no_defect' } },
          }),
          (error) => refused(error, 404),
        );
        for (const id of ids) assert.equal((await groupOf(id)).defectType, 'system_issue');
      });
    });

    describe('GET and PUT /projects/{projectId}/failure-rules', () => {
      test("Allure's categories.json names groups (new ones, and the untriaged ones at once); a regex RE2 cannot compile is refused, and none can hang the server", async () => {
        const projectId = (await createProject(server, 'rules')).id;
        for (const email of [tester.email, viewer.email, manager.email])
          await server.admin.client.call(v1.projects.addMember, { params: { projectId, email } });
        const fail = async (name: string, error: string, verdict: 'failed' | 'broken' = 'failed') =>
          (
            await tester.client.call(v1.runs.createRun, {
              body: { projectId, name, verdict, results: { steps: [{ title: 's', status: verdict, error }] } },
            })
          ).failureGroupId as string;
        const before = await fail('before', 'Error: connect ECONNREFUSED 127.0.0.1:5432');
        const triaged = await fail('triaged', 'Error: connect ECONNREFUSED 127.0.0.1:6379 (redis)');
        await tester.client.call(v1.failures.triageFailureGroup, {
          params: { projectId, groupId: triaged },
          body: { defectType: 'no_defect' },
        });

        const categories = [
          { name: 'Ignored tests', matchedStatuses: ['skipped'] },
          {
            name: 'Infrastructure problems',
            messageRegex: '.*ECONNREFUSED.*',
            matchedStatuses: ['broken', 'failed'],
            defectType: 'system_issue',
            flaky: false,
          },
          { name: 'Product defects', matchedStatuses: ['failed'] },
        ];
        const put = await manager.client.call(v1.failures.putFailureRules, { params: { projectId }, body: categories as never });
        assert.deepEqual(
          put.rules.map((r) => r.name),
          ['Ignored tests', 'Infrastructure problems', 'Product defects'],
        );
        assert.deepEqual((await viewer.client.call(v1.failures.getFailureRules, { params: { projectId } })).rules, put.rules);

        const renamed = await groupOf(before, projectId);
        assert.equal(renamed.rule, 'Infrastructure problems', 'an untriaged group is named at once');
        assert.equal(renamed.defectType, 'system_issue');
        const kept = await groupOf(triaged, projectId);
        assert.equal(kept.defectType, 'no_defect', 'a triaged group keeps its triage');
        assert.equal(kept.rule, null);

        const product = await groupOf(await fail('after', 'expected:<1> but was:<2>'), projectId);
        assert.equal(product.rule, 'Product defects', 'a new group is named as it is created');
        assert.equal(product.defectType, 'to_investigate', 'a rule without a defect type leaves it');
        const broken = await groupOf(await fail('broken', 'TypeError: x is not a function', 'broken'), projectId);
        assert.equal(broken.rule, null, 'no rule matches a broken run outside the infrastructure rule');

        // Not RE2 syntax (backreferences, lookaround, a repeat above 1,000) or not compiling: refused, naming the regex.
        for (const [body, pointer] of [
          [{ rules: [{ name: 'backreference', messageRegex: '(a)\\1' }] }, '/body/rules/0/messageRegex'],
          [{ rules: [{ name: 'ok' }, { name: 'bad', traceRegex: '([' }] }, '/body/rules/1/traceRegex'],
          [[{ name: 'lookahead', messageRegex: '(?=x)y' }], '/body/0/messageRegex'],
          [{ rules: [{ name: 'ok' }, { name: 'ok too' }, { name: 'lookbehind', messageRegex: '(?<=a)b' }] }, '/body/rules/2/messageRegex'],
          [{ rules: [{ name: 'repeat', traceRegex: 'a{1001}' }] }, '/body/rules/0/traceRegex'],
        ] as const) {
          await assert.rejects(
            manager.client.call(v1.failures.putFailureRules, { params: { projectId }, body: body as never }),
            (error) =>
              refused(error, 400) &&
              firstPointer(error as ApiError) === pointer &&
              /RE2 syntax/.test(String((error as ApiError).problem.detail)),
          );
        }
        await assert.rejects(tester.client.call(v1.failures.putFailureRules, { params: { projectId }, body: { rules: [] } }), (error) =>
          refused(error, 403),
        );
        assert.equal(
          (await viewer.client.call(v1.failures.getFailureRules, { params: { projectId } })).rules.length,
          3,
          'refusals changed nothing',
        );

        // Patterns that backtrack exponentially (or polynomially) in a backtracking engine are linear under
        // RE2: accepted, and matched against long messages as they are recorded and as groups are named again.
        const catastrophic = [
          { name: 'a or a', messageRegex: '(a|a)*', matchedStatuses: ['broken'] },
          { name: 'a or aa', messageRegex: '(a|aa)*b', matchedStatuses: ['broken'] },
          { name: 'word or digit', messageRegex: '(\\w|\\d)*!', matchedStatuses: ['broken'] },
          { name: 'dots', messageRegex: '.*.*.*.*x', matchedStatuses: ['broken'] },
        ];
        await manager.client.call(v1.failures.putFailureRules, { params: { projectId }, body: { rules: catastrophic } as never });
        const matchedBy = async (name: string, error: string) => (await groupOf(await fail(name, error, 'broken'), projectId)).rule;
        // Thousands of characters: a backtracking engine gives up on these at a few dozen (29 took 16.9 s).
        // Each message starts differently, so that each is a group of its own (the fingerprint reads 500 characters a line).
        assert.equal(await matchedBy('only a', 'a'.repeat(8000)), 'a or a');
        assert.equal(await matchedBy('a then b', `${'a'.repeat(499)}b`), 'a or aa');
        assert.equal(await matchedBy('digits then !', `${'1'.repeat(7999)}!`), 'word or digit');
        assert.equal(await matchedBy('y then x', `${'y'.repeat(7999)}x`), 'dots');
        assert.equal(await matchedBy('x then y', `${'x'.repeat(7999)}y`), null, 'no rule matches: each was tried to the end');
        await manager.client.call(v1.failures.putFailureRules, { params: { projectId }, body: { rules: [] } });
        const unnamed = await groupOf(before, projectId);
        assert.equal(unnamed.rule, null, 'rules removed: the untriaged group is unnamed again');
        assert.equal(unnamed.defectType, 'to_investigate');
        const audit = await server.admin.client.call(v1.users.listAuditLog, {
          query: { action: 'failure-rules.set', targetId: projectId },
        });
        assert.equal(audit.items.length, 3);
      });
    });

    describe('exports carry the triage (TRIAGE-9)', () => {
      test('Allure results name the category and link the issue, Xray lists the defect, JUnit carries properties', async () => {
        const jobId = await importJunit(junit(unique('export-'), checkoutSuite(7)));
        const runs = await runsOfJob(jobId);
        const pay = runs.find((run) => run.name === 'pays with a saved card') as (typeof runs)[number];
        const groupId = pay.failureGroupId as string;
        await tester.client.call(v1.failures.triageFailureGroup, {
          params: { projectId: projectA, groupId },
          body: { defectType: 'product_bug', issueUrl: 'https://jira.example.com/browse/SHOP-12', comment: 'orders API 500' },
        });
        const exportOf = async (format: string, accept = '*/*') => {
          const response = await fetch(`${server.url}/api/v1/testmgmt/jobs/${jobId}/export?format=${format}`, {
            headers: { 'service.api-token': viewer.key, accept },
          });
          assert.equal(response.status, 200);
          return new Uint8Array(await response.arrayBuffer());
        };
        const { unzipSync } = await import('fflate');
        const allure = unzipSync(await exportOf('allure'));
        const results = Object.entries(allure)
          .filter(([name]) => name.endsWith('-result.json'))
          .map(([, bytes]) => JSON.parse(Buffer.from(bytes).toString()) as Record<string, unknown>);
        const payResult = results.find((r) => r.name === 'pays with a saved card') as {
          links: { type: string; url: string; name: string }[];
          statusDetails: { known?: boolean; message: string };
          labels: { name: string; value: string }[];
        };
        assert.deepEqual(payResult.links, [{ type: 'issue', name: 'SHOP-12', url: 'https://jira.example.com/browse/SHOP-12' }]);
        assert.equal(payResult.statusDetails.known, true);
        assert.ok(payResult.labels.some((l) => l.name === 'defectType' && l.value === 'product_bug'));
        const categories = JSON.parse(Buffer.from(allure['allure-results/categories.json'] as Uint8Array).toString()) as {
          name: string;
          messageRegex: string;
          matchedStatuses: string[];
        }[];
        const product = categories.find((c) => c.name.startsWith('Product bug'));
        assert.ok(product, JSON.stringify(categories));
        assert.match(payResult.statusDetails.message, new RegExp(`^(?:${product.messageRegex})$`), "Allure's category matches the result");
        assert.deepEqual(product.matchedStatuses, ['failed']);
        assert.ok(
          categories.some((c) => c.name.startsWith('To investigate')),
          'the untriaged groups have theirs',
        );

        const xray = JSON.parse(Buffer.from(await exportOf('xray')).toString()) as {
          tests: { testInfo: { summary: string }; defects?: string[]; comment: string }[];
        };
        const xrayPay = xray.tests.find((t) => t.testInfo.summary === 'pays with a saved card');
        assert.deepEqual(xrayPay?.defects, ['SHOP-12']);
        assert.match(
          xrayPay?.comment ?? '',
          /^Defect type: Product bug\nIssue: https:\/\/jira\.example\.com\/browse\/SHOP-12\nTriage: orders API 500/,
        );

        const xml = Buffer.from(await exportOf('junit', 'application/xml')).toString();
        const testcase = /<testcase name="pays with a saved card"[\s\S]*?<\/testcase>/.exec(xml)?.[0] ?? '';
        assert.match(testcase, /<property name="attest.defectType" value="product_bug"\/>/);
        assert.match(testcase, /<property name="attest.issueUrl" value="https:\/\/jira.example.com\/browse\/SHOP-12"\/>/);
        assert.match(testcase, new RegExp(`<property name="attest.failureGroupId" value="${groupId}"/>`));
        const basket = /<testcase name="shows the basket"[\s\S]*?<\/testcase>/.exec(xml)?.[0] ?? '';
        assert.doesNotMatch(basket, /<properties>/, 'a passed test has none');
      });
    });

    describe('deletions', () => {
      test('deleting a run, its job and the project keeps working, the groups keeping their counts until the project goes', async () => {
        const projectId = (await createProject(server, 'deletions')).id;
        await server.admin.client.call(v1.projects.addMember, { params: { projectId, email: tester.email } });
        await server.admin.client.call(v1.projects.addMember, { params: { projectId, email: viewer.email } });
        const jobId = await importJunit(junit(unique('del-'), checkoutSuite(5)), projectId);
        const [run] = (await runsOfJob(jobId, server.admin.client)).filter((r) => r.failureGroupId !== null);
        const groupId = run?.failureGroupId as string;
        await server.admin.client.call(v1.runs.deleteRun, { params: { testRunId: run?.id as string } });
        const group = await server.admin.client.call(v1.failures.getFailureGroup, { params: { projectId, groupId } });
        assert.equal(group.occurrences, 1, 'the counters count what was recorded');
        assert.deepEqual(group.latestOccurrences, []);
        await server.admin.client.call(v1.jobs.deleteJob, { params: { jobId } });
        await server.admin.client.call(v1.projects.deleteProject, { params: { projectId } });
        await assert.rejects(server.admin.client.call(v1.failures.getFailureGroup, { params: { projectId, groupId } }), (error) =>
          refused(error, 404),
        );
      });
    });
  });
}
