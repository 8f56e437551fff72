import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { v1 } from '../../src/client/index.ts';
import { attest } from '../helpers/cli.ts';
import { createProject } from '../helpers/factories.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

// IMP-1, IMP-6: `attest import` packs a folder of reports made by real tools with their
// screenshot, uploads it, waits for the job, and prints what it became.

const FIXTURES = fileURLToPath(new URL('../fixtures/junit/', import.meta.url));
const REPORTS = ['node.xml', 'jest.xml', 'mocha.xml', 'vitest.xml', 'pytest.xml'];

describe('attest import (sqlite)', () => {
  let server: TestServer;
  let project: { id: string; key: string };
  let folder: string;
  const env = () => ({ ATTEST_URL: server.url, ATTEST_API_KEY: server.admin.key, ATTEST_CONFIG_DIR: os.tmpdir() });

  before(async () => {
    server = await startTestServer('sqlite');
    project = await createProject(server, 'Imports');
    folder = fs.mkdtempSync(path.join(os.tmpdir(), 'attest-import-'));
    for (const name of REPORTS) fs.copyFileSync(path.join(FIXTURES, name), path.join(folder, name));
    fs.cpSync(path.join(FIXTURES, 'attachments'), path.join(folder, 'attachments'), { recursive: true });
  });
  after(() => server.close());

  test('a folder of five tools’ reports becomes one job; the screenshots they name are found; a re-run is the same import', async () => {
    const first = await attest(['import', folder, '--project', project.key, '--branch', 'main', '--json'], env());
    assert.equal(first.code, 0, first.output);
    const record = JSON.parse(first.stdout) as {
      id: string;
      status: string;
      jobId: string;
      counts: { [K in 'reports' | 'runs' | 'passed' | 'failed' | 'broken' | 'skipped' | 'attachments' | 'attachmentsMissing']: number };
      files: unknown[];
    };
    assert.equal(record.status, 'completed');
    assert.equal(record.counts.reports, 5);
    assert.equal(record.files.length, 5);
    // Counts of test/fixtures/junit/README.md: six cases per file, pytest with one error.
    assert.equal(record.counts.runs, 30);
    assert.equal(record.counts.passed, 15);
    assert.equal(record.counts.skipped, 5);
    assert.equal(record.counts.failed + record.counts.broken, 10);
    assert.equal(record.counts.attachmentsMissing, 0);
    assert.ok(record.counts.attachments >= 3, 'mocha, vitest and pytest name the screenshot');

    const runs = await server.admin.client.call(v1.runs.listRuns, { query: { projectId: project.id, jobId: record.jobId, limit: 100 } });
    assert.equal(runs.items.length, 30);
    assert.ok(runs.items.every((r) => r.status === 'completed' && r.branch === 'main'));
    const png = fs.readFileSync(path.join(FIXTURES, 'attachments/screenshots/login.png'));
    const withShot = [];
    for (const run of runs.items) {
      const listing = await server.admin.client.call(v1.artifacts.listArtifacts, {
        params: { projectId: project.id },
        query: { testRunId: run.id },
      });
      withShot.push(...listing.items);
    }
    assert.ok(withShot.length >= 3);
    assert.ok(withShot.every((a) => a.kind === 'screenshot' && a.sha256 === createHash('sha256').update(png).digest('hex')));

    const again = await attest(['import', folder, '--project', project.key, '--branch', 'main', '--json'], env());
    assert.equal(again.code, 0, again.output);
    assert.equal((JSON.parse(again.stdout) as { id: string }).id, record.id, 'the same upload answers the first import');
  });

  test('a single file, summarised in words; an unreadable report exits non-zero with the problem', async () => {
    const single = await attest(['import', path.join(FIXTURES, 'surefire.xml'), '--project', project.key], env());
    assert.equal(single.code, 0, single.output);
    assert.match(single.stdout, /imported \d+ runs of \d+ tests \(\d+ new\) from 1 report as job [0-9a-f-]{36}/);
    // Not a terminal: progress as plain lines for a CI log.
    assert.match(single.stderr, /^uploading: \d+\/\d+ bytes$/m);
    assert.match(single.stderr, /^importing: (\d+)\/\1 runs$/m);

    const bad = path.join(folder, 'bad.xml');
    fs.writeFileSync(bad, '<testsuite><testcase name="x"></testsuite>');
    const refused = await attest(['import', bad, '--project', project.key], env());
    assert.notEqual(refused.code, 0);
    assert.match(refused.output, /well-formed.*\(400 INVALID_INPUT\)/s);
    const missing = await attest(['import', path.join(folder, 'nope.xml'), '--project', project.key], env());
    assert.notEqual(missing.code, 0);
    assert.match(missing.output, /does not exist/);
  });

  test('--fail-on-failures exits 1 while a test failed in the end, and 0 once every failed test is quarantined (TRIAGE-6)', async () => {
    const report = path.join(folder, 'quarantine.xml');
    const suite = (run: number) =>
      `<testsuite name="cart" tests="2"><testcase classname="cart" name="adds an item" time="0.1"/>` +
      `<testcase classname="cart" name="applies a coupon" time="0.2"><failure message="expected 10, got ${run}">at cart.spec.ts:4</failure></testcase></testsuite>`;
    fs.writeFileSync(report, suite(1));
    const failing = await attest(['import', report, '--project', project.key, '--fail-on-failures'], env());
    assert.equal(failing.code, 1, failing.output);
    assert.match(failing.stdout, /failed: cart\.applies a coupon|failed: .*applies a coupon/);
    assert.match(failing.stdout, /1 test failed/);

    const tests = await server.admin.client.call(v1.tests.listTests, { query: { projectId: project.id, limit: 200 } });
    const coupon = tests.items.find((t) => t.name.includes('applies a coupon'));
    assert.ok(coupon);
    await server.admin.client.call(v1.tests.quarantineTest, {
      params: { testId: coupon.id },
      body: { owner: 'qa@example.test', reason: 'coupon service outage' },
    });
    fs.writeFileSync(report, suite(2));
    const quarantined = await attest(['import', report, '--project', project.key, '--fail-on-failures'], env());
    assert.equal(quarantined.code, 0, quarantined.output);
    assert.match(quarantined.stdout, /quarantined \(not counted\): .*applies a coupon/);
    assert.match(quarantined.stdout, /no test failed \(1 quarantined\)/);
    // Without the option, failures never change the exit status.
    fs.writeFileSync(report, suite(3));
    const plain = await attest(['import', report, '--project', project.key], env());
    assert.equal(plain.code, 0, plain.output);
  });
});
