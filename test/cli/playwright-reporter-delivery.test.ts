import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { v1 } from '../../src/client/index.ts';
import { browserAvailable } from '../helpers/browser.ts';
import { attest } from '../helpers/cli.ts';
import { tempDir } from '../helpers/data-folders.ts';
import { createProject, type ServerWithTester, serverWithTester } from '../helpers/factories.ts';
import { closedPort } from '../helpers/http.ts';
import { PLAYWRIGHT_VISUAL_CONFIG, REPORTER_SOURCE, runPlaywrightFixture, writeBadgeBaseline } from '../helpers/playwright-fixture.ts';

// How the live reporter delivers (packages/playwright-reporter, a real Playwright run of
// test/fixtures/playwright-visual against a real server): with the server down it spools the run
// to disk and the next run sends it (and `attest import` of the spool works too); a refused upload
// (507 quota) is a refusal of that call only, and the rest of the run is still sent; CI variables
// fill branch, commit, build and ciUrl; the launch is closed at the end.

const SUMMARY = /^attest: sent (\d+) runs, (\d+) steps, (\d+) attachments to (\S+) \(job ([^)]+)\)(.*)$/m;

const GITHUB = {
  GITHUB_ACTIONS: 'true',
  GITHUB_SERVER_URL: 'https://github.com',
  GITHUB_REPOSITORY: 'acme/shop',
  GITHUB_RUN_ID: '9912',
  GITHUB_RUN_NUMBER: '451',
  GITHUB_RUN_ATTEMPT: '1',
  GITHUB_REF_NAME: 'feature/badge',
  GITHUB_SHA: '0123456789abcdef0123456789abcdef01234567',
};

/** A TCP forwarder from `port` to the server: the same URL that was dead now reaches it (the server came back). */
async function forward(port: number, target: string): Promise<net.Server> {
  const { port: targetPort } = new URL(target);
  const forwarder = net.createServer((client) => {
    const upstream = net.connect(Number(targetPort), '127.0.0.1');
    client.pipe(upstream).pipe(client);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  await new Promise<void>((resolve) => forwarder.listen(port, '127.0.0.1', resolve));
  return forwarder;
}

describe('Playwright live reporter: spool, refusals, CI variables, closing the launch [sqlite]', { skip: !browserAvailable() }, () => {
  let { server, project, tester } = {} as ServerWithTester;
  const spoolDir = tempDir('attest-spool-test-');

  before(async () => {
    ({ server, project, tester } = await serverWithTester('sqlite', 'Delivery'));
  });
  after(() => server?.close());

  let spooledFile: string;
  let port: number;
  let deadUrl: string;
  /** A run of the visual fixture whose reporter sends to deadUrl and spools into spoolDir, with `env` on top. */
  const runToDeadUrl = (env: Record<string, string>) =>
    runPlaywrightFixture(
      {
        ATTEST_URL: deadUrl,
        ATTEST_API_KEY: tester.key,
        ATTEST_PROJECT: project.key,
        ATTEST_PW_REPORTER: REPORTER_SOURCE,
        ATTEST_SPOOL_DIR: spoolDir,
        ...env,
      },
      { config: PLAYWRIGHT_VISUAL_CONFIG, prepare: writeBadgeBaseline },
    );

  test('with the server down, the run is spooled to disk as a Playwright report with its attachments', async () => {
    port = await closedPort();
    deadUrl = `http://127.0.0.1:${port}`;
    const run = await runToDeadUrl({ ATTEST_FLUSH_TIMEOUT_MS: '5000' });
    assert.equal(run.code, 1, run.output);
    const files = fs.readdirSync(spoolDir);
    assert.equal(files.length, 1, run.stderr);
    spooledFile = path.join(spoolDir, files[0]!);
    assert.match(
      run.stderr,
      new RegExp(`spooled 3 runs to ${spooledFile.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}; the next run sends them`),
    );
    const report = JSON.parse(fs.readFileSync(spooledFile, 'utf8'));
    assert.deepEqual(report.config.metadata.attest, { url: deadUrl, project: project.key, jobName: 'Visual checks', labels: {} });
    assert.ok(!JSON.stringify(report).includes(tester.key), 'the API key is never written to the spool');
  });

  test('`attest import` of the spool folder imports the spooled run, visual diff included', async () => {
    const copy = tempDir('attest-spool-copy-');
    fs.copyFileSync(spooledFile, path.join(copy, path.basename(spooledFile)));
    const result = await attest(['import', copy, '--project', project.key, '--json'], {
      ATTEST_URL: server.url,
      ATTEST_API_KEY: tester.key,
      ATTEST_CONFIG_DIR: tempDir('attest-config-'),
      // `attest import` in a CI job fills the build's labels and its link, as the reporter does.
      ...GITHUB,
    });
    assert.equal(result.code, 0, result.output);
    const record = JSON.parse(result.stdout);
    assert.equal(record.status, 'completed', result.output);
    assert.equal(record.counts.runs, 3);
    const job = await tester.client.call(v1.jobs.getJob, { params: { jobId: record.jobId } });
    assert.deepEqual(
      { branch: job.branch, commit: job.commit, ciUrl: job.ciUrl },
      { branch: 'feature/badge', commit: GITHUB.GITHUB_SHA, ciUrl: 'https://github.com/acme/shop/actions/runs/9912' },
    );
    assert.equal(record.counts.attachmentsMissing, 0);
    const runs = (await tester.client.call(v1.runs.listRuns, { query: { projectId: project.id, jobId: record.jobId } })).items;
    const badge = runs.find((r) => r.name === 'the badge matches its baseline')!;
    const artifacts = await tester.client.call(v1.artifacts.listArtifacts, {
      params: { projectId: project.id },
      query: { testRunId: badge.id },
    });
    assert.deepEqual(artifacts.items.map((a) => `${a.kind} ${a.name}`).sort(), ['log error-context.md', 'visual-diff badge.png']);
  });

  test('the next run against the server sends the spool, fills the CI labels and ciUrl, and closes its launch', async () => {
    // The server is back at the URL the spooled run could not reach.
    const forwarder = await forward(port, server.url);
    after(() => {
      forwarder.close();
    });
    const run = await runToDeadUrl(GITHUB);
    const summary = SUMMARY.exec(run.stderr);
    assert.ok(summary, run.output);
    assert.equal(summary[6], `; sent 1 spooled reports from ${spoolDir}`, run.stderr);
    assert.deepEqual(fs.readdirSync(spoolDir), [], 'a sent report leaves the spool');

    const jobs = (await tester.client.call(v1.jobs.listJobs, { query: { projectId: project.id } })).items;
    const spooled = jobs.filter((j) => j.name === 'Visual checks (spooled)');
    assert.equal(spooled.length, 1);
    assert.equal(spooled[0]!.progress.total, 3);

    const job = await tester.client.call(v1.jobs.getJob, { params: { jobId: summary[5]! } });
    assert.deepEqual(
      { branch: job.branch, commit: job.commit, build: job.build, ciUrl: job.ciUrl },
      { branch: 'feature/badge', commit: GITHUB.GITHUB_SHA, build: '451', ciUrl: 'https://github.com/acme/shop/actions/runs/9912' },
    );
    // The reporter closed its launch at the end: completed, not waiting for the idle timeout.
    assert.equal(job.status, 'completed');
    assert.notEqual(job.closedAt, null);
    const runs = (await tester.client.call(v1.runs.listRuns, { query: { projectId: project.id, jobId: job.id } })).items;
    assert.equal(runs.length, 3);
    for (const r of runs) assert.equal(r.ciUrl, 'https://github.com/acme/shop/actions/runs/9912');
  });

  test('a refused upload (507, the project quota) refuses that call only: every run is still sent and nothing is spooled', async () => {
    const full = await createProject(server, 'Full');
    await server.admin.client.call(v1.projects.addMember, { params: { projectId: full.id, email: tester.email } });
    await server.admin.client.call(v1.projects.updateProject, { params: { projectId: full.id }, body: { quotaBytes: 1 } });
    const refusedSpool = tempDir('attest-spool-refused-');
    const run = await runPlaywrightFixture(
      {
        ATTEST_URL: server.url,
        ATTEST_API_KEY: tester.key,
        ATTEST_PROJECT: full.key,
        ATTEST_PW_REPORTER: REPORTER_SOURCE,
        ATTEST_SPOOL_DIR: refusedSpool,
      },
      { config: PLAYWRIGHT_VISUAL_CONFIG, prepare: writeBadgeBaseline },
    );
    const summary = SUMMARY.exec(run.stderr);
    assert.ok(summary, run.output);
    // Two uploads (the visual diff and the error context), both refused; the runs and steps all went.
    assert.deepEqual(summary.slice(1, 4), ['3', '3', '0']);
    assert.match(summary[6]!, /^; 2 calls failed \(2 refused\)$/, run.stderr);
    assert.match(run.stderr, /QUOTA_EXCEEDED/);
    assert.deepEqual(fs.readdirSync(refusedSpool), [], 'a refusal is not an outage: nothing to send again');
    const runs = (await tester.client.call(v1.runs.listRuns, { query: { projectId: full.id, jobId: summary[5]! } })).items;
    assert.deepEqual(runs.map((r) => `${r.status} ${r.verdict}`).sort(), ['completed failed', 'completed passed', 'completed skipped']);
  });
});
