import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { v1 } from '../../src/client/index.ts';
import * as textCellsByRun from '../../src/server/db/migrations/2026-11-26-0009-text-cells-by-run.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createProject, createUser, type TestUser, unique } from '../helpers/factories.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

// Migration 0009 keys text cells by (run_id, position) instead of their random id: the cells a
// server stored before it read back the same after it (and after its down migration), cells still
// repeat-proof by client key, and a run's cells still go with the run and with their step.

for (const dialect of DIALECTS) {
  describe(`[${dialect}] text cells keyed by run (migration 0009)`, () => {
    let server: TestServer;
    let projectId: string;
    let tester: TestUser;
    let manager: TestUser;

    before(async () => {
      server = await startTestServer(dialect);
      projectId = (await createProject(server, 'Cells')).id;
      tester = await createUser(server, ['tester'], { projects: [projectId] });
      manager = await createUser(server, ['manager'], { projects: [projectId] });
    });
    after(() => server.close());

    const startRun = async () => (await tester.client.call(v1.runs.createRun, { body: { projectId, name: unique('run-') } })).id;
    const read = (testRunId: string) => tester.client.call(v1.results.getResults, { params: { testRunId }, query: { partial: true } });
    const post = (testRunId: string, body: Record<string, unknown>) =>
      tester.client.call(v1.results.appendResults, { params: { testRunId }, body: body as never });
    const cellsOf = async (runId: string) =>
      server.app.attest.db.selectFrom('text_cells').select(['id', 'position']).where('run_id', '=', runId).orderBy('position').execute();

    test('cells read back the same across the migration, down and up, in the order they were posted', async () => {
      const runs = [await startRun(), await startRun()];
      for (const runId of runs) {
        await post(runId, {
          steps: [
            { key: 'open', title: 'Open', status: 'passed', cells: [{ key: 'url', name: 'URL', text: 'https://example.test/' }] },
            { key: 'pay', title: 'Pay', status: 'failed', cells: [{ name: 'Log', text: 'card declined', mediaType: 'text/markdown' }] },
          ],
          cells: [
            { key: 'env', stepKey: 'open', name: 'Environment', text: 'staging' },
            { name: 'Note', text: 'run-level' },
          ],
        });
      }
      const before = await Promise.all(runs.map(read));
      const rows = await Promise.all(runs.map(cellsOf));
      assert.equal(rows[0]?.length, 4);

      const db = server.app.attest.db;
      await textCellsByRun.down(db);
      assert.deepEqual(await Promise.all(runs.map(read)), before);
      await textCellsByRun.up(db);
      assert.deepEqual(await Promise.all(runs.map(read)), before);
      assert.deepEqual(await Promise.all(runs.map(cellsOf)), rows, 'ids and positions kept');

      // Keyed cells are still stored once: a repeat is answered with the stored cell.
      const again = await post(runs[0] as string, { cells: [{ key: 'env', stepKey: 'open', name: 'Environment', text: 'staging' }] });
      assert.equal(again.cells[0]?.created, false);
      assert.equal((await cellsOf(runs[0] as string)).length, 4);
      await post(runs[0] as string, { cells: [{ key: 'more', name: 'More', text: 'after the migration' }] });
      const after = await read(runs[0] as string);
      assert.equal(after.cells.at(-1)?.text, 'after the migration');
    });

    test("deleting a run takes its cells, and the other run's stay", async () => {
      const [doomed, kept] = [await startRun(), await startRun()];
      for (const runId of [doomed, kept]) {
        await post(runId, { steps: [{ key: 's', title: 'Step', status: 'passed', cells: [{ name: 'c', text: 'x' }] }] });
      }
      await manager.client.call(v1.runs.deleteRun, { params: { testRunId: doomed } });
      assert.equal((await cellsOf(doomed)).length, 0);
      assert.equal((await cellsOf(kept)).length, 1);
    });
  });
}
