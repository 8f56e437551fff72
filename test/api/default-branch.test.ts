import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type AttestClient, v1 } from '../../src/client/index.ts';
import { attest } from '../helpers/cli.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { type ServerWithManagedProject, serverWithManagedProject, unique } from '../helpers/factories.ts';
import { firstPointer, rejectsWith } from '../helpers/problems.ts';

// TRIAGE-16: a project's default branch (set, or inferred from its jobs) and the base a job on
// another branch is compared with: that branch's latest completed job, or the latest completed job
// of the branch its pull request merges into.

/** A closed launch on `branch` whose one run of `testName` has `verdict`. */
async function recordJob(
  client: AttestClient,
  projectId: string,
  branch: string,
  verdict: 'passed' | 'failed',
  extra: { targetBranch?: string } = {},
): Promise<string> {
  const job = await client.call(v1.jobs.createJob, { body: { projectId, testIds: [], branch, name: unique('build-'), ...extra } });
  await client.call(v1.runs.createRun, {
    body: {
      projectId,
      jobId: job.id,
      name: 'checkout pays',
      testName: 'checkout pays',
      branch,
      verdict,
      results: { steps: [{ title: 'pay', status: verdict, ...(verdict === 'failed' ? { error: 'Pay button missing' } : {}) }] },
    },
  });
  await client.call(v1.jobs.completeJob, { params: { jobId: job.id } });
  return job.id;
}

for (const dialect of DIALECTS) {
  describe(`[${dialect}] a project's default branch`, () => {
    let { server, projectId, manager, tester } = {} as ServerWithManagedProject;
    before(async () => {
      ({ server, projectId, manager, tester } = await serverWithManagedProject(dialect, 'Branches'));
    });
    after(() => server.close());

    describe('PATCH /projects/{projectId}', () => {
      test('the default branch is inferred from the branch most jobs ran on until set; set and cleared by a manager, audited; bad input is a 400', async () => {
        const fresh = await manager.client.call(v1.projects.getProject, { params: { projectId } });
        assert.equal(fresh.defaultBranch, null);
        assert.equal(fresh.defaultBranchInferred, true);
        await recordJob(tester.client, projectId, 'trunk', 'passed');
        server.clock.advance(1_000);
        await recordJob(tester.client, projectId, 'feature/a', 'passed');
        server.clock.advance(1_000);
        await recordJob(tester.client, projectId, 'trunk', 'passed');
        server.clock.advance(1_000);
        const inferred = await manager.client.call(v1.projects.getProject, { params: { projectId } });
        assert.deepEqual([inferred.defaultBranch, inferred.defaultBranchInferred], ['trunk', true]);
        const listed = await manager.client.call(v1.projects.listProjects, { query: {} });
        assert.equal(listed.items.find((p) => p.id === projectId)?.defaultBranch, 'trunk');

        const set = await manager.client.call(v1.projects.updateProject, { params: { projectId }, body: { defaultBranch: 'release' } });
        assert.deepEqual([set.defaultBranch, set.defaultBranchInferred], ['release', false]);
        const audit = await server.admin.client.call(v1.users.listAuditLog, {
          query: { action: 'project.default-branch', targetId: projectId },
        });
        assert.deepEqual(
          audit.items.map((entry) => entry.details),
          [{ defaultBranch: 'release' }],
        );

        for (const [body, pointer] of [
          [{ defaultBranch: '' }, '/body/defaultBranch'],
          [{ defaultBranch: 'two\nlines' }, '/body/defaultBranch'],
          [{ defaultBranch: 7 }, '/body/defaultBranch'],
        ] as const) {
          await assert.rejects(
            manager.client.call(v1.projects.updateProject, { params: { projectId }, body: body as never }),
            (e) => rejectsWith(400, 'INVALID_INPUT')(e) && firstPointer(e as never) === pointer,
          );
        }
        await assert.rejects(
          tester.client.call(v1.projects.updateProject, { params: { projectId }, body: { defaultBranch: 'trunk' } }),
          rejectsWith(403, 'FORBIDDEN'),
        );
        const unchanged = await manager.client.call(v1.projects.getProject, { params: { projectId } });
        assert.deepEqual(
          [unchanged.defaultBranch, unchanged.defaultBranchInferred],
          ['release', false],
          'a refused change changes nothing',
        );

        const cleared = await manager.client.call(v1.projects.updateProject, { params: { projectId }, body: { defaultBranch: null } });
        assert.deepEqual([cleared.defaultBranch, cleared.defaultBranchInferred], ['trunk', true]);
      });
    });

    describe('GET /testmgmt/jobs/{jobId}/comparison', () => {
      test("a job on another branch is compared with the default branch's latest completed job; a pull request's with its target branch's; attest gate takes that base", async () => {
        await manager.client.call(v1.projects.updateProject, { params: { projectId }, body: { defaultBranch: 'trunk' } });
        const trunk = await recordJob(tester.client, projectId, 'trunk', 'passed');
        server.clock.advance(1_000);
        const release = await recordJob(tester.client, projectId, 'release', 'failed');
        server.clock.advance(1_000);
        const earlierFeature = await recordJob(tester.client, projectId, 'feature/pay', 'failed');
        server.clock.advance(1_000);

        const feature = await recordJob(tester.client, projectId, 'feature/pay', 'failed');
        const againstTrunk = await tester.client.call(v1.comparison.compareJobs, { params: { jobId: feature }, query: {} });
        assert.equal(againstTrunk.base?.id, trunk, 'not the earlier job of its own branch');
        assert.notEqual(againstTrunk.base?.id, earlierFeature);
        assert.deepEqual(
          againstTrunk.newFailures.map((t) => [t.name, t.baseVerdict]),
          [['checkout pays', 'passed']],
        );
        const ownBranch = await tester.client.call(v1.comparison.compareJobs, {
          params: { jobId: feature },
          query: { baseBranch: 'feature/pay' },
        });
        assert.equal(ownBranch.base?.id, earlierFeature, 'a branch asked for still wins');

        server.clock.advance(1_000);
        const pullRequest = await recordJob(tester.client, projectId, 'fix/pay', 'failed', { targetBranch: 'release' });
        const job = await tester.client.call(v1.jobs.getJob, { params: { jobId: pullRequest } });
        assert.equal(job.targetBranch, 'release');
        const againstRelease = await tester.client.call(v1.comparison.compareJobs, { params: { jobId: pullRequest }, query: {} });
        assert.equal(againstRelease.base?.id, release);
        assert.deepEqual(
          againstRelease.stillFailing.map((t) => t.name),
          ['checkout pays'],
        );

        // The default branch's own jobs keep comparing with their branch.
        server.clock.advance(1_000);
        const nextTrunk = await recordJob(tester.client, projectId, 'trunk', 'passed');
        assert.equal((await tester.client.call(v1.comparison.compareJobs, { params: { jobId: nextTrunk }, query: {} })).base?.id, trunk);

        const env = { ATTEST_URL: server.url, ATTEST_API_KEY: tester.key };
        const gate = await attest(['gate', '--job', feature, '--json'], env);
        assert.equal(gate.code, 1, gate.output);
        assert.equal((JSON.parse(gate.stdout) as { comparison: { base: { id: string } } }).comparison.base.id, trunk);
        const gateOfPullRequest = await attest(['gate', '--job', pullRequest, '--json'], env);
        assert.equal(gateOfPullRequest.code, 0, 'still failing on its target branch: not new');
        assert.equal((JSON.parse(gateOfPullRequest.stdout) as { comparison: { base: { id: string } } }).comparison.base.id, release);
      });

      test('a targetBranch that is not a branch name is a 400, and makes no job', async () => {
        const before = await tester.client.call(v1.jobs.listJobs, { query: { projectId } });
        await assert.rejects(
          tester.client.call(v1.jobs.createJob, { body: { projectId, testIds: [], targetBranch: 'a\nb' } }),
          (e) => rejectsWith(400, 'INVALID_INPUT')(e) && firstPointer(e as never) === '/body/targetBranch',
        );
        const afterwards = await tester.client.call(v1.jobs.listJobs, { query: { projectId } });
        assert.equal(afterwards.items.length, before.items.length);
      });
    });
  });
}
