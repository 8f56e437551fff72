import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type ApiError, v1 } from '../../src/client/index.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createProject, type ServerWithTwoProjects, serverWithTwoProjects, unique } from '../helpers/factories.ts';
import { firstPointer, isProblem } from '../helpers/problems.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

for (const dialect of DIALECTS) {
  describe(`[${dialect}] test runs`, () => {
    let { server, projectA, projectB, tester, viewer, outsider } = {} as ServerWithTwoProjects;
    before(async () => {
      ({ server, projectA, projectB, tester, viewer, outsider } = await serverWithTwoProjects(dialect));
    });
    after(() => server.close());

    const startRun = (body: Partial<{ name: string; environment: string; branch: string; build: string; commit: string }> = {}) =>
      tester.client.call(v1.runs.createRun, { body: { projectId: projectA, name: unique('run-'), ...body } });

    describe('POST /testmgmt/testruns', () => {
      test('starts a running run with its labels, start time and no verdict', async () => {
        const run = await startRun({
          name: 'checkout on staging',
          environment: 'staging',
          branch: 'main',
          build: '1.4.2',
          commit: 'a1b2c3d',
        });
        assert.equal(run.status, 'running');
        assert.equal(run.verdict, null);
        assert.equal(run.projectId, projectA);
        assert.deepEqual([run.environment, run.branch, run.build, run.commit], ['staging', 'main', '1.4.2', 'a1b2c3d']);
        assert.equal(run.startedAt, server.clock.now.toISOString());
        assert.equal(run.finishedAt, null);
        assert.deepEqual(await viewer.client.call(v1.runs.getRun, { params: { testRunId: run.id } }), run);
      });

      test('links a test of the project and a registered device', async () => {
        const definition = await tester.client.call(v1.tests.createTest, {
          body: { projectId: projectA, name: 'Login', steps: [{ action: 'Open', expected: 'Opened' }] },
        });
        const deviceId = unique('dev-');
        await server.admin.client.call(v1.devices.registerDevice, { body: { id: deviceId, name: 'Pixel', platform: 'android' } });
        const run = await tester.client.call(v1.runs.createRun, {
          body: { projectId: projectA, name: 'r', testId: definition.id, deviceId },
        });
        assert.equal(run.testId, definition.id);
        assert.equal(run.deviceId, deviceId);
      });

      test("answers 400 naming testId for another project's test, exactly as for an unknown one", async () => {
        const foreign = await server.admin.client.call(v1.tests.createTest, { body: { projectId: projectB, name: 'B test', steps: [] } });
        for (const testId of [foreign.id, '00000000-0000-4000-8000-000000000000']) {
          await assert.rejects(
            tester.client.call(v1.runs.createRun, { body: { projectId: projectA, name: 'r', testId } }),
            (e: ApiError) => {
              assert.equal(e.status, 400);
              assert.equal(firstPointer(e), '/body/testId');
              return true;
            },
          );
        }
      });

      test('answers 400 naming the field for a missing name, an unknown property and an unknown device', async () => {
        const cases: [unknown, string][] = [
          [{ projectId: projectA }, '/body/name'],
          [{ projectId: projectA, name: 'r', status: 'completed' }, '/body/status'],
          [{ projectId: projectA, name: 'r', deviceId: 'no-such-device' }, '/body/deviceId'],
          [{ name: 'r' }, '/body/projectId'],
        ];
        for (const [body, pointer] of cases) {
          await assert.rejects(tester.client.call(v1.runs.createRun, { body: body as never }), (e: ApiError) => {
            assert.equal(e.status, 400, pointer);
            assert.equal(firstPointer(e), pointer);
            return true;
          });
        }
      });

      test('refuses a viewer with 403 and an outsider with 404, creating nothing', async () => {
        const name = unique('denied-');
        await assert.rejects(viewer.client.call(v1.runs.createRun, { body: { projectId: projectA, name } }), isProblem(403, 'FORBIDDEN'));
        await assert.rejects(outsider.client.call(v1.runs.createRun, { body: { projectId: projectA, name } }), isProblem(404, 'NOT_FOUND'));
        const page = await server.admin.client.call(v1.runs.listRuns, { query: { projectId: projectA, limit: 200 } });
        assert.ok(!page.items.some((r) => r.name === name));
      });
    });

    describe('GET /testmgmt/testruns/{testRunId}', () => {
      test('answers an outsider 404 identical to the one for an unknown id', async () => {
        const run = await startRun();
        const missing = await outsider.client
          .call(v1.runs.getRun, { params: { testRunId: '00000000-0000-4000-8000-000000000000' } })
          .catch((e) => e);
        const hidden = await outsider.client.call(v1.runs.getRun, { params: { testRunId: run.id } }).catch((e) => e);
        assert.equal(hidden.status, 404);
        const { instance: _a, ...hiddenBody } = hidden.problem;
        const { instance: _b, ...missingBody } = missing.problem;
        assert.deepEqual(hiddenBody, missingBody);
      });

      test('answers 400 for an id that is not a UUID', async () => {
        await assert.rejects(tester.client.call(v1.runs.getRun, { params: { testRunId: 'not-a-uuid' } }), isProblem(400, 'INVALID_INPUT'));
      });
    });

    describe('PATCH /testmgmt/testruns/{testRunId}', () => {
      test('completes a running run with a verdict and stamps the finish time', async () => {
        const run = await startRun();
        server.clock.advance(5_000);
        const done = await tester.client.call(v1.runs.updateRun, {
          params: { testRunId: run.id },
          body: { status: 'completed', verdict: 'failed' },
        });
        assert.equal(done.status, 'completed');
        assert.equal(done.verdict, 'failed');
        assert.equal(done.finishedAt, server.clock.now.toISOString());
        assert.equal(done.startedAt, run.startedAt);
      });

      test('repeating the same completion is a harmless no-op, a different verdict is a 409', async () => {
        const run = await startRun();
        const done = await tester.client.call(v1.runs.updateRun, {
          params: { testRunId: run.id },
          body: { status: 'completed', verdict: 'passed' },
        });
        server.clock.advance(1000);
        const again = await tester.client.call(v1.runs.updateRun, {
          params: { testRunId: run.id },
          body: { status: 'completed', verdict: 'passed' },
        });
        assert.deepEqual(again, done);
        await assert.rejects(
          tester.client.call(v1.runs.updateRun, { params: { testRunId: run.id }, body: { status: 'completed', verdict: 'failed' } }),
          isProblem(409, 'STATE_CONFLICT'),
        );
      });

      test('refuses every transition out of a finished run with 409 STATE_CONFLICT', async () => {
        const completed = await startRun();
        await tester.client.call(v1.runs.updateRun, {
          params: { testRunId: completed.id },
          body: { status: 'completed', verdict: 'passed' },
        });
        const aborted = await startRun();
        const abortedRun = await tester.client.call(v1.runs.updateRun, { params: { testRunId: aborted.id }, body: { status: 'aborted' } });
        assert.equal(abortedRun.status, 'aborted');
        assert.equal(abortedRun.verdict, null);
        assert.ok(abortedRun.finishedAt);
        const illegal: [string, { status: 'running' | 'completed' | 'aborted'; verdict?: 'passed' }][] = [
          [completed.id, { status: 'running' }],
          [completed.id, { status: 'aborted' }],
          [aborted.id, { status: 'running' }],
          [aborted.id, { status: 'completed', verdict: 'passed' }],
        ];
        for (const [testRunId, body] of illegal) {
          await assert.rejects(tester.client.call(v1.runs.updateRun, { params: { testRunId }, body }), isProblem(409, 'STATE_CONFLICT'));
        }
        const after = await tester.client.call(v1.runs.getRun, { params: { testRunId: completed.id } });
        assert.equal(after.status, 'completed');
      });

      test('moves a queued run of a job to running, then refuses to complete a queued one directly', async () => {
        const definition = await tester.client.call(v1.tests.createTest, { body: { projectId: projectA, name: 'Queued', steps: [] } });
        const job = await tester.client.call(v1.jobs.createJob, { body: { projectId: projectA, testIds: [definition.id] } });
        const [queued] = (await tester.client.call(v1.runs.listRuns, { query: { projectId: projectA, jobId: job.id } })).items;
        assert.ok(queued);
        assert.equal(queued.status, 'queued');
        assert.equal(queued.startedAt, null);
        await assert.rejects(
          tester.client.call(v1.runs.updateRun, { params: { testRunId: queued.id }, body: { status: 'completed', verdict: 'passed' } }),
          isProblem(409, 'STATE_CONFLICT'),
        );
        const running = await tester.client.call(v1.runs.updateRun, { params: { testRunId: queued.id }, body: { status: 'running' } });
        assert.equal(running.status, 'running');
        assert.equal(running.startedAt, server.clock.now.toISOString());
      });

      test('answers 400 for completing without a verdict, or a verdict without completing', async () => {
        const run = await startRun();
        await assert.rejects(
          tester.client.call(v1.runs.updateRun, { params: { testRunId: run.id }, body: { status: 'completed' } }),
          (e: ApiError) => {
            assert.equal(e.status, 400);
            assert.equal(firstPointer(e), '/body/verdict');
            return true;
          },
        );
        await assert.rejects(
          tester.client.call(v1.runs.updateRun, { params: { testRunId: run.id }, body: { status: 'aborted', verdict: 'failed' } }),
          (e: ApiError) => e.status === 400 && firstPointer(e) === '/body/verdict',
        );
        await assert.rejects(
          tester.client.call(v1.runs.updateRun, { params: { testRunId: run.id }, body: { status: 'queued' } as never }),
          (e: ApiError) => e.status === 400 && firstPointer(e) === '/body/status',
        );
        assert.equal((await tester.client.call(v1.runs.getRun, { params: { testRunId: run.id } })).status, 'running');
      });

      test('answers a viewer 403, and an outsider 404 even for an invalid body', async () => {
        const run = await startRun();
        await assert.rejects(
          viewer.client.call(v1.runs.updateRun, { params: { testRunId: run.id }, body: { status: 'aborted' } }),
          isProblem(403, 'FORBIDDEN'),
        );
        await assert.rejects(
          outsider.client.call(v1.runs.updateRun, { params: { testRunId: run.id }, body: { status: 'bogus' } as never }),
          isProblem(404, 'NOT_FOUND'),
        );
        assert.equal((await tester.client.call(v1.runs.getRun, { params: { testRunId: run.id } })).status, 'running');
      });
    });

    describe('GET /testmgmt/testruns', () => {
      test('filters by status, verdict, labels and time range, newest first, across cursor pages', async () => {
        const branch = unique('br-');
        const made: { id: string; createdAt: string }[] = [];
        for (let i = 0; i < 6; i++) {
          server.clock.advance(60_000);
          const run = await startRun({ branch, environment: i % 2 ? 'prod' : 'staging', build: `b${i}`, commit: `c${i}` });
          if (i < 4) {
            await tester.client.call(v1.runs.updateRun, {
              params: { testRunId: run.id },
              body: { status: 'completed', verdict: i % 2 ? 'failed' : 'passed' },
            });
          }
          made.push({ id: run.id, createdAt: run.createdAt });
        }
        const ids = (items: { id: string }[]) => items.map((r) => r.id);
        const newestFirst = [...made].reverse().map((r) => r.id);

        const first = await viewer.client.call(v1.runs.listRuns, { query: { projectId: projectA, branch, limit: 4 } });
        assert.equal(first.items.length, 4);
        assert.ok(first.nextCursor);
        const rest = await viewer.client.call(v1.runs.listRuns, {
          query: { projectId: projectA, branch, limit: 4, cursor: first.nextCursor },
        });
        assert.equal(rest.nextCursor, null);
        assert.deepEqual([...ids(first.items), ...ids(rest.items)], newestFirst);

        const q = (extra: Record<string, string>) =>
          viewer.client.call(v1.runs.listRuns, { query: { projectId: projectA, branch, ...extra } });
        assert.deepEqual(ids((await q({ status: 'running' })).items), [made[5]?.id, made[4]?.id]);
        assert.deepEqual(ids((await q({ verdict: 'failed' })).items), [made[3]?.id, made[1]?.id]);
        assert.deepEqual(ids((await q({ environment: 'prod', status: 'completed' })).items), [made[3]?.id, made[1]?.id]);
        assert.deepEqual(ids((await q({ build: 'b2' })).items), [made[2]?.id]);
        assert.deepEqual(ids((await q({ commit: 'c5' })).items), [made[5]?.id]);
        const from = made[1]?.createdAt as string;
        const to = made[3]?.createdAt as string;
        assert.deepEqual(ids((await q({ from, to })).items), [made[2]?.id, made[1]?.id]);
      });

      test("never lists another project's runs, and answers 404 for a project the caller cannot see", async () => {
        const foreign = await outsider.client.call(v1.runs.createRun, { body: { projectId: projectB, name: 'b-run' } });
        const mine = await tester.client.call(v1.runs.listRuns, { query: { projectId: projectA, limit: 200 } });
        assert.ok(!mine.items.some((r) => r.id === foreign.id));
        await assert.rejects(tester.client.call(v1.runs.listRuns, { query: { projectId: projectB } }), isProblem(404, 'NOT_FOUND'));
      });

      test('answers 400 naming the field for a bad filter or a missing project', async () => {
        await assert.rejects(
          tester.client.call(v1.runs.listRuns, { query: { projectId: projectA, status: 'done' } as never }),
          (e: ApiError) => e.status === 400 && firstPointer(e) === '/query/status',
        );
        await assert.rejects(
          tester.client.call(v1.runs.listRuns, { query: { projectId: projectA, from: 'yesterday' } }),
          (e: ApiError) => e.status === 400 && firstPointer(e) === '/query/from',
        );
        await assert.rejects(
          tester.client.call(v1.runs.listRuns, { query: {} as never }),
          (e: ApiError) => e.status === 400 && firstPointer(e) === '/query/projectId',
        );
        await assert.rejects(
          tester.client.call(v1.runs.listRuns, { query: { projectId: projectA, environment: 'a\u0000b' } }),
          (e: ApiError) => e.status === 400 && firstPointer(e) === '/query/environment',
        );
      });
    });
  });
}

for (const dialect of DIALECTS) {
  describe(`[${dialect}] POST /testmgmt/testruns (one call for a finished run)`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer(dialect);
    });
    after(() => server.close());

    test('records a completed run with its steps and cells in one call, readable at once through endpoint 2', async () => {
      const project = await createProject(server);
      const run = await server.admin.client.call(v1.runs.createRun, {
        body: {
          projectId: project.id,
          name: 'nightly login',
          branch: 'main',
          verdict: 'failed',
          startedAt: '2026-11-21T10:00:00.000Z',
          finishedAt: '2026-11-21T10:05:00.000Z',
          results: {
            steps: [
              { key: 'open', title: 'Open the login page', status: 'passed', durationMs: 1200 },
              {
                key: 'submit',
                title: 'Submit',
                status: 'failed',
                error: 'button not found',
                parentKey: 'open',
                cells: [{ name: 'actual', text: 'no button', mediaType: 'text/plain' }],
              },
            ],
            cells: [{ name: 'note', text: '**flaky?**', mediaType: 'text/markdown' }],
          },
        },
      });
      assert.equal(run.status, 'completed');
      assert.equal(run.verdict, 'failed');
      assert.equal(run.startedAt, '2026-11-21T10:00:00.000Z');
      assert.equal(run.finishedAt, '2026-11-21T10:05:00.000Z');
      const results = await server.admin.client.call(v1.results.getResults, { params: { testRunId: run.id } });
      assert.deepEqual(
        results.steps.map((s) => s.title),
        ['Open the login page', 'Submit'],
      );
      assert.equal(results.steps[1]?.parentId, results.steps[0]?.id);
      assert.equal(results.steps[1]?.cells[0]?.text, 'no button');
      assert.equal(results.cells[0]?.mediaType, 'text/markdown');
    });

    test('a retried create with an idempotencyKey answers 200 with the first run and records nothing again', async () => {
      const project = await createProject(server);
      const body = {
        projectId: project.id,
        name: unique('reported-'),
        verdict: 'passed',
        idempotencyKey: 'junit-upload-42',
        results: {
          steps: [{ title: 'unkeyed step', status: 'passed' }],
          cells: [{ name: 'stdout', text: 'ok', mediaType: 'text/plain' }],
        },
      };
      const post = (payload: unknown) =>
        server.admin.client.fetchRaw('POST', '/testmgmt/testruns', {
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(payload),
        });
      const first = await post(body);
      assert.equal(first.status, 201);
      const created = (await first.json()) as { id: string; idempotencyKey: string };
      assert.equal(created.idempotencyKey, 'junit-upload-42');
      const retries = await Promise.all([post(body), post(body), post(body)]);
      for (const retry of retries) {
        assert.equal(retry.status, 200);
        assert.equal(((await retry.json()) as { id: string }).id, created.id);
      }
      const conflict = await post({ ...body, name: 'another run' });
      assert.equal(conflict.status, 409);
      assert.equal(((await conflict.json()) as { code: string }).code, 'STATE_CONFLICT');
      const listed = await server.admin.client.call(v1.runs.listRuns, { query: { projectId: project.id } });
      assert.equal(listed.items.length, 1);
      const results = await server.admin.client.call(v1.results.getResults, { params: { testRunId: created.id } });
      assert.deepEqual([results.steps.length, results.cells.length], [1, 1]);
      // Keys are per project: another project may use the same one.
      const other = await createProject(server);
      assert.equal((await post({ ...body, projectId: other.id })).status, 201);
    });

    test('stores nothing when the results are invalid', async () => {
      const project = await createProject(server);
      await assert.rejects(
        server.admin.client.call(v1.runs.createRun, {
          body: {
            projectId: project.id,
            name: 'broken',
            verdict: 'passed',
            results: { steps: [{ title: 'x', status: 'passed', parentKey: 'nope' }] },
          },
        }),
        (e: ApiError) => e.status === 400,
      );
      const runs = await server.admin.client.call(v1.runs.listRuns, { query: { projectId: project.id } });
      assert.equal(runs.items.length, 0);
    });

    test('refuses a finish time without a verdict', async () => {
      const project = await createProject(server);
      await assert.rejects(
        server.admin.client.call(v1.runs.createRun, { body: { projectId: project.id, name: 'x', finishedAt: '2026-11-21T10:05:00.000Z' } }),
        (e: ApiError) => e.status === 400 && JSON.stringify(e.problem).includes('/body/finishedAt'),
      );
    });
  });
}
