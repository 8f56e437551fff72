import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { TRIAGE_DEFAULTS } from '../../src/api/v1/projects.ts';
import { v1 } from '../../src/client/index.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { type ServerWithTwoProjects, serverWithTwoProjects, unique } from '../helpers/factories.ts';
import { jsonHeaders, rawRequest } from '../helpers/http.ts';
import { firstPointer } from '../helpers/problems.ts';

// TRIAGE-11: health by named monitors (retry, rate, broken) on the project's default branch,
// explained by the monitor that fired and its evidence runs (docs/triage.md).

/** A Surefire report of one test case: passing, failing, or failed then passed on its rerun (`<flakyFailure>`). */
const surefire = (name: string, outcome: 'passed' | 'failed' | 'flaky') => {
  const failure = (tag: string) =>
    `<${tag} message="expected: &lt;true&gt; but was: &lt;false&gt;" type="org.opentest4j.AssertionFailedError">` +
    `${tag === 'failure' ? '' : '<stackTrace>'}org.opentest4j.AssertionFailedError: expected: &lt;true&gt; but was: &lt;false&gt;\n\tat com.acme.CartTest.${name}(CartTest.java:12)${tag === 'failure' ? '' : '</stackTrace>'}</${tag}>`;
  const body = outcome === 'failed' ? failure('failure') : outcome === 'flaky' ? failure('flakyFailure') : '';
  return `<testsuite name="com.acme.CartTest" tests="1"><testcase name="${name}" classname="com.acme.CartTest" time="0.1">${body}</testcase></testsuite>`;
};

for (const dialect of DIALECTS) {
  describe(`[${dialect}] health by monitors (TRIAGE-11)`, () => {
    let { server, projectA, projectB, tester, viewer } = {} as ServerWithTwoProjects;
    before(async () => {
      ({ server, projectA, projectB, tester, viewer } = await serverWithTwoProjects(dialect));
    });
    after(() => server.close());

    const importJunit = async (projectId: string, xml: string, branch: string, commit: string) => {
      server.clock.advance(1000);
      const body = Buffer.from(xml);
      const answer = await rawRequest(`${server.url}/api/v1/projects/${projectId}/imports?branch=${branch}&commit=${commit}`, {
        method: 'POST',
        headers: { ...jsonHeaders(tester.key), 'content-type': 'application/xml', 'content-length': body.length },
        body,
      });
      assert.equal(answer.status, 202, answer.text);
      for (let i = 0; i < 400; i++) {
        const record = await viewer.client.call(v1.imports.getImport, { params: { projectId, importId: String(answer.json.id) } });
        if (record.status === 'completed') return record.jobId as string;
        assert.notEqual(record.status, 'failed', record.error ?? '');
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      throw new Error('the import did not finish');
    };
    const testNamed = async (projectId: string, name: string) => {
      const { items } = await viewer.client.call(v1.tests.listTests, { query: { projectId, q: name, limit: 10 } });
      assert.equal(items.length, 1);
      return items[0] as (typeof items)[number];
    };
    const getTest = (testId: string, branch?: string) =>
      viewer.client.call(v1.tests.getTest, { params: { testId }, query: branch ? { branch } : {} });

    test('a Surefire <flakyFailure> fires the retry monitor on the default branch, with its evidence runs; another branch answers with ?branch=', async () => {
      const name = unique('reservesStock');
      let commit = 0;
      // Main is the project's default branch: most of its jobs ran there.
      for (const outcome of ['passed', 'flaky', 'passed', 'passed'] as const)
        await importJunit(projectA, surefire(name, outcome), 'main', `m${commit++}`);
      const flakyJob = await importJunit(projectA, surefire(name, 'flaky'), 'main', `m${commit++}`);
      await importJunit(projectA, surefire(name, 'failed'), 'feature', 'f0');

      const { id, health } = await testNamed(projectA, name);
      assert.equal(health.state, 'flaky');
      assert.equal(health.monitor, 'retry');
      assert.equal(health.branch, 'main');
      assert.equal(health.runsConsidered, 5, 'the feature branch is not counted');
      assert.equal(health.evidence?.events, 2, 'failed then passed on retry in 2 of the 5 jobs');
      assert.equal(health.evidence?.samples, 5);
      assert.equal(health.evidence?.runs[0]?.jobId, flakyJob, 'newest first');
      const run = health.evidence?.runs[0];
      assert.equal(run?.url, `/runs/${run?.runId}`);
      assert.equal((await viewer.client.call(v1.runs.getRun, { params: { testRunId: run?.runId as string } })).jobId, flakyJob);
      assert.deepEqual((await getTest(id)).health, health);

      // The feature branch asked for: one failure, no retry, too few samples for the rate monitor.
      const feature = (await getTest(id, 'feature')).health;
      assert.deepEqual(
        { state: feature.state, monitor: feature.monitor, branch: feature.branch, runsConsidered: feature.runsConsidered },
        { state: 'stable', monitor: null, branch: 'feature', runsConsidered: 1 },
      );
    });

    test('the rate monitor fires at its threshold once it has its samples; a failing streak not yet ended is not counted, and broken wins', async () => {
      const name = unique('syncsInventory');
      const run = async (outcome: 'passed' | 'failed', at: number) =>
        importJunit(projectA, surefire(name, outcome), 'main', `r${name}${at}`);
      // 9 outcomes, two failures among them: under rateMinSamples (10), still stable.
      const outcomes = ['passed', 'failed', 'passed', 'passed', 'passed', 'failed', 'passed', 'passed', 'passed'] as const;
      for (const [at, outcome] of outcomes.entries()) await run(outcome, at);
      let health = (await testNamed(projectA, name)).health;
      assert.deepEqual([health.state, health.monitor, health.runsConsidered], ['stable', null, 9]);
      await run('passed', 9);
      health = (await testNamed(projectA, name)).health;
      assert.deepEqual([health.state, health.monitor], ['flaky', 'rate']);
      assert.deepEqual([health.evidence?.events, health.evidence?.samples, health.evidence?.runs.length], [2, 10, 2]);

      // The project raises the threshold above 2 in 10: stable again when its next run completes.
      await server.admin.client.call(v1.projects.updateProject, {
        params: { projectId: projectA },
        body: { triage: { rateThreshold: 0.25 } },
      });
      await run('passed', 10);
      health = (await testNamed(projectA, name)).health;
      assert.deepEqual([health.state, health.monitor], ['stable', null]);
      await server.admin.client.call(v1.projects.updateProject, {
        params: { projectId: projectA },
        body: { triage: { rateThreshold: 0.05 } },
      });

      // Failing now: the streak is no flakiness yet (it may be a break) and, at brokenAfter (5), it is broken.
      for (let at = 11; at < 15; at++) await run('failed', at);
      health = (await testNamed(projectA, name)).health;
      assert.deepEqual(
        [health.state, health.monitor, health.evidence?.events],
        ['flaky', 'rate', 2],
        'the two earlier failures still count',
      );
      await run('failed', 15);
      health = (await testNamed(projectA, name)).health;
      assert.deepEqual([health.state, health.monitor, health.evidence?.events, health.flakyScore], ['broken', 'broken', 5, 0]);
    });

    test('the monitors are set per project, validated, and shown with the defaults; bad settings are a 400 that changes nothing', async () => {
      const project = await server.admin.client.call(v1.projects.getProject, { params: { projectId: projectB } });
      // The contract's defaults: the committed docs/openapi.json names each number (test/api/openapi.test.ts
      // fails on a drift); that no quarantine is automatic unless a project asks, it does not say.
      assert.deepEqual(project.triage, { ...TRIAGE_DEFAULTS });
      assert.equal(project.triage.autoQuarantine, false);
      for (const [field, value] of [
        ['rateThreshold', 0],
        ['rateThreshold', 1.5],
        ['retryWindow', 0],
        ['rateMinSamples', 1001],
        ['retryMinEvents', 1.5],
      ] as const) {
        await assert.rejects(
          server.admin.client.call(v1.projects.updateProject, { params: { projectId: projectB }, body: { triage: { [field]: value } } }),
          (error: Parameters<typeof firstPointer>[0]) => {
            assert.equal(firstPointer(error), `/body/triage/${field}`);
            return true;
          },
        );
      }
      assert.deepEqual(
        (await server.admin.client.call(v1.projects.getProject, { params: { projectId: projectB } })).triage,
        project.triage,
      );
      const changed = await server.admin.client.call(v1.projects.updateProject, {
        params: { projectId: projectB },
        body: { triage: { retryMinEvents: 2, rateWindow: 50 } },
      });
      assert.deepEqual(changed.triage, { ...project.triage, retryMinEvents: 2, rateWindow: 50 });
    });
  });
}
