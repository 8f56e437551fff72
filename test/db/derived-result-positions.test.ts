import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { v1 } from '../../src/client/index.ts';
import * as derivedPositions from '../../src/server/db/migrations/2026-11-26-0010-derived-result-positions.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createProject, createUser, type TestUser, unique } from '../helpers/factories.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

// Migration 0010 drops the run's position counter: the next step or cell of a run takes the position
// after the highest its results hold. Its down migration puts the counter back with the value the
// results imply, and results posted after the migration continue where those before it stopped.

for (const dialect of DIALECTS) {
  describe(`[${dialect}] result positions derived from the results (migration 0010)`, () => {
    let server: TestServer;
    let projectId: string;
    let tester: TestUser;

    before(async () => {
      server = await startTestServer(dialect);
      projectId = (await createProject(server, 'Positions')).id;
      tester = await createUser(server, ['tester'], { projects: [projectId] });
    });
    after(() => server.close());

    const startRun = async () => (await tester.client.call(v1.runs.createRun, { body: { projectId, name: unique('run-') } })).id;
    const post = (testRunId: string, body: Record<string, unknown>) =>
      tester.client.call(v1.results.appendResults, { params: { testRunId }, body: body as never });
    const positionsOf = async (runId: string) => {
      const db = server.app.attest.db;
      const steps = await db.selectFrom('steps').select(['client_key', 'position']).where('run_id', '=', runId).execute();
      const cells = await db.selectFrom('text_cells').select(['client_key', 'position']).where('run_id', '=', runId).execute();
      return [...steps, ...cells].map((row) => [row.client_key, Number(row.position)]).sort((a, b) => Number(a[1]) - Number(b[1]));
    };

    test('the counter the down migration restores is what the results imply, and posts after up() continue the sequence', async () => {
      const [steps, cellsOnly, empty] = [await startRun(), await startRun(), await startRun()];
      await post(steps, {
        steps: [
          { key: 'open', title: 'Open', status: 'passed', cells: [{ key: 'url', name: 'URL', text: 'https://example.test/' }] },
          { key: 'pay', title: 'Pay', status: 'failed' },
        ],
        cells: [{ key: 'env', name: 'Environment', text: 'staging' }],
      });
      await post(cellsOnly, { cells: [{ key: 'a', name: 'A', text: 'a' }] });

      const db = server.app.attest.db;
      await derivedPositions.down(db);
      const counters = await sql<{ id: string; next_position: number }>`SELECT id, next_position FROM test_runs`.execute(db);
      const counterOf = (id: string) => Number(counters.rows.find((row) => row.id === id)?.next_position);
      assert.deepEqual([counterOf(steps), counterOf(cellsOnly), counterOf(empty)], [4, 1, 0]);
      await derivedPositions.up(db);

      await post(steps, { steps: [{ key: 'done', title: 'Done', status: 'passed', cells: [{ key: 'log', name: 'Log', text: 'ok' }] }] });
      await post(empty, { steps: [{ key: 'first', title: 'First', status: 'passed' }] });
      assert.deepEqual(await positionsOf(steps), [
        ['open', 0],
        ['url', 1],
        ['pay', 2],
        ['env', 3],
        ['done', 4],
        ['log', 5],
      ]);
      assert.deepEqual(await positionsOf(empty), [['first', 0]]);
      // A repeated post stores nothing and takes no position.
      await post(steps, { steps: [{ key: 'done', title: 'Done', status: 'passed' }] });
      await post(steps, { cells: [{ key: 'tail', name: 'Tail', text: 'after' }] });
      assert.deepEqual((await positionsOf(steps)).at(-1), ['tail', 6]);
    });
  });
}
