import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { v1 } from '../../src/client/index.ts';
import { attest } from '../helpers/cli.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { type ServerWithTester, serverWithTester } from '../helpers/factories.ts';

// TRIAGE-17: `attest gate` (the built CLI) finds its job by CI build, CI link or as the newest of a
// branch, in a CI step that only knows its own CI variables.

const CI = 'https://github.com/acme/shop/actions/runs';

for (const dialect of DIALECTS) {
  describe(`[${dialect}] attest gate --build | --ci-url | --latest --branch (TRIAGE-17)`, () => {
    let setup: ServerWithTester;
    let env: Record<string, string>;
    const jobs: Record<string, string> = {};

    /** A completed launch of one test with this verdict. */
    const completed = async (key: string, verdict: 'passed' | 'failed', labels: { build?: string; branch?: string; ciUrl?: string }) => {
      const { client } = setup.tester;
      const job = await client.call(v1.jobs.createJob, { body: { projectId: setup.project.id, testIds: [], name: key, ...labels } });
      await client.call(v1.runs.createRun, {
        body: { projectId: setup.project.id, jobId: job.id, name: 'shop › pays', testName: 'shop › pays', verdict, ...labels },
      });
      await client.call(v1.jobs.completeJob, { params: { jobId: job.id } });
      setup.server.clock.advance(1000);
      jobs[key] = job.id;
    };

    before(async () => {
      setup = await serverWithTester(dialect, 'Gate lookup');
      env = { ATTEST_URL: setup.server.url, ATTEST_API_KEY: setup.tester.key, ATTEST_PROJECT: setup.project.key };
      await completed('main-450', 'passed', { build: '450', branch: 'main', ciUrl: `${CI}/9900` });
      await completed('main-451', 'failed', { build: '451', branch: 'main', ciUrl: `${CI}/9912` });
      await completed('pr-451', 'passed', { build: '451', branch: 'feature/pay', ciUrl: `${CI}/9913` });
    });
    after(() => setup.server.close());

    test('--build, --ci-url and --latest --branch gate the newest job of the project that matches, and say which', async () => {
      const byBuild = await attest(['gate', '--build', '451', '--branch', 'main'], env);
      assert.equal(byBuild.code, 1, byBuild.output);
      assert.match(byBuild.stderr, new RegExp(`job main-451 \\(${jobs['main-451']}\\), the one of build 451 on branch main`));
      assert.match(byBuild.stdout, new RegExp(`job main-451 \\(${jobs['main-451']}\\)\\n  compared with main-450`));
      assert.match(byBuild.stdout, /gate: failed: 1 new failure/);

      const newest = await attest(['gate', '--build', '451'], env);
      assert.match(newest.stderr, new RegExp(`job pr-451 \\(${jobs['pr-451']}\\), the newest of several of build 451`));
      assert.equal(newest.code, 0, newest.output);

      const byLink = await attest(['gate', '--ci-url', `${CI}/9912`, '--json'], env);
      assert.equal(byLink.code, 1, byLink.output);
      assert.equal((JSON.parse(byLink.stdout) as { comparison: { job: { id: string } } }).comparison.job.id, jobs['main-451']);

      const latest = await attest(['gate', '--latest', '--branch', 'main', '--project', setup.project.id], { ...env, ATTEST_PROJECT: '' });
      assert.equal(latest.code, 1, latest.output);
      assert.match(latest.stderr, new RegExp(`job main-451 \\(${jobs['main-451']}\\), the newest of several on branch main`));
    });

    test('no job found, a job named more than one way or none, or no project: exit 2 with the reason', async () => {
      const cases: [string[], Record<string, string>, RegExp][] = [
        [['gate', '--build', '999'], env, new RegExp(`cannot answer: no job of project ${setup.project.key} of build 999$`, 'm')],
        [
          ['gate', '--ci-url', `${CI}/1`],
          env,
          /cannot answer: no job of project .* linking https:\/\/github\.com\/acme\/shop\/actions\/runs\/1$/m,
        ],
        [['gate', '--latest', '--branch', 'nowhere'], env, /cannot answer: no job of project .* on branch nowhere$/m],
        [['gate', '--latest'], env, /--latest needs --branch/],
        [['gate'], env, /name the job one way/],
        [['gate', '--build', '451', '--job', jobs['main-451'] as string], env, /name the job one way/],
        [['gate', '--build', '451'], { ...env, ATTEST_PROJECT: '' }, /pass --project or set ATTEST_PROJECT/],
        [['gate', '--build', '451', '--project', 'NOPE'], env, /cannot answer: .*404/],
      ];
      for (const [args, environment, reason] of cases) {
        const result = await attest(args, environment);
        assert.equal(result.code, 2, `${args.join(' ')}: ${result.output}`);
        assert.match(result.stderr, reason, args.join(' '));
      }
    });
  });
}
