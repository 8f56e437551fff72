import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ApiError, AttestClient, v1 } from '../../src/client/index.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createProject, createUser, type TestUser, twoProjects } from '../helpers/factories.ts';
import { firstError, isProblem } from '../helpers/problems.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const CHECKOUT_FEATURE = `@checkout @smoke
Feature: Checkout
  Buyers pay for what is in their cart.
    Card payments only for now.

  Background:
    Given a signed-in buyer
    And a cart holding 2 books

  Scenario: Pay by card
    When the buyer pays with the card
      """
      4242 4242 4242 4242
      """
    Then the order is confirmed
    And a receipt is e-mailed
    But the cart is not emptied yet

  Scenario Outline: Refused card <reason>
    When the buyer pays with a card that is <reason>
    Then the payment is refused with "<message>"

    Examples:
      | reason  | message      |
      | expired | Card expired |
      | blocked | Card blocked |
`;

/** A feature of one Scenario Outline: `steps` Given steps filled from `rows` Examples rows of two columns. */
function outlineFeature(steps: number, rows: number): string {
  const lines = ['Feature: Big outline', '  Scenario Outline: Case <a>'];
  for (let i = 0; i < steps; i++) lines.push(`    Given step ${i} with <a> and <b>`);
  lines.push('    Examples:', '      | a | b |');
  for (let i = 0; i < rows; i++) lines.push(`      | v${i} | w${i} |`);
  return lines.join('\n');
}

/** Sends a Gherkin feature as the whole body, the way a feature file is uploaded. */
async function postGherkin(client: AttestClient, text: string, query: string): Promise<Response> {
  return client.fetchRaw('POST', `/testmgmt/tests${query}`, { headers: { 'content-type': 'text/x-gherkin; charset=utf-8' }, body: text });
}

async function problemOf(response: Response): Promise<ApiError> {
  return AttestClient.read(response).then(
    () => assert.fail(`expected a problem, got ${response.status}`),
    (e: ApiError) => e,
  );
}

for (const dialect of DIALECTS) {
  describe(`[${dialect}] tests`, () => {
    let server: TestServer;
    let projectA: string;
    let tester: TestUser;
    let viewer: TestUser;
    let outsider: TestUser;

    before(async () => {
      server = await startTestServer(dialect);
      ({ projectA, tester, viewer, outsider } = await twoProjects(server));
    });
    after(() => server.close());

    describe('POST /testmgmt/tests', () => {
      test('creates a test from a JSON definition with ordered steps and tags', async () => {
        const created = await tester.client.call(v1.tests.createTest, {
          body: {
            projectId: projectA,
            name: 'Login with a valid password',
            description: 'The happy path.',
            steps: [
              { action: 'Open the login page', expected: 'The form is shown' },
              { action: 'Submit valid credentials', expected: 'The dashboard opens' },
            ],
            tags: ['login', 'smoke'],
          },
        });
        assert.equal(created.projectId, projectA);
        assert.equal(created.sourceFormat, 'json');
        assert.equal(created.source, null);
        assert.deepEqual(created.steps, [
          { action: 'Open the login page', expected: 'The form is shown' },
          { action: 'Submit valid credentials', expected: 'The dashboard opens' },
        ]);
        assert.deepEqual(created.tags, ['login', 'smoke']);
        assert.deepEqual(await viewer.client.call(v1.tests.getTest, { params: { testId: created.id } }), created);
      });

      test('parses a Gherkin feature given in the JSON body into one test', async () => {
        const created = await tester.client.call(v1.tests.createTest, { body: { projectId: projectA, gherkin: CHECKOUT_FEATURE } });
        assert.equal(created.name, 'Checkout');
        assert.equal(created.description, 'Buyers pay for what is in their cart.\nCard payments only for now.');
        assert.deepEqual(created.tags, ['checkout', 'smoke']);
        assert.equal(created.sourceFormat, 'gherkin');
        assert.equal(created.source, CHECKOUT_FEATURE);
        const background = [
          { action: 'Given a signed-in buyer', expected: '' },
          { action: 'And a cart holding 2 books', expected: '' },
        ];
        assert.deepEqual(created.steps, [
          { action: 'Scenario: Pay by card', expected: '' },
          ...background,
          {
            action: 'When the buyer pays with the card\n4242 4242 4242 4242',
            expected: 'the order is confirmed\na receipt is e-mailed\nthe cart is not emptied yet',
          },
          { action: 'Scenario Outline: Refused card expired', expected: '' },
          ...background,
          { action: 'When the buyer pays with a card that is expired', expected: 'the payment is refused with "Card expired"' },
          { action: 'Scenario Outline: Refused card blocked', expected: '' },
          ...background,
          { action: 'When the buyer pays with a card that is blocked', expected: 'the payment is refused with "Card blocked"' },
        ]);
      });

      test('takes a feature as a text/x-gherkin body with the project in the query', async () => {
        const feature = [
          '# language: fr',
          'Fonctionnalité: Connexion',
          '  Scénario: Mot de passe valide',
          '    Soit un compte actif',
          '    Quand je me connecte',
          '      | identifiant | mot de passe |',
          '      | ana         | secret       |',
          '    Alors le tableau de bord s’affiche',
        ].join('\n');
        const response = await postGherkin(tester.client, feature, `?projectId=${projectA}`);
        assert.equal(response.status, 201);
        const created = (await response.json()) as { name: string; steps: unknown[]; projectId: string };
        assert.equal(created.projectId, projectA);
        assert.equal(created.name, 'Connexion');
        // One scenario: no scenario heading; a Then with no action before it would become its own step.
        assert.deepEqual(created.steps, [
          { action: 'Soit un compte actif', expected: '' },
          { action: 'Quand je me connecte\n| identifiant | mot de passe |\n| ana | secret |', expected: 'le tableau de bord s’affiche' },
        ]);
      });

      test('makes a Then with no action before it a step of its own', async () => {
        const created = await tester.client.call(v1.tests.createTest, {
          body: {
            projectId: projectA,
            gherkin: 'Feature: Home\n  Scenario: Landing\n    Then the home page shows\n    When I scroll\n    Then the footer shows\n',
          },
        });
        assert.deepEqual(created.steps, [
          { action: 'Then the home page shows', expected: '' },
          { action: 'When I scroll', expected: 'the footer shows' },
        ]);
      });

      test('answers 400 naming the line and column of a Gherkin syntax error', async () => {
        const broken = 'Feature: Broken\n  Scenario: One\n    Given a step\n  this line is not Gherkin |\n';
        await assert.rejects(tester.client.call(v1.tests.createTest, { body: { projectId: projectA, gherkin: broken } }), (e: ApiError) => {
          assert.equal(e.status, 400);
          assert.equal(firstError(e)?.pointer, '/body/gherkin');
          assert.match(firstError(e)?.message ?? '', /^line 4, column 3: /);
          assert.match(String(e.problem.detail), /line 4/);
          return true;
        });
        const text = await problemOf(await postGherkin(tester.client, broken, `?projectId=${projectA}`));
        assert.equal(text.status, 400);
        assert.equal(firstError(text)?.pointer, '/body');
        assert.match(firstError(text)?.message ?? '', /^line 4, column 3: /);
      });

      test('answers 400 for a text without a feature, a feature without scenarios, and an empty body', async () => {
        for (const [text, message] of [
          ['# only a comment\n', /no Feature/],
          ['Feature: Nothing to run\n', /no scenarios/],
          ['', /no Feature/],
        ] as const) {
          const problem = await problemOf(await postGherkin(tester.client, text, `?projectId=${projectA}`));
          assert.equal(problem.status, 400);
          assert.match(firstError(problem)?.message ?? '', message);
        }
      });

      test('answers 400 for an outline that expands past a bound, before expanding it, and creates nothing (SEC-4g)', async () => {
        const project = (await createProject(server, 'Outlines')).id;
        await server.admin.client.call(v1.projects.addMember, { params: { projectId: project, email: tester.email } });
        // 500 steps × 15,000 Examples rows (about 385 KB): 7.5 million steps once expanded.
        const huge = outlineFeature(500, 15_000);
        const rssBefore = process.memoryUsage().rss;
        const problem = await problemOf(await postGherkin(tester.client, huge, `?projectId=${project}`));
        assert.equal(problem.status, 400);
        assert.match(firstError(problem)?.message ?? '', /expands to 15000 scenarios.*at most 1000/);
        assert.ok(process.memoryUsage().rss - rssBefore < 50 * 1024 * 1024, 'the outline was never expanded in memory');
        // One step repeating a placeholder 20,000 times, filled with 1,000 characters: 20 MB of one step.
        const amplified = [
          'Feature: Amplified',
          '  Scenario Outline: x',
          `    Given ${'<a>'.repeat(20_000)}`,
          '    Examples:',
          '      | a |',
          `      | ${'y'.repeat(1000)} |`,
        ];
        const long = await problemOf(await postGherkin(tester.client, amplified.join('\n'), `?projectId=${project}`));
        assert.equal(long.status, 400);
        assert.match(firstError(long)?.message ?? '', /longer than 65536 characters once the Examples row on line 6 fills it/);
        // 40,000 columns, each one a scan of a 200 KB step: work without any growth.
        const columns = Array.from({ length: 40_000 }, (_, i) => `c${i}`);
        const wide = [
          'Feature: Wide',
          '  Scenario Outline: x',
          `    Given ${'z'.repeat(200_000)}`,
          '    Examples:',
          `      | ${columns.join(' | ')} |`,
          `      | ${columns.map(() => 'v').join(' | ')} |`,
        ];
        const scan = await problemOf(await postGherkin(tester.client, wide.join('\n'), `?projectId=${project}`));
        assert.equal(scan.status, 400);
        assert.match(firstError(scan)?.message ?? '', /placeholders would scan \d+ characters; at most 67108864/);
        // Within every bound, the same shape is a test (9 steps × 99 rows: 99 scenarios of 10 steps each).
        const fits = await postGherkin(tester.client, outlineFeature(9, 99), `?projectId=${project}`);
        assert.equal(fits.status, 201);
        const listed = await tester.client.call(v1.tests.listTests, { query: { projectId: project, limit: 10 } });
        assert.deepEqual(
          listed.items.map((t) => t.name),
          ['Big outline'],
        );
      });

      test('answers 400 naming the field unless exactly one of steps and gherkin is given', async () => {
        const cases: [unknown, string][] = [
          [{ projectId: projectA, name: 'x' }, '/body/steps'],
          [{ projectId: projectA, name: 'x', steps: [], gherkin: CHECKOUT_FEATURE }, '/body/steps'],
          [{ projectId: projectA, gherkin: CHECKOUT_FEATURE, name: 'Override' }, '/body/name'],
          [{ projectId: projectA, gherkin: CHECKOUT_FEATURE, tags: ['x'] }, '/body/tags'],
          [{ projectId: projectA, steps: [] }, '/body/name'],
          [{ projectId: projectA, name: 'x', steps: [{ action: '', expected: '' }] }, '/body/steps/0/action'],
          [{ projectId: projectA, name: 'x', steps: [{ action: 'a' }] }, '/body/steps/0/expected'],
          [{ projectId: projectA, name: 'x', steps: [], owner: 'me' }, '/body/owner'],
          [{ projectId: projectA, name: 'x', steps: [], tags: ['two words'] }, '/body/tags/0'],
          [{ projectId: projectA, name: 'x', steps: 'Given a step' }, '/body/steps'],
          [{ name: 'x', steps: [] }, '/body/projectId'],
          [{ projectId: 'WEB', name: 'x', steps: [] }, '/body/projectId'],
        ];
        for (const [body, pointer] of cases) {
          await assert.rejects(tester.client.call(v1.tests.createTest, { body: body as never }), (e: ApiError) => {
            assert.equal(e.status, 400, pointer);
            assert.equal(e.code, 'INVALID_INPUT');
            assert.equal(firstError(e)?.pointer, pointer);
            return true;
          });
        }
      });

      test('answers 400 for the project in the query of a JSON body, or missing from a Gherkin one', async () => {
        await assert.rejects(
          tester.client.call(v1.tests.createTest, { query: { projectId: projectA }, body: { projectId: projectA, name: 'x', steps: [] } }),
          (e: ApiError) => e.status === 400 && firstError(e)?.pointer === '/query/projectId',
        );
        const problem = await problemOf(await postGherkin(tester.client, CHECKOUT_FEATURE, ''));
        assert.equal(problem.status, 400);
        assert.equal(firstError(problem)?.pointer, '/query/projectId');
      });

      test('answers 415 for a body that is neither JSON nor Gherkin', async () => {
        const response = await tester.client.fetchRaw('POST', `/testmgmt/tests?projectId=${projectA}`, {
          headers: { 'content-type': 'text/plain' },
          body: CHECKOUT_FEATURE,
        });
        assert.equal(response.status, 415);
        assert.equal((await problemOf(response)).code, 'UNSUPPORTED_MEDIA_TYPE');
      });

      test('refuses a viewer with 403, and a non-member with 404 in either input form', async () => {
        const body = { projectId: projectA, name: 'denied', steps: [] };
        await assert.rejects(viewer.client.call(v1.tests.createTest, { body }), isProblem(403, 'FORBIDDEN'));
        await assert.rejects(outsider.client.call(v1.tests.createTest, { body }), isProblem(404, 'NOT_FOUND'));
        const response = await postGherkin(outsider.client, CHECKOUT_FEATURE, `?projectId=${projectA}`);
        assert.equal(response.status, 404);
        // A non-member's invalid body still answers 404: existence is checked before validation.
        await assert.rejects(
          outsider.client.call(v1.tests.createTest, { body: { projectId: projectA } as never }),
          isProblem(404, 'NOT_FOUND'),
        );
        const listed = await tester.client.call(v1.tests.listTests, { query: { projectId: projectA, limit: 200 } });
        assert.ok(!listed.items.some((t) => t.name === 'denied'));
      });
    });

    describe('GET /testmgmt/tests', () => {
      test("lists a project's tests newest first across cursor pages", async () => {
        const project = (await createProject(server, 'Paged')).id;
        const member = await createUser(server, ['tester'], { projects: [project] });
        const ids: string[] = [];
        for (let i = 0; i < 5; i++) {
          server.clock.advance(1000);
          ids.push((await member.client.call(v1.tests.createTest, { body: { projectId: project, name: `T${i}`, steps: [] } })).id);
        }
        const first = await member.client.call(v1.tests.listTests, { query: { projectId: project, limit: 3 } });
        assert.ok(first.nextCursor);
        const rest = await member.client.call(v1.tests.listTests, { query: { projectId: project, limit: 3, cursor: first.nextCursor } });
        assert.equal(rest.nextCursor, null);
        assert.deepEqual(
          [...first.items, ...rest.items].map((t) => t.id),
          [...ids].reverse(),
        );
      });

      test('answers 404 for a project the caller cannot see and 400 without a project', async () => {
        await assert.rejects(outsider.client.call(v1.tests.listTests, { query: { projectId: projectA } }), isProblem(404, 'NOT_FOUND'));
        await assert.rejects(
          tester.client.call(v1.tests.listTests, { query: {} as never }),
          (e: ApiError) => e.status === 400 && firstError(e)?.pointer === '/query/projectId',
        );
      });
    });

    describe('GET /testmgmt/tests/{testId}', () => {
      test("answers 404 for another project's test exactly as for an unknown one", async () => {
        const created = await tester.client.call(v1.tests.createTest, { body: { projectId: projectA, name: 'Private', steps: [] } });
        const hidden = await outsider.client.call(v1.tests.getTest, { params: { testId: created.id } }).catch((e: ApiError) => e);
        const missing = await outsider.client
          .call(v1.tests.getTest, { params: { testId: '00000000-0000-4000-8000-000000000000' } })
          .catch((e: ApiError) => e);
        assert.ok(hidden instanceof ApiError && missing instanceof ApiError);
        assert.equal(hidden.status, 404);
        const { instance: _h, ...hiddenBody } = hidden.problem;
        const { instance: _m, ...missingBody } = missing.problem;
        assert.deepEqual(hiddenBody, missingBody);
      });
    });
  });
}
