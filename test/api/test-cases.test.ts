import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type ApiError, type AttestClient, AttestClient as Client, v1 } from '../../src/client/index.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { type ServerWithTwoProjects, serverWithTwoProjects, unique } from '../helpers/factories.ts';
import { encodeForm, jsonHeaders, rawRequest } from '../helpers/http.ts';
import { firstPointer, isProblem } from '../helpers/problems.ts';

// TCM-1..8 (docs/test-management.md): test-case management over real HTTP on both dialects.

const FEATURE = `@smoke
Feature: Pay by card
  Scenario: Pay
    Given a cart of 2 books
    When the buyer pays by card
    Then the order is confirmed
`;

/** The same feature with a typo on line 5: `Whenn` is no keyword, so the parser stops there. */
const BROKEN_FEATURE = `@smoke
Feature: Pay by card
  Scenario: Pay
    Given a cart of 2 books
    Whenn the buyer pays by card
    Then the order is confirmed
`;

const problemOf = async (response: Response): Promise<ApiError> =>
  Client.read(response).then(
    () => assert.fail(`expected a problem, got ${response.status}`),
    (e: ApiError) => e,
  );

const sendGherkin = (client: AttestClient, method: 'POST' | 'PATCH', path: string, text: string) =>
  client.fetchRaw(method, path, { headers: { 'content-type': 'text/x-gherkin; charset=utf-8' }, body: text });

for (const dialect of DIALECTS) {
  describe(`[${dialect}] test-case management`, () => {
    let { server, projectA, projectB, tester, viewer, outsider } = {} as ServerWithTwoProjects;
    before(async () => {
      ({ server, projectA, projectB, tester, viewer, outsider } = await serverWithTwoProjects(dialect));
    });
    after(() => server.close());

    // The test clock stands still: each test is made a second after the one before, so newest-first is known.
    const create = (body: Record<string, unknown> = {}) => {
      server.clock.advance(1000);
      return tester.client.call(v1.tests.createTest, {
        body: { projectId: projectA, name: unique('case-'), steps: [{ action: 'Open the page', expected: 'It shows' }], ...body } as never,
      });
    };
    const edit = (testId: string, body: Record<string, unknown>, client = tester.client) =>
      client.call(v1.tests.updateTest, { params: { testId }, body: body as never });

    describe('TCM-1 and TCM-2: a test with suite, links and step data, edited in versions', () => {
      test('creates at version 1 with its suite trimmed, links and step data; an edit bumps the version and keeps the old one', async () => {
        const created = await create({
          suite: ' Checkout / Payments ',
          links: [{ kind: 'requirement', key: ' SHOP-12 ', url: 'https://jira.example.com/browse/SHOP-12', title: 'Pay' }],
          steps: [
            { action: 'Sign in', data: 'maria@example.com', expected: 'Signed in' },
            { action: 'Pay', expected: 'Paid' },
          ],
        });
        assert.equal(created.version, 1);
        assert.equal(created.suite, 'Checkout/Payments');
        assert.deepEqual(created.links, [
          { kind: 'requirement', key: 'SHOP-12', url: 'https://jira.example.com/browse/SHOP-12', title: 'Pay' },
        ]);
        assert.deepEqual(created.steps, [
          { action: 'Sign in', data: 'maria@example.com', expected: 'Signed in' },
          { action: 'Pay', expected: 'Paid' },
        ]);
        assert.equal(created.updatedAt, created.createdAt);

        server.clock.advance(60_000);
        const edited = await edit(created.id, {
          version: 1,
          name: 'Pay with a saved card',
          steps: [{ action: 'Pay', data: 'card 4242', expected: 'Paid' }],
          tags: ['smoke'],
          suite: null,
        });
        assert.equal(edited.version, 2);
        assert.equal(edited.name, 'Pay with a saved card');
        assert.equal(edited.suite, null);
        assert.deepEqual(edited.tags, ['smoke']);
        assert.deepEqual(edited.links, created.links, 'links left out are kept');
        assert.notEqual(edited.updatedAt, created.updatedAt);

        const read = await viewer.client.call(v1.tests.getTest, { params: { testId: created.id } });
        assert.equal(read.version, 2);
        const versions = await viewer.client.call(v1.tests.listTestVersions, { params: { testId: created.id } });
        assert.deepEqual(
          versions.items.map((v) => [v.version, v.current]),
          [
            [2, true],
            [1, false],
          ],
        );
        const first = await viewer.client.call(v1.tests.getTestVersion, { params: { testId: created.id, version: 1 } });
        assert.equal(first.name, created.name);
        assert.equal(first.suite, 'Checkout/Payments');
        assert.deepEqual(first.steps, created.steps);
        assert.equal(first.createdAt, created.createdAt);
        await assert.rejects(
          viewer.client.call(v1.tests.getTestVersion, { params: { testId: created.id, version: 3 } }),
          isProblem(404, 'NOT_FOUND'),
        );

        const audit = await server.admin.client.call(v1.users.listAuditLog, { query: { action: 'test.update', targetId: created.id } });
        assert.equal(audit.items.length, 1);
        assert.deepEqual(audit.items[0]?.details.fromVersion, 1);
        assert.deepEqual(audit.items[0]?.details.toVersion, 2);
      });

      test('an edit that changes nothing keeps the version; a stale version is a 409 that changes nothing', async () => {
        const created = await create({ tags: ['a'] });
        const same = await edit(created.id, { name: created.name, tags: ['a'] });
        assert.equal(same.version, 1);
        await edit(created.id, { description: 'new' });
        await assert.rejects(edit(created.id, { version: 1, description: 'lost update' }), isProblem(409, 'STATE_CONFLICT'));
        const read = await viewer.client.call(v1.tests.getTest, { params: { testId: created.id } });
        assert.equal(read.description, 'new');
        assert.equal(read.version, 2);
      });

      test('versions page newest first with a cursor', async () => {
        const created = await create();
        for (let i = 1; i <= 4; i++) await edit(created.id, { description: `edit ${i}` });
        const seen: number[] = [];
        let cursor: string | undefined;
        do {
          const page = await viewer.client.call(v1.tests.listTestVersions, {
            params: { testId: created.id },
            query: cursor === undefined ? { limit: 2 } : { limit: 2, cursor },
          });
          seen.push(...page.items.map((v) => v.version));
          cursor = page.nextCursor ?? undefined;
        } while (cursor);
        assert.deepEqual(seen, [5, 4, 3, 2, 1]);
      });

      test('a Gherkin test is edited through its text; its name is refused alone, steps make it a JSON test', async () => {
        const created = await tester.client.call(v1.tests.createTest, {
          body: { projectId: projectA, gherkin: FEATURE, suite: 'Checkout' },
        });
        assert.equal(created.suite, 'Checkout');
        assert.equal(created.sourceFormat, 'gherkin');
        await assert.rejects(edit(created.id, { name: 'Other' }), (e: ApiError) => e.status === 400 && firstPointer(e) === '/body/name');

        const changed = FEATURE.replace('2 books', '3 books');
        const response = await sendGherkin(tester.client, 'PATCH', `/testmgmt/tests/${created.id}?version=1`, changed);
        assert.equal(response.status, 200);
        const edited = (await response.json()) as { version: number; source: string; steps: { action: string }[]; suite: string };
        assert.equal(edited.version, 2);
        assert.equal(edited.source, changed);
        assert.equal(edited.steps[0]?.action, 'Given a cart of 3 books');
        assert.equal(edited.suite, 'Checkout', 'the suite does not come from the text');

        const json = await edit(created.id, { steps: [{ action: 'By hand', expected: '' }] });
        assert.equal(json.sourceFormat, 'json');
        assert.equal(json.source, null);
        assert.equal(json.version, 3);
      });

      test('Gherkin syntax errors answer 400 with their line and column, on create and edit, and nothing changes', async () => {
        const onCreate = await problemOf(await sendGherkin(tester.client, 'POST', `/testmgmt/tests?projectId=${projectA}`, BROKEN_FEATURE));
        assert.equal(onCreate.status, 400);
        const errors = onCreate.problem.errors as { pointer: string; line?: number; column?: number; message: string }[];
        assert.equal(errors[0]?.pointer, '/body');
        assert.equal(errors[0]?.line, 5);
        assert.equal(errors[0]?.column, 5);
        assert.match(errors[0]?.message ?? '', /^line 5, column 5: /);

        const created = await tester.client.call(v1.tests.createTest, { body: { projectId: projectA, gherkin: FEATURE } });
        const onEdit = await problemOf(await sendGherkin(tester.client, 'PATCH', `/testmgmt/tests/${created.id}`, BROKEN_FEATURE));
        assert.equal((onEdit.problem.errors as { line?: number }[])[0]?.line, 5);
        await assert.rejects(edit(created.id, { gherkin: BROKEN_FEATURE }), (e: ApiError) => {
          const first = (e.problem.errors as { pointer: string; line?: number }[])[0];
          return e.status === 400 && first?.pointer === '/body/gherkin' && first.line === 5;
        });
        const read = await viewer.client.call(v1.tests.getTest, { params: { testId: created.id } });
        assert.equal(read.version, 1);
        assert.equal(read.source, FEATURE);
      });
    });

    describe('TCM-3: a run records the version of its test', () => {
      test('a run started before an edit keeps the old version, and that version reads its old steps', async () => {
        const created = await create({ steps: [{ action: 'Old step', expected: '' }] });
        const before = await tester.client.call(v1.runs.createRun, { body: { projectId: projectA, name: 'manual', testId: created.id } });
        assert.equal(before.testVersion, 1);
        await edit(created.id, { steps: [{ action: 'New step', expected: '' }] });
        const afterEdit = await tester.client.call(v1.runs.createRun, { body: { projectId: projectA, name: 'again', testId: created.id } });
        assert.equal(afterEdit.testVersion, 2);
        const read = await viewer.client.call(v1.runs.getRun, { params: { testRunId: before.id } });
        assert.equal(read.testVersion, 1);
        const executed = await viewer.client.call(v1.tests.getTestVersion, {
          params: { testId: created.id, version: read.testVersion as number },
        });
        assert.deepEqual(executed.steps, [{ action: 'Old step', expected: '' }]);

        const job = await tester.client.call(v1.jobs.createJob, { body: { projectId: projectA, testIds: [created.id] } });
        const runs = await viewer.client.call(v1.runs.listRuns, { query: { projectId: projectA, jobId: job.id } });
        assert.deepEqual(
          runs.items.map((r) => r.testVersion),
          [2],
        );
        // A person takes the job's queued run (TCM-7): queued → running through PATCH, a retry harmless.
        const queued = runs.items[0] as (typeof runs.items)[number];
        const taken = await tester.client.call(v1.runs.updateRun, { params: { testRunId: queued.id }, body: { status: 'running' } });
        assert.equal(taken.status, 'running');
        const again = await tester.client.call(v1.runs.updateRun, { params: { testRunId: queued.id }, body: { status: 'running' } });
        assert.equal(again.startedAt, taken.startedAt);

        const named = await tester.client.call(v1.runs.createRun, {
          body: { projectId: projectA, name: 'reporter', testName: unique('spec › ') },
        });
        assert.equal(named.testVersion, 1);
        const free = await tester.client.call(v1.runs.createRun, { body: { projectId: projectA, name: 'no test' } });
        assert.equal(free.testVersion, null);
      });
    });

    describe('TCM-5: filters and the suite tree', () => {
      test('suite keeps a folder and its subfolders; tag, q and link narrow; all combine with health and sort', async () => {
        const mark = unique('F');
        const a = await create({ name: `${mark} alpha pay`, suite: `${mark}/Checkout`, tags: ['Smoke'] });
        const b = await create({
          name: `${mark} beta`,
          suite: `${mark}/Checkout/Payments`,
          links: [{ kind: 'issue', key: `${mark}-7` }],
        });
        const c = await create({
          name: `${mark} gamma PAY`,
          suite: `${mark}/Checkouts`,
          tags: ['smoke_x'],
          links: [{ kind: 'requirement', url: `https://wiki.example.com/${mark}` }],
        });
        const ids = async (query: Record<string, string>) =>
          (await viewer.client.call(v1.tests.listTests, { query: { projectId: projectA, limit: 100, ...query } })).items.map((t) => t.id);

        assert.deepEqual(await ids({ suite: `${mark}/Checkout` }), [b.id, a.id]);
        assert.deepEqual(await ids({ suite: `${mark}/Checkout/Payments` }), [b.id]);
        assert.deepEqual(await ids({ suite: ` ${mark} / Checkouts ` }), [c.id], 'the filter is trimmed like a stored suite');
        assert.deepEqual(await ids({ suite: mark, tag: 'smoke' }), [a.id], 'a tag in any case, whole: smoke_x is another tag');
        assert.deepEqual(await ids({ suite: mark, q: 'pay' }), [c.id, a.id]);
        assert.deepEqual(await ids({ link: `${mark}-7`.toLowerCase() }), [b.id]);
        assert.deepEqual(await ids({ link: `https://wiki.example.com/${mark}` }), [c.id]);
        assert.deepEqual(await ids({ suite: mark, health: 'stable', sort: 'flaky', q: 'a' }), [c.id, b.id, a.id]);
        const page = await viewer.client.call(v1.tests.listTests, { query: { projectId: projectA, suite: mark, limit: 2 } });
        assert.equal(page.items.length, 2);
        const rest = await viewer.client.call(v1.tests.listTests, {
          query: { projectId: projectA, suite: mark, limit: 2, cursor: page.nextCursor as string },
        });
        assert.deepEqual(
          rest.items.map((t) => t.id),
          [a.id],
        );
      });

      test('the suite tree counts each folder and its subfolders, with the tests in none', async () => {
        const { server: own, projectA: project, tester: writer } = await serverWithTwoProjects(dialect);
        try {
          const make = (suite: string | null) =>
            writer.client.call(v1.tests.createTest, {
              body: { projectId: project, name: unique('t-'), steps: [{ action: 'x', expected: '' }], suite },
            });
          await make('B');
          await make('A/C');
          await make('A/B/D');
          await make('A/B/D');
          await make(null);
          const tree = await writer.client.call(v1.tests.listSuites, { params: { projectId: project } });
          assert.deepEqual(tree, {
            items: [
              { path: 'A', name: 'A', parent: null, depth: 1, tests: 0, total: 3 },
              { path: 'A/B', name: 'B', parent: 'A', depth: 2, tests: 0, total: 2 },
              { path: 'A/B/D', name: 'D', parent: 'A/B', depth: 3, tests: 2, total: 2 },
              { path: 'A/C', name: 'C', parent: 'A', depth: 2, tests: 1, total: 1 },
              { path: 'B', name: 'B', parent: null, depth: 1, tests: 1, total: 1 },
            ],
            unsorted: 1,
            total: 5,
          });
          const none = await writer.client.call(v1.tests.listTests, { query: { projectId: project, suite: '' } });
          assert.equal(none.items.length, 1);
        } finally {
          await own.close();
        }
      });
    });

    describe('TCM-4: links and traceability', () => {
      test('each distinct link with its tests and their latest verdicts, paged', async () => {
        const { server: own, projectA: project, tester: writer, viewer: reader } = await serverWithTwoProjects(dialect);
        try {
          const make = (name: string, links: unknown[]) =>
            writer.client.call(v1.tests.createTest, {
              body: { projectId: project, name, steps: [{ action: 'x', expected: '' }], links: links as never },
            });
          const run = async (testId: string, verdict: 'passed' | 'failed') => {
            own.clock.advance(1000);
            await writer.client.call(v1.runs.createRun, { body: { projectId: project, name: 'r', testId, verdict } });
          };
          const login = await make('Login', [{ kind: 'requirement', key: 'SHOP-12', title: 'Sign in' }]);
          const logout = await make('Logout', [
            { kind: 'requirement', key: 'shop-12', url: 'https://jira.example.com/browse/SHOP-12' },
            { kind: 'issue', url: 'https://github.com/acme/shop/issues/3' },
          ]);
          await make('Unrun', [{ kind: 'requirement', key: 'SHOP-99' }]);
          await run(login.id, 'failed');
          await run(login.id, 'passed');
          await run(logout.id, 'passed');
          await run(logout.id, 'failed');
          // A run still going says nothing yet.
          await writer.client.call(v1.runs.createRun, { body: { projectId: project, name: 'r', testId: logout.id } });

          const first = await reader.client.call(v1.tests.listLinks, { params: { projectId: project }, query: { limit: 2 } });
          assert.deepEqual(
            first.items.map((l) => [l.kind, l.key ?? l.url]),
            [
              ['issue', 'https://github.com/acme/shop/issues/3'],
              ['requirement', first.items[1]?.key],
            ],
          );
          const shop12 = first.items[1] as (typeof first.items)[number];
          assert.equal(shop12.key?.toUpperCase(), 'SHOP-12', 'two tests naming SHOP-12 in any case link one requirement');
          assert.equal(shop12.url, 'https://jira.example.com/browse/SHOP-12');
          assert.equal(shop12.title, 'Sign in');
          assert.deepEqual(
            shop12.tests.map((t) => [t.name, t.latestVerdict]),
            [
              ['Login', 'passed'],
              ['Logout', 'failed'],
            ],
          );
          assert.deepEqual(shop12.summary, { tests: 2, passed: 1, failed: 1, broken: 0, skipped: 0, notRun: 0 });
          const rest = await reader.client.call(v1.tests.listLinks, {
            params: { projectId: project },
            query: { limit: 2, cursor: first.nextCursor as string },
          });
          assert.equal(rest.nextCursor, null);
          assert.deepEqual(
            rest.items.map((l) => [l.key, l.summary.notRun, l.tests[0]?.latestVerdict]),
            [['SHOP-99', 1, null]],
          );
          const issues = await reader.client.call(v1.tests.listLinks, { params: { projectId: project }, query: { kind: 'issue' } });
          assert.equal(issues.items.length, 1);
          const searched = await reader.client.call(v1.tests.listLinks, { params: { projectId: project }, query: { q: 'sign' } });
          assert.deepEqual(
            searched.items.map((l) => l.title),
            ['Sign in'],
          );

          // Editing links re-indexes them: Login leaves SHOP-12.
          await writer.client.call(v1.tests.updateTest, { params: { testId: login.id }, body: { links: [] } });
          const after = await reader.client.call(v1.tests.listLinks, { params: { projectId: project }, query: { kind: 'requirement' } });
          assert.deepEqual(
            after.items.map((l) => l.tests.map((t) => t.name)),
            [['Logout'], ['Unrun']],
          );
        } finally {
          await own.close();
        }
      });
    });

    describe('TCM-6: imports file the tests they create in the report suites', () => {
      test('JUnit nested suite names become the folder path; classname parts without suites; existing tests keep theirs', async () => {
        const mark = unique('S');
        const xml = `<?xml version="1.0"?>
<testsuites name="nightly">
  <testsuite name="${mark}">
    <testsuite name="Checkout / Payments">
      <testcase classname="pay" name="pays" time="1"/>
    </testsuite>
  </testsuite>
  <testsuite>
    <testcase classname="com.acme.${mark}Test" name="loose" time="1"/>
  </testsuite>
</testsuites>`;
        const importOf = async (bytes: Buffer, build: string) => {
          const form = new FormData();
          form.append('options', JSON.stringify({ build }));
          form.append('file', new Blob([bytes]), 'report.xml');
          const { payload, contentType } = await encodeForm(form);
          const answer = await rawRequest(`${server.url}/api/v1/projects/${projectA}/imports`, {
            method: 'POST',
            headers: { ...jsonHeaders(tester.key), 'content-type': contentType, 'content-length': payload.length },
            body: payload,
          });
          assert.equal(answer.status, 202, answer.text);
          for (let i = 0; i < 400; i++) {
            const record = await viewer.client.call(v1.imports.getImport, {
              params: { projectId: projectA, importId: String(answer.json.id) },
            });
            if (record.status === 'completed') return record;
            assert.notEqual(record.status, 'failed', record.error ?? '');
            await new Promise((resolve) => setTimeout(resolve, 25));
          }
          throw new Error('the import did not finish');
        };
        const record = await importOf(Buffer.from(xml), '1');
        const tests = (await viewer.client.call(v1.tests.listTests, { query: { projectId: projectA, q: mark, limit: 10 } })).items;
        assert.equal(tests.length, 2);
        assert.equal(tests.find((t) => t.name.endsWith('pays'))?.suite, `${mark}/Checkout/Payments`);
        assert.equal(tests.find((t) => t.name.endsWith('loose'))?.suite, `com/acme/${mark}Test`);
        const runs = await viewer.client.call(v1.runs.listRuns, { query: { jobId: record.jobId as string } });
        assert.ok(runs.items.every((r) => r.testVersion === 1));

        const moved = tests.find((t) => t.name.endsWith('loose')) as (typeof tests)[number];
        await edit(moved.id, { suite: 'Mine' });
        server.clock.advance(1000);
        await importOf(Buffer.from(xml), '2');
        const read = await viewer.client.call(v1.tests.getTest, { params: { testId: moved.id } });
        assert.equal(read.suite, 'Mine', 'a later import does not move a test a person filed');
        const latest = await viewer.client.call(v1.runs.listRuns, { query: { projectId: projectA, testId: moved.id } });
        assert.equal(latest.items[0]?.testVersion, 2);
      });
    });

    describe('TCM-8: refusals', () => {
      test('400 for a bad suite, a link without key or url, a twice-given link, a bad url; 403 viewer; 404 another project', async () => {
        const created = await create();
        const bad: [Record<string, unknown>, string][] = [
          [{ suite: 'a//b' }, '/body/suite'],
          [{ suite: '/a' }, '/body/suite'],
          [{ suite: 'a/ ' }, '/body/suite'],
          [{ suite: 'x'.repeat(513) }, '/body/suite'],
          [{ links: [{ kind: 'issue', title: 'no target' }] }, '/body/links/0'],
          [
            {
              links: [
                { kind: 'issue', key: 'A-1' },
                { kind: 'issue', key: 'a-1' },
              ],
            },
            '/body/links/1',
          ],
          [{ links: [{ kind: 'issue', url: 'javascript:alert(1)' }] }, '/body/links/0/url'],
          [{ links: [{ kind: 'defect', key: 'A-1' }] }, '/body/links/0/kind'],
          [{ steps: [{ action: 'x', expected: '', data: 1 }] }, '/body/steps/0/data'],
        ];
        for (const [body, pointer] of bad) {
          await assert.rejects(edit(created.id, body), (e: ApiError) => {
            assert.equal(e.status, 400, JSON.stringify(body));
            assert.ok(firstPointer(e)?.startsWith(pointer), `${JSON.stringify(body)}: ${firstPointer(e)}`);
            return true;
          });
        }
        await assert.rejects(create({ suite: 'a//b' }), (e: ApiError) => e.status === 400 && firstPointer(e) === '/body/suite');
        await assert.rejects(edit(created.id, { name: 'x' }, viewer.client), isProblem(403, 'FORBIDDEN'));
        await assert.rejects(edit(created.id, { name: 'x' }, outsider.client), isProblem(404, 'NOT_FOUND'));
        await assert.rejects(
          outsider.client.call(v1.tests.listTestVersions, { params: { testId: created.id } }),
          isProblem(404, 'NOT_FOUND'),
        );
        await assert.rejects(outsider.client.call(v1.tests.listSuites, { params: { projectId: projectA } }), isProblem(404, 'NOT_FOUND'));
        await assert.rejects(outsider.client.call(v1.tests.listLinks, { params: { projectId: projectA } }), isProblem(404, 'NOT_FOUND'));
        await assert.rejects(
          viewer.client.call(v1.tests.listTests, { query: { projectId: projectA, suite: 'a//b' } }),
          (e: ApiError) => e.status === 400 && firstPointer(e) === '/query/suite',
        );
        const read = await viewer.client.call(v1.tests.getTest, { params: { testId: created.id } });
        assert.equal(read.version, 1, 'no refused edit changed the test');
        // An outsider's project B is untouched by A's tests.
        const tree = await outsider.client.call(v1.tests.listSuites, { params: { projectId: projectB } });
        assert.equal(tree.total, 0);
      });
    });
  });
}
