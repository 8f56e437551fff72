// `node --import tsx bench/flaky-replay.ts [--tests 300] [--jobs 60] [--seed 42] [--dialect sqlite|postgres]`:
// the flaky-detection replay (TRIAGE-12, docs/triage.md "Accuracy"). Starts a real server (the app
// built by buildApp on a fresh database, as the API tests do), imports the synthetic jobs as JUnit
// XML through the import API and prints the confusion matrix and figures. Exits 1 when a figure
// the issue requires does not hold.
import { parseArgs } from 'node:util';
import { createProject } from '../test/helpers/factories.ts';
import { startTestServer } from '../test/helpers/server.ts';
import { formatReplay, replay } from './flaky-replay-lib.ts';

const { values } = parseArgs({
  options: {
    tests: { type: 'string', default: '300' },
    jobs: { type: 'string', default: '60' },
    seed: { type: 'string', default: '42' },
    dialect: { type: 'string', default: 'sqlite' },
  },
});
const dialect = values.dialect === 'postgres' ? 'postgres' : 'sqlite';
const server = await startTestServer(dialect);
try {
  const project = await createProject(server, 'Flaky replay');
  const started = Date.now();
  const result = await replay({
    url: server.url,
    key: server.admin.key,
    projectId: project.id,
    tests: Number(values.tests),
    jobs: Number(values.jobs),
    seed: Number(values.seed),
    // The test server's clock stands still unless moved: a job a minute, as CI would space them.
    beforeJob: () => server.clock.advance(60_000),
  });
  console.log(`${formatReplay(result)}\n(${dialect}, seed ${values.seed}, ${((Date.now() - started) / 1000).toFixed(1)} s)`);
  const holds =
    result.precision >= 0.95 &&
    result.recall >= 0.9 &&
    result.brokenCalledFlaky === 0 &&
    result.quarantinedBroken === 0 &&
    result.outagesMissed === 0 &&
    result.healthChangedByOutage === 0;
  console.log(holds ? 'holds: precision ≥ 0.95, recall ≥ 0.90, no broken test called flaky, outages change nothing' : 'DOES NOT HOLD');
  process.exitCode = holds ? 0 : 1;
} finally {
  await server.close();
}
