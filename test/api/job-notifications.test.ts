import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import sharp from 'sharp';
import { v1 } from '../../src/client/index.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createProject, unique } from '../helpers/factories.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';

const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

// What a job's notification says (HOOK-13) and the screenshot links it carries (HOOK-14): a pull
// request's job.completed compares with the default branch's latest job, counts tests with their
// retries folded, names its build and CI page, and each screenshot opens without a session until
// its link expires, for that image only.

const PUBLIC_URL = 'https://attest.example.test';
const DAY_MS = 86_400_000;

interface JobCompleted {
  job: {
    id: string;
    branch: string | null;
    build: string | null;
    ciUrl: string | null;
    tests: Record<string, number>;
    runs: Record<string, number>;
  };
  failures: { name: string; runId: string; screenshotUrl: string | null }[];
  comparison: { baseJobId: string | null; baseBranch: string | null; newFailures: { name: string }[]; fixed: { name: string }[] };
}

for (const dialect of DIALECTS) {
  describe(`[${dialect}] job notifications against the default branch (HOOK-13, HOOK-14)`, () => {
    let server: TestServer;
    let receiver: WebhookReceiver;
    let projectId = '';
    let mainJobId = '';
    let completed: JobCompleted;
    let screenshotId = '';

    /** A job of `runs` on `branch`, completed. */
    async function job(branch: string, runs: { name: string; verdict?: 'passed' | 'failed' | 'skipped'; attempt?: number }[], labels = {}) {
      const client = server.admin.client;
      const created = await client.call(v1.jobs.createJob, { body: { projectId, testIds: [], branch, name: unique('ci-'), ...labels } });
      const made = [];
      for (const run of runs) {
        made.push(
          await client.call(v1.runs.createRun, {
            body: { projectId, jobId: created.id, branch, name: run.name, testName: run.name, verdict: run.verdict, attempt: run.attempt },
          }),
        );
      }
      return { id: created.id, runs: made };
    }

    before(async () => {
      server = await startTestServer(dialect, { ATTEST_WEBHOOK_ALLOW_PRIVATE: 'true', ATTEST_PUBLIC_URL: PUBLIC_URL });
      receiver = await startWebhookReceiver();
      projectId = (await createProject(server, 'Notified shop')).id;
      const hook = await server.admin.client.call(v1.webhooks.createWebhook, {
        params: { projectId },
        body: { name: 'ci', url: receiver.url, events: ['job.completed'] },
      });
      receiver.secret = hook.secret;
      const green = ['checkout', 'login', 'search'].map((name) => ({ name, verdict: 'passed' as const }));
      // Two jobs on main make it the default branch; the second is the one a pull request compares with.
      for (const _ of [1, 2]) {
        const main = await job('main', green);
        await server.admin.client.call(v1.jobs.completeJob, { params: { jobId: main.id } });
        mainJobId = main.id;
        server.clock.advance(60_000);
      }
      // The pull request: checkout fails with a screenshot (attached while it runs), login is flaky,
      // search passes, wip is skipped.
      const pr = await job(
        'feature/pay',
        [
          { name: 'checkout' },
          { name: 'login', verdict: 'failed' },
          { name: 'login', verdict: 'passed', attempt: 1 },
          { name: 'search', verdict: 'passed' },
          { name: 'wip', verdict: 'skipped' },
        ],
        { build: 'pr-17.3', ciUrl: 'https://ci.example.test/builds/3' },
      );
      const png = await sharp({ create: { width: 40, height: 30, channels: 3, background: { r: 200, g: 30, b: 60 } } })
        .png()
        .toBuffer();
      const form = new FormData();
      form.append('metadata', JSON.stringify({ testRunId: pr.runs[0]?.id, kind: 'screenshot', name: 'checkout.png' }));
      form.append('file', new Blob([png], { type: 'image/png' }), 'checkout.png');
      const uploaded = await fetch(`${server.url}/api/v1/projects/${projectId}/artifact`, {
        method: 'POST',
        headers: { 'service.api-token': server.admin.key, accept: 'application/json' },
        body: form,
      });
      assert.equal(uploaded.status, 201, await uploaded.clone().text());
      screenshotId = ((await uploaded.json()) as { images: { id: string }[] }).images[0]?.id as string;
      await server.admin.client.call(v1.runs.updateRun, {
        params: { testRunId: pr.runs[0]?.id as string },
        body: { status: 'completed', verdict: 'failed' },
      });
      await server.admin.client.call(v1.jobs.completeJob, { params: { jobId: pr.id } });
      await server.app.attest.background.enqueue({ kind: 'webhook-dispatch', key: unique('test-dispatch:') });
      completed = await waitFor(
        () => {
          const ours = receiver.received
            .map((r) => r.verified as { type: string; data: JobCompleted } | undefined)
            .find((event) => event?.type === 'job.completed' && event.data.job.id === pr.id);
          return ours?.data;
        },
        { message: "the pull request job's job.completed" },
      );
    });
    after(async () => {
      await receiver?.close();
      await server?.close();
    });

    test("a pull request's job.completed compares with the default branch's latest job, counts tests and names its build and CI page", () => {
      assert.equal(completed.comparison.baseJobId, mainJobId);
      assert.equal(completed.comparison.baseBranch, 'main');
      assert.deepEqual(
        completed.comparison.newFailures.map((t) => t.name),
        ['checkout'],
      );
      assert.deepEqual(completed.job.tests, { total: 4, passed: 1, failed: 1, broken: 0, skipped: 1, flaky: 1, unfinished: 0 });
      // The runs stay counted each, the retry too.
      assert.equal(completed.job.runs.total, 5);
      assert.equal(completed.job.branch, 'feature/pay');
      assert.equal(completed.job.build, 'pr-17.3');
      assert.equal(completed.job.ciUrl, 'https://ci.example.test/builds/3');
      assert.deepEqual(
        completed.failures.map((f) => f.name),
        ['checkout'],
      );
    });

    test('its screenshot link opens without a session, for that image only, and answers 401 once expired', async () => {
      const link = completed.failures[0]?.screenshotUrl ?? '';
      const signed = new RegExp(`^${PUBLIC_URL}/api/v1/images/${screenshotId}/signed\\?thumbnail=true&expires=\\d+&signature=[\\w-]{43}$`);
      assert.match(link, signed);
      const local = (url: string) => url.replace(PUBLIC_URL, server.url);
      const opened = await fetch(local(link));
      assert.equal(opened.status, 200);
      assert.equal(opened.headers.get('content-type'), 'image/webp');
      assert.equal(opened.headers.get('cache-control'), 'no-store');
      const thumbnail = await sharp(Buffer.from(await opened.arrayBuffer())).metadata();
      assert.deepEqual([thumbnail.format, thumbnail.width], ['webp', 40]);

      // Bound to what it names: another image, the original instead of the thumbnail, a later expiry, another signature.
      const query = new URL(link).searchParams;
      const expires = Number(query.get('expires'));
      const signature = query.get('signature') as string;
      const other = crypto.randomUUID();
      const forged = [
        link.replace(screenshotId, other),
        link.replace('thumbnail=true&', ''),
        link.replace(`expires=${expires}`, `expires=${expires + 86_400}`),
        link.replace(signature, `${signature.slice(0, -1)}${signature.endsWith('A') ? 'B' : 'A'}`),
        // Another spelling of the same bytes: the last character's two bits that no decoder reads, set.
        link.replace(signature, `${signature.slice(0, -1)}${BASE64URL[BASE64URL.indexOf(signature.slice(-1)) ^ 1]}`),
      ];
      for (const url of forged) {
        const refused = await fetch(local(url));
        assert.equal(refused.status, 401, url);
        assert.match(refused.headers.get('content-type') ?? '', /^application\/problem\+json/);
        assert.equal(((await refused.json()) as { code: string }).code, 'UNAUTHENTICATED');
      }
      // A malformed link is a 400 naming the field.
      const malformed = await fetch(`${server.url}/api/v1/images/${screenshotId}/signed?expires=soon&signature=${signature}`);
      assert.equal(malformed.status, 400);

      // A day later (ATTEST_IMAGE_LINK_TTL_SECONDS, default 86400) the same link is refused.
      server.clock.advance(DAY_MS + 1_000);
      const expired = await fetch(local(link));
      assert.equal(expired.status, 401);
      assert.equal(((await expired.json()) as { code: string }).code, 'UNAUTHENTICATED');
    });
  });
}
