import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { v1 } from '../../src/client/index.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { type ServerWithTester, serverWithTester } from '../helpers/factories.ts';

// TRIAGE-18: the failures search `q` matches the names of the tests a group failed, besides its text.

for (const dialect of DIALECTS) {
  describe(`[${dialect}] GET /projects/{projectId}/failures?q= (TRIAGE-18)`, () => {
    let setup: ServerWithTester;
    const groups: Record<string, string> = {};

    /** A finished failed run whose single step failed with `error`; the run's group id. */
    const failed = async (name: string, error: string, test: { testName?: string }) => {
      const run = await setup.tester.client.call(v1.runs.createRun, {
        body: {
          projectId: setup.project.id,
          name,
          ...test,
          verdict: 'failed',
          results: { steps: [{ title: 'the step', status: 'failed', error }] },
        },
      });
      return run.failureGroupId as string;
    };

    const search = async (q: string) =>
      (
        await setup.tester.client.call(v1.failures.listFailureGroups, { params: { projectId: setup.project.id }, query: { q, limit: 100 } })
      ).items
        .map((group) => group.id)
        .sort();

    before(async () => {
      setup = await serverWithTester(dialect, 'Search');
      groups.button = await failed('checkout button exists', 'expected element to be visible: button#pay', {
        testName: 'shop.spec.ts › Checkout button exists',
      });
      groups.basket = await failed('basket total', 'expected 3 to equal 4', { testName: 'shop.spec.ts › basket total' });
      groups.unnamed = await failed('a run without a test: refund_100% flow', 'socket hang up', {});
    });
    after(() => setup.server.close());

    test('q=checkout finds a group whose text lacks it through the test it failed; other groups stay out', async () => {
      assert.notEqual(groups.button, groups.basket);
      assert.deepEqual(await search('checkout'), [groups.button]);
      assert.deepEqual(await search('CHECKOUT BUTTON'), [groups.button], 'case-insensitive');
      assert.deepEqual(await search('basket'), [groups.basket]);
      // The text still matches as before; a word of both a test and a text finds both groups.
      assert.deepEqual(await search('button#pay'), [groups.button]);
      assert.deepEqual(await search('shop.spec.ts'), [groups.button, groups.basket].sort());
      // A run without a test is known by its own name; `%` and `_` are characters, not wildcards.
      assert.deepEqual(await search('refund_100%'), [groups.unnamed]);
      assert.deepEqual(await search('refund%'), []);
      assert.deepEqual(await search('name:'), [], 'the key a test-less run is filed under is not its name');
      assert.deepEqual(await search('nothing like it'), []);
    });

    test('a test met again in a later failure of the group is found once, the group listed once', async () => {
      const again = await failed('checkout button exists', 'expected element to be visible: button#pay', {
        testName: 'shop.spec.ts › Checkout button exists',
      });
      assert.equal(again, groups.button);
      assert.deepEqual(await search('checkout'), [groups.button]);
    });
  });
}
