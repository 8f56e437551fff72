import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, test } from 'node:test';
import { v1 } from '../../src/client/index.ts';
import { sha256 } from '../helpers/blob-files.ts';
import { builtEntry } from '../helpers/built.ts';
import { attest } from '../helpers/cli.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { type EvidenceRun, runWithEvidence } from '../helpers/export-fixture.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

// SPEC-2.4, EXP-1, EXP-2: `attest export` implements the documented sequence (SPEC-1.4): a completed
// run's results, every screenshot and a manifest, downloaded in parallel and resumable.

const tempDir = () => fs.mkdtempSync(path.join(os.tmpdir(), 'attest-export-'));

interface Manifest {
  run: { id: string };
  files: { results: string; artifacts: string; details: string[] };
  images: {
    path: string;
    imageId: string;
    role: string;
    mediaType: string;
    size: number;
    sha256: string;
    artifact: { id: string };
    step: { id: string; title: string } | null;
  }[];
}
const manifestOf = (dir: string) => JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8')) as Manifest;

/** The `attest export` process, with its JSON progress lines on stderr read one by one. */
function spawnExport(args: string[], env: Record<string, string>) {
  const child = spawn(process.execPath, [builtEntry('cli/main'), 'export', ...args, '--json'], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines = createInterface({ input: child.stderr });
  return { child, lines };
}

for (const dialect of DIALECTS) {
  describe(`attest export (${dialect})`, () => {
    let server: TestServer;
    let big: EvidenceRun;
    let env: Record<string, string>;

    before(async () => {
      server = await startTestServer(dialect);
      big = await runWithEvidence(server, 300);
      env = { ATTEST_URL: server.url, ATTEST_API_KEY: server.admin.key, ATTEST_CONFIG_DIR: tempDir() };
    });
    after(() => server.close());

    test('exports a 300-screenshot run: every image byte-exact, named by its step, mapped in the manifest', async () => {
      const out = tempDir();
      const result = await attest(['export', big.runId, '--out', out, '--json'], env);
      assert.equal(result.code, 0, result.output);
      const summary = JSON.parse(result.stdout) as { runs: { images: number; downloaded: number; reused: number }[] };
      // 300 screenshots and the three images of the visual diff.
      assert.equal(summary.runs[0]?.images, 303);
      assert.equal(summary.runs[0]?.downloaded, 303);

      const manifest = manifestOf(out);
      assert.equal(manifest.images.length, 303);
      const seen = new Set<string>();
      for (const image of manifest.images) {
        const bytes = fs.readFileSync(path.join(out, image.path));
        assert.equal(sha256(bytes), image.sha256, image.path);
        assert.equal(bytes.length, image.size);
        assert.ok(big.uploaded.get(image.sha256)?.equals(bytes), `${image.path} is not an uploaded image`);
        seen.add(image.sha256);
        if (image.step) assert.match(image.path, /^images\/\d+-[a-z0-9-]+\//);
        else assert.match(image.path, /^images\/run\//);
      }
      assert.equal(seen.size, big.uploaded.size, 'every uploaded image is in the export');
      const pay = manifest.images.filter((image) => image.step?.title === 'Pay by card & confirm <order>');
      assert.ok(pay.every((image) => image.path.startsWith('images/5-pay-by-card-confirm-order/')));
      assert.deepEqual(
        pay.filter((image) => image.role !== 'screenshot').map((image) => image.role),
        ['baseline', 'actual', 'diff'],
      );
      // 303 images need more than one details call at the default batch of 100.
      assert.deepEqual(manifest.files.details, [
        'artifact-details.json',
        'artifact-details-2.json',
        'artifact-details-3.json',
        'artifact-details-4.json',
      ]);
    });

    test('the bundle equals the documented sequence answers byte for byte', async () => {
      const out = tempDir();
      assert.equal((await attest(['export', big.runId, '--out', out, '--json'], env)).code, 0);
      const manifest = manifestOf(out);
      const headers = { 'service.api-token': server.admin.key, accept: 'application/json' };
      const get = async (route: string) => Buffer.from(await (await fetch(`${server.url}/api/v1${route}`, { headers })).arrayBuffer());
      assert.ok(fs.readFileSync(path.join(out, 'results.json')).equals(await get(`/testmgmt/testruns/${big.runId}/results`)));
      const listing = await get(`/projects/${big.projectId}/artifact?testRunId=${big.runId}`);
      assert.ok(fs.readFileSync(path.join(out, 'artifacts.json')).equals(listing));
      const ids = (JSON.parse(listing.toString()) as { items: { id: string }[] }).items.map((item) => item.id);
      for (const [index, file] of manifest.files.details.entries()) {
        const batch = ids.slice(index * 100, index * 100 + 100).join(',');
        assert.ok(fs.readFileSync(path.join(out, file)).equals(await get(`/artifact/artifacts?ids=${batch}`)), file);
      }
      for (const image of manifest.images.slice(0, 40)) {
        assert.ok(fs.readFileSync(path.join(out, image.path)).equals(await get(`/images/${image.imageId}`)), image.path);
      }
    });

    test('killed midway, a second export completes without downloading the finished files again', async () => {
      const out = tempDir();
      const first = spawnExport([big.runId, '--out', out, '--concurrency', '1'], env);
      let done = 0;
      for await (const line of first.lines) {
        if (!line.startsWith('{')) continue;
        done = (JSON.parse(line) as { done: number }).done;
        if (done >= 40) {
          first.child.kill('SIGKILL');
          break;
        }
      }
      await new Promise((resolve) => first.child.once('exit', resolve));
      const manifest = manifestOf(out);
      const finished = manifest.images.filter((image) => fs.existsSync(path.join(out, image.path)));
      assert.ok(finished.length >= 40 && finished.length < 303, `${finished.length} images were there when it was killed`);
      const before = new Map(finished.map((image) => [image.path, fs.statSync(path.join(out, image.path)).mtimeMs]));

      const second = await attest(['export', big.runId, '--out', out, '--json'], env);
      assert.equal(second.code, 0, second.output);
      const summary = JSON.parse(second.stdout) as { runs: { downloaded: number; reused: number }[] };
      assert.equal(summary.runs[0]?.reused, finished.length);
      assert.equal(summary.runs[0]?.downloaded, 303 - finished.length);
      for (const [file, mtime] of before) assert.equal(fs.statSync(path.join(out, file)).mtimeMs, mtime, `${file} was written again`);
      for (const image of manifestOf(out).images) assert.equal(sha256(fs.readFileSync(path.join(out, image.path))), image.sha256);
      assert.deepEqual(
        fs.readdirSync(out, { recursive: true }).filter((name) => String(name).endsWith('.part')),
        [],
        'no partial file is left',
      );
    });

    test('a damaged file is downloaded again; a run that is not completed is refused with the problem', async () => {
      const out = tempDir();
      assert.equal((await attest(['export', big.runId, '--out', out, '--json'], env)).code, 0);
      const victim = manifestOf(out).images[7]!;
      const file = path.join(out, victim.path);
      const bytes = fs.readFileSync(file);
      bytes[bytes.length - 1] = (bytes[bytes.length - 1] ?? 0) ^ 0xff;
      fs.writeFileSync(file, bytes);
      const again = await attest(['export', big.runId, '--out', out, '--json'], env);
      assert.equal((JSON.parse(again.stdout) as { runs: { downloaded: number }[] }).runs[0]?.downloaded, 1);
      assert.equal(sha256(fs.readFileSync(file)), victim.sha256);

      const running = await server.admin.client.call(v1.runs.createRun, {
        body: { projectId: big.projectId, name: 'still running' },
      });
      const refused = await attest(['export', running.id, '--out', tempDir()], env);
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /RUN_NOT_COMPLETED/);
    });

    test('--project with --since exports each completed run into its own folder', async () => {
      const out = tempDir();
      const result = await attest(['export', '--project', big.projectKey, '--since', '2000-01-01', '--out', out, '--json'], env);
      assert.equal(result.code, 0, result.output);
      const runs = (JSON.parse(result.stdout) as { runs: { runId: string; images: number }[] }).runs;
      assert.deepEqual(
        runs.map((run) => run.runId),
        [big.runId],
      );
      assert.ok(fs.existsSync(path.join(out, big.runId, 'manifest.json')));
      const none = await attest(['export', '--project', big.projectKey, '--since', '2999-01-01', '--out', out], env);
      assert.equal(none.code, 1);
      assert.match(none.stderr, /no completed run/);
    });

    test('--job exports each completed run of the job and leaves the others', async () => {
      const admin = server.admin.client;
      const definition = await admin.call(v1.tests.createTest, {
        body: { projectId: big.projectId, name: 'Smoke', steps: [{ action: 'open', expected: 'opens' }] },
      });
      const second = await admin.call(v1.tests.createTest, {
        body: { projectId: big.projectId, name: 'Smoke 2', steps: [{ action: 'open', expected: 'opens' }] },
      });
      const job = await admin.call(v1.jobs.createJob, { body: { projectId: big.projectId, testIds: [definition.id, second.id] } });
      const runs = await admin.call(v1.runs.listRuns, { query: { projectId: big.projectId, jobId: job.id } });
      assert.equal(runs.items.length, 2);
      const [done, left] = runs.items;
      await admin.call(v1.runs.updateRun, { params: { testRunId: done!.id }, body: { status: 'running' } });
      await admin.call(v1.runs.updateRun, { params: { testRunId: done!.id }, body: { status: 'completed', verdict: 'passed' } });
      const out = tempDir();
      const result = await attest(['export', '--job', job.id, '--out', out, '--json'], env);
      assert.equal(result.code, 0, result.output);
      assert.deepEqual(
        (JSON.parse(result.stdout) as { runs: { runId: string }[] }).runs.map((run) => run.runId),
        [done!.id],
      );
      assert.ok(fs.existsSync(path.join(out, done!.id, 'results.json')));
      assert.equal(fs.existsSync(path.join(out, left!.id)), false);
    });
  });
}
