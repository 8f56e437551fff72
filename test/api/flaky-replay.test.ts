import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { formatReplay, replay } from '../../bench/flaky-replay-lib.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createProject } from '../helpers/factories.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

// TRIAGE-12: a reduced flaky-detection replay (the full one is bench/flaky-replay.ts, figures in
// docs/triage.md), through the real JUnit import, so the thresholds the defaults were tuned to hold.

for (const dialect of DIALECTS) {
  describe(`[${dialect}] the flaky replay (TRIAGE-12)`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer(dialect);
    });
    after(() => server.close());

    test('a reduced replay: flaky precision ≥ 0.95 and recall ≥ 0.90, no broken test called flaky, outages change no health', async () => {
      const project = await createProject(server, 'Replay');
      const result = await replay({
        url: server.url,
        key: server.admin.key,
        projectId: project.id,
        tests: 40,
        jobs: 40,
        seed: 7,
        beforeJob: () => server.clock.advance(60_000),
      });
      const report = formatReplay(result);
      assert.ok(result.outageJobs >= 2, report);
      assert.ok(result.matrix.flaky.flaky + result.matrix.flaky.stable + result.matrix.flaky.broken >= 10, report);
      assert.ok(result.precision >= 0.95, report);
      assert.ok(result.recall >= 0.9, report);
      assert.equal(result.brokenCalledFlaky, 0, report);
      assert.equal(result.brokenEverFlaky, 0, report);
      assert.equal(result.quarantinedBroken, 0, report);
      assert.equal(result.outagesMissed, 0, report);
      assert.equal(result.healthChangedByOutage, 0, report);
      assert.ok(result.matrix.broken.broken > 0, report);
    });
  });
}
