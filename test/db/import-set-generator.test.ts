import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { fillProject } from '../../bench/imported/fill.ts';
import {
  BRANCHES,
  CI_MAX,
  CI_MIN,
  NIGHTLY_EVERY,
  planImportSet,
  reportOf,
  screenshotPngs,
  testNameOf,
} from '../../bench/imported/generate.ts';
import { v1 } from '../../src/client/index.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createProject } from '../helpers/factories.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

// The import-path set's generator (bench/imported/generate.ts, docs/performance.md "The import-path
// set") makes what it says: about the runs asked for, a nightly of the whole suite every 20th
// import beside CI jobs of 20–200 tests, 20 branches with main the most used, about one run in
// seven failed, reruns and screenshots; the same files from the same seed; and, posted through the
// real import endpoint on each dialect, those runs, verdicts, attempts and screenshots are what
// the server records.

const ENDS_AT = new Date('2026-11-28T12:00:00.000Z');

describe('the import-path set generator', () => {
  const plan = planImportSet({ runs: 6000, endsAt: ENDS_AT });

  test('fills a project to about the runs asked for, a job per import', () => {
    assert.equal(
      plan.counts.runs,
      plan.imports.reduce((sum, i) => sum + i.runs, 0),
    );
    assert.ok(plan.counts.runs >= 6000 && plan.counts.runs < 6000 + 20, `${plan.counts.runs} runs`);
    assert.equal(plan.counts.jobs, plan.imports.length);
    assert.equal(plan.tests, 300, 'about 50 runs per test, and at least a nightly of up to 5,000 (here 6,000 / 20)');
  });

  test('runs a nightly of the whole suite every 20th import and CI jobs of 20–200 tests between', () => {
    for (const planned of plan.imports.slice(0, -1)) {
      if (planned.index % NIGHTLY_EVERY === 0) {
        assert.equal(planned.kind, 'nightly');
        assert.equal(planned.size, plan.nightlySize);
        assert.equal(planned.branch, 'main');
      } else {
        assert.equal(planned.kind, 'ci');
        assert.ok(planned.size >= CI_MIN && planned.size <= CI_MAX, `a CI job of ${planned.size}`);
      }
    }
    assert.ok(plan.counts.nightlies >= 2, `${plan.counts.nightlies} nightlies`);
  });

  test('spreads the CI jobs over the 20 branches, main the most used', () => {
    const ci = plan.imports.filter((i) => i.kind === 'ci');
    const byBranch = new Map<string, number>();
    for (const planned of ci) byBranch.set(planned.branch, (byBranch.get(planned.branch) ?? 0) + 1);
    for (const branch of byBranch.keys()) assert.ok(BRANCHES.includes(branch), branch);
    assert.equal(BRANCHES.length, 20);
    assert.ok(byBranch.size >= 10, `${byBranch.size} branches`);
    const most = [...byBranch.entries()].sort((a, b) => b[1] - a[1])[0];
    assert.equal(most?.[0], 'main');
  });

  test('fails about one run in seven, with reruns and screenshots, over the 60 days before the end', () => {
    const share = plan.counts.failed / plan.counts.runs;
    assert.ok(share > 1 / 9 && share < 1 / 5.5, `failed share ${share.toFixed(3)}`);
    assert.ok(plan.counts.reruns > 0 && plan.counts.screenshots > 0);
    const first = plan.imports[0]?.at.getTime() ?? 0;
    const last = plan.imports.at(-1)?.at.getTime() ?? 0;
    assert.ok(last < ENDS_AT.getTime() && first >= ENDS_AT.getTime() - 60 * 86_400_000 && first < last);
  });

  test('makes the same files from the same seed, each XML holding its planned runs', () => {
    const again = planImportSet({ runs: 6000, endsAt: ENDS_AT });
    assert.deepEqual(again, plan);
    const planned = plan.imports[1];
    assert.ok(planned);
    const report = reportOf(plan, planned);
    assert.equal(report.xml.toString('utf8'), reportOf(again, planned).xml.toString('utf8'));
    assert.equal(report.xml.toString('utf8').match(/<testcase /g)?.length, planned.runs);
    assert.equal(report.xml.toString('utf8').match(/\[\[ATTACHMENT\|/g)?.length ?? 0, planned.screenshots);
  });
});

for (const dialect of DIALECTS) {
  describe(`[${dialect}] the import-path set through POST /projects/{projectId}/imports`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer(dialect);
    });
    after(() => server.close());

    test('records the runs, failures, reruns and screenshots the plan sent', async () => {
      const plan = planImportSet({ runs: 700, endsAt: ENDS_AT });
      const projectId = (await createProject(server, 'Imported')).id;
      const filled = await fillProject({ url: server.url, key: server.admin.key }, projectId, plan, await screenshotPngs());
      assert.equal(filled.runs, plan.counts.runs);
      assert.equal(filled.attachments, plan.counts.screenshots);
      assert.equal(filled.jobs.length, plan.counts.jobs);
      const client = server.admin.client;
      /** Every run the filter lists, page after page (200 a page at most). */
      const runs = async (query: { projectId?: string; jobId?: string; verdict?: 'failed' }) => {
        const items: { attempt: number; branch: string | null }[] = [];
        let cursor: string | undefined;
        do {
          const page = await client.call(v1.runs.listRuns, { query: { ...query, limit: 200, ...(cursor ? { cursor } : {}) } });
          items.push(...page.items);
          cursor = page.nextCursor ?? undefined;
        } while (cursor);
        return items;
      };
      assert.equal((await runs({ projectId, verdict: 'failed' })).length, plan.counts.failed);
      const all = await runs({ projectId });
      assert.equal(all.length, plan.counts.runs);
      assert.equal(all.filter((run) => run.attempt === 1).length, plan.counts.reruns);
      const nightly = filled.jobs[0];
      assert.equal(nightly?.planned.kind, 'nightly');
      const ofNightly = await runs({ jobId: nightly?.jobId as string });
      assert.equal(ofNightly.length, nightly?.planned.runs);
      assert.ok(ofNightly.every((run) => run.branch === 'main'));
      const tests = await client.call(v1.tests.listTests, { query: { projectId, limit: 200 } });
      assert.equal(tests.items.length, plan.tests);
      assert.ok(tests.items.some((t) => t.name === testNameOf(0)));
      const groups = await client.call(v1.failures.listFailureGroups, { params: { projectId } });
      assert.ok(groups.items.length >= 2 && groups.items.length <= 8, `${groups.items.length} failure groups from 8 causes`);
    });
  });
}
