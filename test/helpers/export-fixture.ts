import { v1 } from '../../src/client/index.ts';
import { sha256 } from './blob-files.ts';
import { createProject } from './factories.ts';
import { randomPng } from './png.ts';
import type { TestServer } from './server.ts';

export interface EvidenceRun {
  projectId: string;
  projectKey: string;
  runId: string;
  /** Every uploaded image's bytes, by SHA-256. */
  uploaded: Map<string, Buffer>;
  screenshots: number;
}

/**
 * A completed, failed run as a reporter leaves it: nested steps with plain and Markdown cells, a
 * failing step with its error, `screenshots` screenshots spread over the steps (one on the run
 * itself), a visual diff on the failing step and a log. Uploaded four at a time.
 */
export async function runWithEvidence(
  server: TestServer,
  screenshots: number,
  options: { projectId?: string; image?: (index: number) => Promise<Buffer> } = {},
): Promise<EvidenceRun> {
  const { projectId } = options;
  const image = options.image ?? ((i: number) => randomPng(24 + (i % 7), 16 + (i % 5)));
  const client = server.admin.client;
  const project = projectId ? await client.call(v1.projects.getProject, { params: { projectId } }) : await createProject(server, 'Export');
  const started = Date.now() - 60_000;
  const at = (ms: number) => new Date(started + ms).toISOString();
  const run = await client.call(v1.runs.createRun, {
    body: {
      projectId: project.id,
      name: 'Checkout: pay by card',
      startedAt: at(0),
      environment: 'staging',
      branch: 'main',
      build: '1.4.2',
      commit: 'abc123',
    },
  });
  await client.call(v1.results.appendResults, {
    params: { testRunId: run.id },
    body: {
      cells: [
        {
          name: 'note',
          mediaType: 'text/markdown',
          text: '**Nightly** run on `staging` <script>alert(1)</script> [docs](javascript:alert(1))',
        },
      ],
      steps: [
        {
          key: 'open',
          title: 'Open the shop',
          status: 'passed',
          startedAt: at(0),
          durationMs: 1200,
          cells: [
            { name: 'expected', text: 'The home page shows' },
            { name: 'actual', text: 'It shows' },
          ],
        },
        { key: 'cart', title: 'Add two items to the cart', status: 'passed', startedAt: at(1300), durationMs: 2500 },
        { key: 'cart-1', parentKey: 'cart', title: 'Add the blue mug', status: 'passed', startedAt: at(1300), durationMs: 1000 },
        { key: 'cart-2', parentKey: 'cart', title: 'Add the red mug', status: 'passed', startedAt: at(2400), durationMs: 1300 },
        {
          key: 'pay',
          title: 'Pay by card & confirm <order>',
          status: 'failed',
          startedAt: at(4000),
          durationMs: 3100,
          error: 'Expected "Thank you" but saw "Card declined"\n  at checkout.spec.ts:42',
          cells: [{ name: 'log', mediaType: 'text/markdown', text: '# Payment\n- card: **4242**\n- answer: `declined`' }],
        },
      ],
    },
  });
  const steps = ['open', 'cart-1', 'cart-2', 'pay'];
  const uploaded = new Map<string, Buffer>();
  const jobs: (() => Promise<unknown>)[] = [];
  for (let i = 0; i < screenshots; i++) {
    jobs.push(async () => {
      const bytes = await image(i);
      uploaded.set(sha256(bytes), bytes);
      const stepKey = i === 0 ? undefined : steps[i % steps.length];
      await client.upload(
        project.id,
        { testRunId: run.id, kind: 'screenshot', name: `screen ${i + 1}.png`, ...(stepKey ? { stepKey } : {}) },
        [{ name: `screen-${i + 1}.png`, bytes, type: 'image/png' }],
      );
    });
  }
  jobs.push(async () => {
    const [baseline, actual, diff] = await Promise.all([image(1000), image(1001), image(1002)]);
    for (const bytes of [baseline, actual, diff]) uploaded.set(sha256(bytes), bytes);
    await client.upload(project.id, { testRunId: run.id, kind: 'visual-diff', name: 'receipt.png', stepKey: 'pay' }, [
      { field: 'baseline', name: 'baseline.png', bytes: baseline, type: 'image/png' },
      { field: 'actual', name: 'actual.png', bytes: actual, type: 'image/png' },
      { field: 'diff', name: 'diff.png', bytes: diff, type: 'image/png' },
    ]);
  });
  jobs.push(() =>
    client.upload(project.id, { testRunId: run.id, kind: 'log', name: 'console.log', stepKey: 'pay' }, [
      { name: 'console.log', bytes: Buffer.from('GET /pay 402\n'), type: 'text/plain' },
    ]),
  );
  let next = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < jobs.length) await jobs[next++]!();
    }),
  );
  await client.call(v1.runs.updateRun, { params: { testRunId: run.id }, body: { status: 'completed', verdict: 'failed' } });
  return { projectId: project.id, projectKey: project.key, runId: run.id, uploaded, screenshots };
}
