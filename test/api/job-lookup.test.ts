import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type ApiError, v1 } from '../../src/client/index.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createProject, type ServerWithTester, serverWithTester } from '../helpers/factories.ts';
import { importSettled } from '../helpers/playwright-fixture.ts';

// TRIAGE-17: a project's jobs found by CI build, CI link or branch, newest first.

const CI = 'https://github.com/acme/shop/actions/runs';

for (const dialect of DIALECTS) {
  describe(`[${dialect}] GET /testmgmt/jobs?build=&ciUrl=&branch= (TRIAGE-17)`, () => {
    let setup: ServerWithTester;
    const ids: Record<string, string> = {};

    const launch = async (key: string, labels: { build?: string; branch?: string; ciUrl?: string }) => {
      const job = await setup.tester.client.call(v1.jobs.createJob, { body: { projectId: setup.project.id, testIds: [], ...labels } });
      ids[key] = job.id;
      setup.server.clock.advance(1000); // the next job is newer
      return job;
    };
    const found = async (query: Record<string, string | number>) =>
      (await setup.tester.client.call(v1.jobs.listJobs, { query: { projectId: setup.project.id, ...query } as never })).items.map(
        (job) => job.id,
      );

    before(async () => {
      setup = await serverWithTester(dialect, 'Lookup');
      await launch('main450', { build: '450', branch: 'main', ciUrl: `${CI}/9900` });
      await launch('main451', { build: '451', branch: 'main', ciUrl: `${CI}/9912` });
      await launch('pr451', { build: '451', branch: 'feature/pay', ciUrl: `${CI}/9912/attempts/2` });
      await launch('bare', {});
    });
    after(() => setup.server.close());

    test('each filter keeps the jobs of that build, CI link or branch, newest first; together they all hold', async () => {
      assert.deepEqual(await found({ build: '451' }), [ids.pr451, ids.main451]);
      assert.deepEqual(await found({ build: '451', limit: 1 }), [ids.pr451], 'several: the newest first');
      assert.deepEqual(await found({ build: '451', branch: 'main' }), [ids.main451]);
      assert.deepEqual(await found({ ciUrl: `${CI}/9912` }), [ids.main451], 'the link compared exactly');
      assert.deepEqual(await found({ branch: 'main' }), [ids.main451, ids.main450]);
      assert.deepEqual(await found({ branch: 'feature/pay', limit: 1 }), [ids.pr451]);
      assert.deepEqual(await found({ build: '45' }), [], 'no prefix match');
      assert.deepEqual(await found({}), [ids.bare, ids.pr451, ids.main451, ids.main450]);
      const job = await setup.tester.client.call(v1.jobs.getJob, { params: { jobId: ids.main451 as string } });
      assert.equal(job.build, '451');
      assert.equal(job.branch, 'main');
    });

    test('a job imported with labels is found by them too', async () => {
      const junit = Buffer.from(
        '<?xml version="1.0"?><testsuites><testsuite name="s" tests="1"><testcase classname="s" name="t"/></testsuite></testsuites>',
      );
      const record = await importSettled(
        setup.tester.client,
        setup.project.id,
        { name: 'junit.xml', bytes: junit },
        { build: '777', branch: 'release', ciUrl: `${CI}/7777` },
      );
      assert.equal(record.status, 'completed');
      const jobId = record.jobId as string;
      const listed = await found({ build: '777' });
      assert.deepEqual(listed, [jobId]);
      assert.deepEqual(await found({ ciUrl: `${CI}/7777`, branch: 'release' }), listed);
    });

    test("a bad filter is a 400 naming it; another project's jobs are not found", async () => {
      for (const [query, pointer] of [
        [{ ciUrl: 'not a link' }, '/query/ciUrl'],
        [{ build: '' }, '/query/build'],
        [{ branch: 'two\nlines' }, '/query/branch'],
      ] as const) {
        await assert.rejects(
          setup.tester.client.call(v1.jobs.listJobs, { query: { projectId: setup.project.id, ...query } as never }),
          (error: ApiError) => error.status === 400 && JSON.stringify(error.problem).includes(pointer),
          pointer,
        );
      }
      const other = await createProject(setup.server, 'Other');
      const listed = await setup.server.admin.client.call(v1.jobs.listJobs, { query: { projectId: other.id, build: '451' } });
      assert.deepEqual(listed.items, []);
    });
  });
}
