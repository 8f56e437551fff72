import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { v1 } from '../../src/client/index.ts';
import { sha256 } from '../helpers/blob-files.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createProject, createUser, type TestUser } from '../helpers/factories.ts';
import { randomPng } from '../helpers/png.ts';
import { completeRun, startRun } from '../helpers/records.ts';
import { blobEnv } from '../helpers/s3.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { upload } from '../helpers/uploads.ts';

// SPEC-1.4: "The documented screenshot retrieval sequence must work exactly as written": (1)
// endpoint 2 for the text; (2) endpoint 3 for the run's artifacts; (3) endpoint 4 with the artifact
// ids, reading the image ids; (4) endpoint 5 once per image id. The client below is a plain fetch
// that sends what existing clients send on every call (SPEC-1.2, SPEC-1.3), the image call included.

interface Step {
  id: string;
  key: string | null;
  parentId: string | null;
  title: string;
  cells: { name: string; text: string }[];
}
interface ArtifactMeta {
  id: string;
  stepId: string | null;
  kind: string;
  name: string;
  size: number;
  contentType: string;
  createdAt: string;
}
interface ArtifactDetail extends ArtifactMeta {
  images: { id: string; role: string; contentType: string; width: number; height: number; size: number; sha256: string }[];
}

/** An existing client: raw fetch, JSON headers and the key headers on every call, nothing else. */
function existingClient(baseUrl: string, credentials: Record<string, string>) {
  const headers = { 'Content-Type': 'application/json', Accept: 'application/json', ...credentials };
  const calls: string[] = [];
  return {
    calls,
    async json<T>(path: string): Promise<T> {
      calls.push(path);
      const response = await fetch(`${baseUrl}/api/v1${path}`, { method: 'GET', headers });
      assert.equal(response.status, 200, `${path}: ${await response.clone().text()}`);
      assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
      return (await response.json()) as T;
    },
    async bytes(path: string): Promise<{ type: string; body: Buffer }> {
      calls.push(path);
      const response = await fetch(`${baseUrl}/api/v1${path}`, { method: 'GET', headers });
      assert.equal(response.status, 200, path);
      return { type: response.headers.get('content-type') ?? '', body: Buffer.from(await response.arrayBuffer()) };
    },
  };
}

for (const dialect of DIALECTS) {
  describe(`[${dialect}] the documented screenshot retrieval sequence (SPEC-1.4)`, () => {
    let server: TestServer;
    let projectId: string;
    let runId: string;
    let reader: TestUser;
    /** What the reporter sent: image sha256 → the step key (or "run") and role it was attached with. */
    const sent = new Map<string, { step: string; role: string }>();
    const stepTitles: Record<string, string> = { open: 'Open the shop', login: 'Log in', pay: 'Pay', receipt: 'Check the receipt' };

    before(async () => {
      // On PostgreSQL the blobs go to an S3-compatible bucket (SCALE-1); on SQLite to the data folder.
      server = await startTestServer(dialect, await blobEnv(dialect));
      projectId = (await createProject(server, 'Shop')).id;
      const reporter = await createUser(server, ['tester'], { projects: [projectId] });
      reader = await createUser(server, ['viewer'], { projects: [projectId] });
      runId = (await startRun(reporter.client, projectId, 'checkout on Pixel 8')).id;
      const appended = await reporter.client.call(v1.results.appendResults, {
        params: { testRunId: runId },
        body: {
          steps: [
            { key: 'open', title: stepTitles.open as string, status: 'passed' },
            {
              key: 'login',
              title: stepTitles.login as string,
              status: 'passed',
              cells: [{ name: 'note', text: 'as alice', mediaType: 'text/plain' }],
            },
            { key: 'pay', title: stepTitles.pay as string, status: 'failed', error: 'total differs' },
            { key: 'receipt', parentKey: 'pay', title: stepTitles.receipt as string, status: 'failed' },
          ],
          cells: [{ name: 'environment', text: 'staging', mediaType: 'text/plain' }],
        },
      });
      assert.equal(appended.steps.length, 4);

      const shot = async (step: string | undefined, name: string) => {
        const png = await randomPng(24, 16);
        const res = await upload(
          server.url,
          reporter.key,
          projectId,
          { testRunId: runId, kind: 'screenshot', name, ...(step ? { stepKey: step } : {}) },
          { file: { bytes: png } },
        );
        assert.equal(res.status, 201, JSON.stringify(res.body));
        sent.set(sha256(png), { step: step ?? 'run', role: 'screenshot' });
      };
      await shot('open', 'home.png');
      await shot('login', 'form.png');
      await shot('login', 'welcome.png');
      await shot('receipt', 'receipt.png');
      await shot(undefined, 'final-state.png');
      const [baseline, actual, diff] = [await randomPng(), await randomPng(), await randomPng()];
      const visual = await upload(
        server.url,
        reporter.key,
        projectId,
        { testRunId: runId, kind: 'visual-diff', name: 'total', stepKey: 'pay' },
        {
          baseline: { bytes: baseline },
          actual: { bytes: actual },
          diff: { bytes: diff },
        },
      );
      assert.equal(visual.status, 201);
      sent.set(sha256(baseline), { step: 'pay', role: 'baseline' });
      sent.set(sha256(actual), { step: 'pay', role: 'actual' });
      sent.set(sha256(diff), { step: 'pay', role: 'diff' });
      const log = await upload(
        server.url,
        reporter.key,
        projectId,
        { testRunId: runId, kind: 'log', name: 'logcat.txt' },
        { file: { bytes: Buffer.from('I/Activity: resumed\n') } },
      );
      assert.equal(log.status, 201);
      await completeRun(reporter.client, runId, 'failed');
    });
    after(() => server.close());

    async function runSequence(client: ReturnType<typeof existingClient>) {
      // (1) Endpoint 2: the text of the run.
      const results = await client.json<{ steps: Step[]; cells: { name: string; text: string }[] }>(`/testmgmt/testruns/${runId}/results`);
      // (2) Endpoint 3: the run's artifacts, in this project.
      const listing = await client.json<{ items: ArtifactMeta[]; nextCursor: string | null }>(
        `/projects/${projectId}/artifact?testRunId=${runId}`,
      );
      // (3) Endpoint 4: their details, with the image ids.
      const details = await client.json<{ items: ArtifactDetail[]; missing: string[] }>(
        `/artifact/artifacts?ids=${listing.items.map((a) => a.id).join(',')}`,
      );
      // (4) Endpoint 5: once per image id.
      const screenshots: { step: string; role: string; artifact: string; bytes: Buffer; type: string }[] = [];
      const stepById = new Map(results.steps.map((s) => [s.id, s]));
      for (const artifact of details.items) {
        for (const image of artifact.images) {
          const { type, body } = await client.bytes(`/images/${image.id}`);
          const step = artifact.stepId === null ? undefined : stepById.get(artifact.stepId);
          screenshots.push({ step: step ? (step.key as string) : 'run', role: image.role, artifact: artifact.name, bytes: body, type });
        }
      }
      return { results, listing, details, screenshots };
    }

    test('maps every screenshot to the step that produced it, with exactly the four documented calls per kind', async () => {
      const client = existingClient(server.url, { 'service.api-token': reader.key });
      const { results, listing, details, screenshots } = await runSequence(client);

      assert.deepEqual(
        results.steps.map((s) => s.title),
        Object.values(stepTitles),
      );
      assert.deepEqual(
        results.cells.map((c) => c.text),
        ['staging'],
      );
      assert.equal(listing.nextCursor, null, 'one call lists the whole run');
      assert.equal(listing.items.length, 7);
      for (const item of listing.items) {
        for (const field of ['id', 'stepId', 'kind', 'name', 'size', 'contentType', 'createdAt'] as const)
          assert.ok(field in item, `${field} in endpoint 3`);
      }
      assert.deepEqual(details.missing, []);
      assert.equal(details.items.length, 7);

      // Every image downloaded, byte-identical, with its real type, mapped back to its step and role.
      assert.equal(screenshots.length, sent.size);
      for (const shot of screenshots) {
        assert.equal(shot.type, 'image/png');
        const expected = sent.get(sha256(shot.bytes));
        assert.ok(expected, `an image the reporter did not send (${shot.artifact})`);
        assert.deepEqual({ step: shot.step, role: shot.role }, expected, shot.artifact);
      }
      const byStep = (key: string) =>
        screenshots
          .filter((s) => s.step === key)
          .map((s) => `${s.artifact}:${s.role}`)
          .sort();
      assert.deepEqual(byStep('login'), ['form.png:screenshot', 'welcome.png:screenshot']);
      assert.deepEqual(byStep('pay'), ['total:actual', 'total:baseline', 'total:diff']);
      assert.deepEqual(byStep('receipt'), ['receipt.png:screenshot']);
      assert.deepEqual(byStep('run'), ['final-state.png:screenshot']);

      // The cheapest way: one call each for steps 1–3, then one per image.
      const imageIds = new Set(details.items.flatMap((a) => a.images.map((i) => i.id)));
      assert.equal(client.calls.length, 3 + imageIds.size);
    });

    test('works the same with an old-format key and its service.user header', async () => {
      const legacyUser = await createUser(server, ['viewer'], { projects: [projectId] });
      const legacy = await server.admin.client.call(v1.users.createApiKey, {
        params: { email: legacyUser.email },
        body: { name: 'old client', format: 'legacy' },
      });
      const client = existingClient(server.url, { 'service.api-token': legacy.key, 'service.user': legacyUser.email.toUpperCase() });
      const { screenshots } = await runSequence(client);
      assert.equal(screenshots.length, sent.size);
    });
  });
}
