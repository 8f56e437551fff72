import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { BodyOf } from '../../src/api/endpoint.ts';
import { type ApiError, v1 } from '../../src/client/index.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { type ServerWithTwoProjects, serverWithTwoProjects, unique } from '../helpers/factories.ts';
import { firstPointer, isProblem } from '../helpers/problems.ts';

type AppendBody = BodyOf<typeof v1.results.appendResults>;

for (const dialect of DIALECTS) {
  describe(`[${dialect}] results`, () => {
    let { server, projectA, projectB, tester, viewer, outsider } = {} as ServerWithTwoProjects;
    before(async () => {
      ({ server, projectA, projectB, tester, viewer, outsider } = await serverWithTwoProjects(dialect));
    });
    after(() => server.close());

    const startRun = async () => (await tester.client.call(v1.runs.createRun, { body: { projectId: projectA, name: unique('run-') } })).id;
    const append = (testRunId: string, body: AppendBody, client = tester.client) =>
      client.call(v1.results.appendResults, { params: { testRunId }, body: body as never });
    const partial = (testRunId: string) => viewer.client.call(v1.results.getResults, { params: { testRunId }, query: { partial: true } });
    const complete = (testRunId: string, verdict: 'passed' | 'failed' = 'passed') =>
      tester.client.call(v1.runs.updateRun, { params: { testRunId }, body: { status: 'completed', verdict } });

    describe('POST /testmgmt/testruns/{testRunId}/results', () => {
      test('appends steps with their cells and run-level cells, and answers the ids it assigned', async () => {
        const runId = await startRun();
        const receipt = await append(runId, {
          steps: [
            {
              key: 'open',
              title: 'Open the login page',
              status: 'passed',
              startedAt: '2026-11-22T10:00:00.000Z',
              durationMs: 120,
              cells: [{ name: 'note', text: 'cold start', mediaType: 'text/plain' }],
            },
            { title: 'Submit the form', status: 'failed', durationMs: 80, error: 'Button not found' },
          ],
          cells: [
            { key: 'env', name: 'environment', text: '**staging**', mediaType: 'text/markdown' },
            { name: 'actual', text: 'a 500 page', mediaType: 'text/plain', stepKey: 'open' },
          ],
        });
        assert.equal(receipt.steps.length, 2);
        assert.equal(receipt.steps[0]?.key, 'open');
        assert.equal(receipt.steps[0]?.created, true);
        assert.equal(receipt.steps[0]?.cells.length, 1);
        assert.equal(receipt.steps[1]?.key, null);
        assert.deepEqual(
          receipt.cells.map((c) => [c.key, c.created]),
          [
            ['env', true],
            [null, true],
          ],
        );

        const results = await partial(runId);
        assert.equal(results.testRunId, runId);
        assert.equal(results.status, 'running');
        assert.deepEqual(results.cells, [
          { id: receipt.cells[0]?.id, key: 'env', name: 'environment', mediaType: 'text/markdown', text: '**staging**' },
        ]);
        assert.deepEqual(results.steps, [
          {
            id: receipt.steps[0]?.id,
            key: 'open',
            parentId: null,
            title: 'Open the login page',
            status: 'passed',
            startedAt: '2026-11-22T10:00:00.000Z',
            durationMs: 120,
            error: null,
            failureGroupId: null,
            cells: [
              { id: receipt.steps[0]?.cells[0]?.id, key: null, name: 'note', mediaType: 'text/plain', text: 'cold start' },
              { id: receipt.cells[1]?.id, key: null, name: 'actual', mediaType: 'text/plain', text: 'a 500 page' },
            ],
          },
          {
            id: receipt.steps[1]?.id,
            key: null,
            parentId: null,
            title: 'Submit the form',
            status: 'failed',
            startedAt: null,
            durationMs: 80,
            error: 'Button not found',
            failureGroupId: null, // the run is still running: set when it completes
            cells: [],
          },
        ]);
      });

      test('a retried post of keyed steps and cells creates no duplicates and answers the same ids', async () => {
        const runId = await startRun();
        const body: AppendBody = {
          steps: [
            { key: 's1', title: 'Step one', status: 'passed', cells: [{ name: 'log', text: 'one', mediaType: 'text/plain' }] },
            { key: 's1.1', parentKey: 's1', title: 'Step one, part one', status: 'passed' },
          ],
          cells: [{ key: 'c1', name: 'note', text: 'hello', mediaType: 'text/plain' }],
        };
        const first = await append(runId, body);
        const retry = await append(runId, body);
        assert.deepEqual(
          retry.steps.map((s) => [s.id, s.created, s.updated]),
          first.steps.map((s) => [s.id, false, false]),
        );
        assert.deepEqual(
          retry.cells.map((c) => [c.id, c.created]),
          first.cells.map((c) => [c.id, false]),
        );
        const results = await partial(runId);
        assert.equal(results.steps.length, 2);
        assert.equal(results.cells.length, 1);
        assert.equal(results.steps[0]?.cells.length, 1, 'the inline cell of a repeated step is not stored again');
      });

      test('a retried post with an idempotencyKey stores nothing again, unkeyed items included, even after completion', async () => {
        const runId = await startRun();
        const body: AppendBody = {
          idempotencyKey: 'batch-1',
          steps: [{ title: 'Unkeyed step', status: 'passed', cells: [{ name: 'log', text: 'inline', mediaType: 'text/plain' }] }],
          cells: [{ name: 'note', text: 'unkeyed run-level cell', mediaType: 'text/plain' }],
        };
        const first = await append(runId, body);
        const [again, concurrent] = await Promise.all([append(runId, body), append(runId, body)]);
        assert.deepEqual(again, first, 'the receipt of the first post, ids and created flags as they were');
        assert.deepEqual(concurrent, first);
        let results = await partial(runId);
        assert.deepEqual([results.steps.length, results.cells.length, results.steps[0]?.cells.length], [1, 1, 1]);
        // Another batch key is another post; the same key with another body is a conflict.
        await append(runId, { ...body, idempotencyKey: 'batch-2' });
        await assert.rejects(append(runId, { ...body, cells: [] }), (e: ApiError) => e.status === 409 && e.code === 'STATE_CONFLICT');
        await complete(runId);
        assert.deepEqual(await append(runId, body), first, 'a retry arriving after completion still gets its receipt');
        await assert.rejects(
          append(runId, { ...body, idempotencyKey: 'batch-3' }),
          (e: ApiError) => e.status === 409 && e.code === 'RUN_FROZEN',
        );
        results = await viewer.client.call(v1.results.getResults, { params: { testRunId: runId } });
        assert.deepEqual([results.steps.length, results.cells.length], [2, 2]);
      });

      test('finishes a step streamed as running when its key is posted again with a final status', async () => {
        const runId = await startRun();
        const started = await append(runId, {
          steps: [{ key: 'upload', title: 'Upload a file', status: 'running', startedAt: '2026-11-22T10:00:00Z' }],
        });
        const finished = await append(runId, {
          steps: [
            {
              key: 'upload',
              title: 'Upload a file',
              status: 'failed',
              durationMs: 900,
              error: 'timeout',
              cells: [{ name: 'actual', text: 'spinner forever', mediaType: 'text/plain' }],
            },
          ],
        });
        assert.equal(finished.steps[0]?.id, started.steps[0]?.id);
        assert.equal(finished.steps[0]?.updated, true);
        const [step] = (await partial(runId)).steps;
        assert.equal(step?.status, 'failed');
        assert.equal(step?.durationMs, 900);
        assert.equal(step?.error, 'timeout');
        assert.equal(step?.startedAt, '2026-11-22T10:00:00.000Z');
        assert.deepEqual(
          step?.cells.map((c) => c.text),
          ['spinner forever'],
        );
        // Once finished, the step no longer changes.
        await append(runId, { steps: [{ key: 'upload', title: 'Upload a file', status: 'passed' }] });
        assert.equal((await partial(runId)).steps[0]?.status, 'failed');
      });

      test('nests steps by parentKey across posts and by parentId, and refuses an eleventh level', async () => {
        const runId = await startRun();
        const chain = Array.from({ length: 10 }, (_, i) => ({
          key: `level-${i + 1}`,
          title: `Level ${i + 1}`,
          status: 'passed' as const,
          ...(i > 0 ? { parentKey: `level-${i}` } : {}),
        }));
        const first = await append(runId, { steps: chain.slice(0, 4) });
        const second = await append(runId, { steps: chain.slice(4) });
        const byId = await append(runId, { steps: [{ title: 'Sibling of level 2', status: 'skipped', parentId: first.steps[0]?.id }] });

        const steps = (await partial(runId)).steps;
        assert.equal(steps.length, 11);
        for (let i = 1; i < 10; i++) assert.equal(steps[i]?.parentId, steps[i - 1]?.id);
        assert.equal(steps[10]?.id, byId.steps[0]?.id);
        assert.equal(steps[10]?.parentId, first.steps[0]?.id);

        await assert.rejects(
          append(runId, { steps: [{ title: 'Too deep', status: 'passed', parentId: second.steps[5]?.id }] }),
          (e: ApiError) => {
            assert.equal(e.status, 400);
            assert.equal(firstPointer(e), '/body/steps/0');
            return true;
          },
        );
      });

      test('refuses parents and cell targets that are not steps of this run', async () => {
        const runId = await startRun();
        const otherRun = await startRun();
        const foreign = await append(otherRun, { steps: [{ key: 'x', title: 'Elsewhere', status: 'passed' }] });
        const cases: [AppendBody, string][] = [
          [{ steps: [{ title: 'a', status: 'passed', parentKey: 'x' }] }, '/body/steps/0/parentKey'],
          [{ steps: [{ title: 'a', status: 'passed', parentId: foreign.steps[0]?.id }] }, '/body/steps/0/parentId'],
          [
            {
              steps: [
                { title: 'child first', status: 'passed', parentKey: 'later' },
                { key: 'later', title: 'parent after', status: 'passed' },
              ],
            },
            '/body/steps/0/parentKey',
          ],
          [{ cells: [{ name: 'n', text: 't', mediaType: 'text/plain', stepId: foreign.steps[0]?.id }] }, '/body/cells/0/stepId'],
          [{ cells: [{ name: 'n', text: 't', mediaType: 'text/plain', stepKey: 'x' }] }, '/body/cells/0/stepKey'],
        ];
        for (const [body, pointer] of cases) {
          await assert.rejects(append(runId, body), (e: ApiError) => {
            assert.equal(e.status, 400, pointer);
            assert.equal(firstPointer(e), pointer);
            return true;
          });
        }
        assert.deepEqual((await partial(runId)).steps, []);
      });

      test('stores nothing of a post with an invalid item at its end', async () => {
        const runId = await startRun();
        const steps = Array.from({ length: 50 }, (_, i) => ({ key: `k${i}`, title: `Step ${i}`, status: 'passed' as const }));
        await assert.rejects(
          append(runId, { steps: [...steps, { title: 'orphan', status: 'passed', parentKey: 'nope' }] }),
          isProblem(400, 'INVALID_INPUT'),
        );
        const results = await partial(runId);
        assert.equal(results.steps.length, 0);
        // The keys stay free: the same steps are accepted afterwards.
        const receipt = await append(runId, { steps });
        assert.ok(receipt.steps.every((s) => s.created));
      });

      test('answers 400 naming the field for schema violations and repeated keys', async () => {
        const runId = await startRun();
        const cases: [unknown, string][] = [
          [{ steps: [{ title: 'a', status: 'done' }] }, '/body/steps/0/status'],
          [{ steps: [{ status: 'passed' }] }, '/body/steps/0/title'],
          [
            { steps: [{ title: 'a', status: 'passed', cells: [{ name: 'n', text: 't', mediaType: 'text/html' }] }] },
            '/body/steps/0/cells/0/mediaType',
          ],
          [{ cells: [{ name: 'n', text: 't', mediaType: 'text/rtf' }] }, '/body/cells/0/mediaType'],
          [{ steps: [{ title: 'a', status: 'passed', durationMs: -1 }] }, '/body/steps/0/durationMs'],
          [{ steps: [{ title: 'a', status: 'passed', projectId: projectB }] }, '/body/steps/0/projectId'],
          [
            {
              steps: [
                { key: 'same', title: 'a', status: 'passed' },
                { key: 'same', title: 'b', status: 'passed' },
              ],
            },
            '/body/steps/1/key',
          ],
          [
            { steps: [{ title: 'a', status: 'passed', parentKey: 'p', parentId: '00000000-0000-4000-8000-000000000000' }] },
            '/body/steps/0/parentId',
          ],
          [{ cells: [{ name: 'n', text: 'a\u0000b', mediaType: 'text/plain' }] }, '/body/cells/0/text'],
        ];
        for (const [body, pointer] of cases) {
          await assert.rejects(append(runId, body as AppendBody), (e: ApiError) => {
            assert.equal(e.status, 400, pointer);
            assert.equal(firstPointer(e), pointer);
            return true;
          });
        }
      });

      test('takes 10 000 steps in one post, larger than the normal body limit, in order', async () => {
        const runId = await startRun();
        const steps = Array.from({ length: 10_000 }, (_, i) => ({
          key: `step-${i}`,
          title: `Step ${i}: check that the widget number ${i} renders its label, icon and tooltip correctly`,
          status: i % 97 === 0 ? ('failed' as const) : ('passed' as const),
          durationMs: i,
          ...(i % 100 !== 0 ? { parentKey: `step-${i - (i % 100)}` } : {}),
        }));
        const body = { steps };
        assert.ok(Buffer.byteLength(JSON.stringify(body)) > server.config.bodyLimit, 'the post exceeds the normal body limit');
        const receipt = await append(runId, body);
        assert.equal(receipt.steps.length, 10_000);
        assert.equal(new Set(receipt.steps.map((s) => s.id)).size, 10_000);
        await complete(runId);
        const results = await viewer.client.call(v1.results.getResults, { params: { testRunId: runId } });
        assert.equal(results.steps.length, 10_000);
        assert.deepEqual(
          results.steps.map((s) => s.key),
          steps.map((s) => s.key),
        );
        assert.equal(results.steps[150]?.parentId, receipt.steps[100]?.id);
        assert.equal(results.steps[9_991]?.status, 'failed');
        // Retrying the whole bulk post stores nothing new.
        const second = await startRun();
        await append(second, body);
        const retry = await append(second, body);
        assert.ok(retry.steps.every((s) => !s.created));
        assert.equal((await partial(second)).steps.length, 10_000);
      });

      test('a stream of many small posts, some concurrent, keeps every item once and in posting order', async () => {
        const runId = await startRun();
        for (let i = 0; i < 100; i++) {
          await append(runId, { steps: [{ key: `seq-${i}`, title: `Sequential ${i}`, status: 'passed' }] });
        }
        // Concurrent batches, each posted twice at once as a retry racing its original: nothing may
        // be stored twice, and every batch lands in one piece.
        const batch = (b: number): AppendBody => ({
          steps: Array.from({ length: 25 }, (_, i) => ({ key: `par-${b}-${i}`, title: `Concurrent ${b}.${i}`, status: 'passed' as const })),
          cells: [{ key: `cell-${b}`, name: 'log', text: `batch ${b}`, mediaType: 'text/plain', stepKey: `par-${b}-0` }],
        });
        const posts = Array.from({ length: 20 }, (_, b) => [append(runId, batch(b)), append(runId, batch(b))]).flat();
        const receipts = await Promise.all(posts);
        for (let b = 0; b < 20; b++) {
          assert.deepEqual(
            receipts[2 * b]?.steps.map((s) => s.id),
            receipts[2 * b + 1]?.steps.map((s) => s.id),
            `batch ${b} got one set of ids`,
          );
        }
        const results = await partial(runId);
        assert.equal(results.steps.length, 100 + 20 * 25);
        assert.deepEqual(
          results.steps.slice(0, 100).map((s) => s.key),
          Array.from({ length: 100 }, (_, i) => `seq-${i}`),
        );
        assert.equal(new Set(results.steps.map((s) => s.key)).size, results.steps.length);
        // Each batch is contiguous and in its own order: positions were handed out one post at a time.
        const concurrentKeys = results.steps.slice(100).map((s) => s.key as string);
        for (let start = 0; start < concurrentKeys.length; start += 25) {
          const b = concurrentKeys[start]?.split('-')[1];
          assert.deepEqual(
            concurrentKeys.slice(start, start + 25),
            Array.from({ length: 25 }, (_, i) => `par-${b}-${i}`),
          );
        }
        const withCells = results.steps.filter((s) => s.cells.length > 0);
        assert.deepEqual(
          withCells.map((s) => s.cells.length),
          Array(20).fill(1),
        );
        // Every step and cell took a position of its own, with none skipped: 0, 1, 2 and so on.
        const db = server.app.attest.db;
        const positions = [
          ...(await db.selectFrom('steps').select('position').where('run_id', '=', runId).execute()),
          ...(await db.selectFrom('text_cells').select('position').where('run_id', '=', runId).execute()),
        ]
          .map((row) => Number(row.position))
          .sort((a, b) => a - b);
        assert.deepEqual(
          positions,
          Array.from({ length: 100 + 20 * 26 }, (_, i) => i),
        );
      });

      test('refuses a completed or aborted run with 409 RUN_FROZEN and a queued one with 409 STATE_CONFLICT', async () => {
        const completed = await startRun();
        await append(completed, { steps: [{ key: 'a', title: 'a', status: 'passed' }] });
        await complete(completed);
        await assert.rejects(append(completed, { steps: [{ key: 'b', title: 'b', status: 'passed' }] }), isProblem(409, 'RUN_FROZEN'));
        // Even an exact retry of what is stored is refused: the run no longer takes posts.
        await assert.rejects(append(completed, { steps: [{ key: 'a', title: 'a', status: 'passed' }] }), isProblem(409, 'RUN_FROZEN'));
        assert.equal((await partial(completed)).steps.length, 1);

        const aborted = await startRun();
        await tester.client.call(v1.runs.updateRun, { params: { testRunId: aborted }, body: { status: 'aborted' } });
        await assert.rejects(append(aborted, { cells: [{ name: 'n', text: 't', mediaType: 'text/plain' }] }), isProblem(409, 'RUN_FROZEN'));

        const definition = await tester.client.call(v1.tests.createTest, { body: { projectId: projectA, name: 'Queued', steps: [] } });
        const job = await tester.client.call(v1.jobs.createJob, { body: { projectId: projectA, testIds: [definition.id] } });
        const [queued] = (await tester.client.call(v1.runs.listRuns, { query: { projectId: projectA, jobId: job.id } })).items;
        await assert.rejects(append(queued?.id as string, { steps: [{ title: 'a', status: 'passed' }] }), isProblem(409, 'STATE_CONFLICT'));
      });

      test('refuses a viewer with 403 and an outsider with 404, even with an invalid body', async () => {
        const runId = await startRun();
        await assert.rejects(append(runId, { steps: [{ title: 'a', status: 'passed' }] }, viewer.client), isProblem(403, 'FORBIDDEN'));
        await assert.rejects(append(runId, { steps: [{ title: 'a', status: 'passed' }] }, outsider.client), isProblem(404, 'NOT_FOUND'));
        await assert.rejects(append(runId, { bogus: true } as AppendBody, outsider.client), isProblem(404, 'NOT_FOUND'));
        assert.deepEqual((await partial(runId)).steps, []);
      });
    });

    describe('GET /testmgmt/testruns/{testRunId}/results', () => {
      test('answers 409 RUN_NOT_COMPLETED for a run that is not completed, unless partial=true', async () => {
        const runId = await startRun();
        await append(runId, { steps: [{ title: 'a', status: 'passed' }] });
        await assert.rejects(
          viewer.client.call(v1.results.getResults, { params: { testRunId: runId } }),
          isProblem(409, 'RUN_NOT_COMPLETED'),
        );
        await assert.rejects(
          viewer.client.call(v1.results.getResults, { params: { testRunId: runId }, query: { partial: false } }),
          isProblem(409, 'RUN_NOT_COMPLETED'),
        );
        assert.equal((await partial(runId)).steps.length, 1);
        await tester.client.call(v1.runs.updateRun, { params: { testRunId: runId }, body: { status: 'aborted' } });
        await assert.rejects(
          viewer.client.call(v1.results.getResults, { params: { testRunId: runId } }),
          isProblem(409, 'RUN_NOT_COMPLETED'),
        );
      });

      test('returns a completed run with its verdict, answering the documented headers and shape', async () => {
        const runId = await startRun();
        await append(runId, {
          steps: [{ title: 'only', status: 'passed' }],
          cells: [{ name: 'summary', text: 'ok', mediaType: 'text/plain' }],
        });
        await complete(runId, 'passed');
        // Exactly as existing clients call it: JSON headers, an empty body, the key header.
        const response = await viewer.client.fetchRaw('GET', `/testmgmt/testruns/${runId}/results`);
        assert.equal(response.status, 200);
        assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
        const body = (await response.json()) as Record<string, unknown>;
        // failureGroupId was added with TRIAGE-2: additive, null for a run that passed.
        assert.deepEqual(Object.keys(body).sort(), ['cells', 'failureGroupId', 'status', 'steps', 'testRunId', 'verdict']);
        assert.equal(body.verdict, 'passed');
        assert.deepEqual(Object.keys((body.steps as Record<string, unknown>[])[0] ?? {}).sort(), [
          'cells',
          'durationMs',
          'error',
          'failureGroupId',
          'id',
          'key',
          'parentId',
          'startedAt',
          'status',
          'title',
        ]);
      });

      test("answers an outsider 404 for another project's run, as for an unknown one", async () => {
        const runId = await startRun();
        await complete(runId);
        for (const testRunId of [runId, '00000000-0000-4000-8000-000000000000']) {
          await assert.rejects(outsider.client.call(v1.results.getResults, { params: { testRunId } }), isProblem(404, 'NOT_FOUND'));
        }
      });
    });
  });
}
