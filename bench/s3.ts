import { startS3 } from '../test/helpers/s3.ts';
import { Api, type Attest, startAttest } from './attest.ts';
import { closedLoop, interleaved, png, readFigure, type Settings } from './figures.ts';
import { median } from './lib.ts';
import { type Figure, judge } from './report.ts';

// F9 (SCALE-1): the S3 blob store beside the disk store. The same server (SQLite records) is
// started twice, blobs in its data folder and blobs in a bucket of s3rver, the S3-compatible test
// double the tests use (a Node process with a file backend, on this machine; a real store is
// another machine with its own latency, so these ratios say what Attest adds around the store's
// calls, not what a production bucket costs). Each pair is measured A/B interleaved.

/** One server with blobs on disk and one with blobs in a bucket, on the same settings. */
async function pair(temp: (prefix: string) => string, s3Env: Record<string, string>, env: Record<string, string> = {}) {
  const disk = await startAttest({ dataDir: temp('attest-bench-disk-'), env });
  const bucket = await startAttest({ dataDir: temp('attest-bench-s3-'), env: { ...env, ...s3Env } });
  return { disk, bucket, stop: () => Promise.all([disk.stop(), bucket.stop()]) };
}

/** A project, a run and one 300 KB screenshot; the URL of its image. */
async function imageOf(attest: Attest, bytes: Buffer): Promise<string> {
  const api = new Api(attest.url, attest.key);
  const project = await api.project();
  const run = await api.call<{ id: string }>('POST', '/testmgmt/testruns', { projectId: project.id, name: 'image read' });
  const artifact = await api.upload(project.id, { testRunId: run.id, kind: 'screenshot', name: 'checkout.png' }, bytes, 'image/png');
  return `${attest.url}/api/v1/images/${(artifact.images as { id: string }[])[0]?.id}`;
}

/** A 300 KB screenshot read from the bucket's server against the same read from the disk's, interleaved. */
async function imageFigure(settings: Settings, servers: { disk: Attest; bucket: Attest }, title: string): Promise<Figure> {
  const shot = await png(300);
  const read = async (attest: Attest) => ({
    url: await imageOf(attest, shot),
    headers: { 'service.api-token': attest.key },
    pid: attest.pid,
  });
  const reads = await interleaved(settings, await read(servers.bucket), await read(servers.disk));
  return readFigure('F9', title, 'sqlite', undefined, 'the same read, disk store', reads);
}

/** F9: 35 KB uploads at 4 clients, a hot (kept in memory) and a cold (read from the store) 300 KB image read. */
export async function s3Figures(settings: Settings, temp: (prefix: string) => string): Promise<Figure[]> {
  const s3 = await startS3();
  const figures: Figure[] = [];
  try {
    settings.step('F9 S3 store: 35 KB uploads, 4 clients');
    const hot = await pair(temp, s3.env(await s3.createBucket(), 'attest'));
    try {
      const images = await Promise.all(Array.from({ length: 64 }, () => png(35)));
      const uploadsTo = async (attest: Attest) => {
        const api = new Api(attest.url, attest.key);
        const project = await api.project();
        const run = await api.call<{ id: string }>('POST', '/testmgmt/testruns', { projectId: project.id, name: 'uploads' });
        return (client: number, n: number) =>
          api.upload(
            project.id,
            { testRunId: run.id, kind: 'screenshot', name: `s-${client}-${n}.png` },
            images[(n * 4 + client) % images.length] as Buffer,
            'image/png',
          );
      };
      const toBucket: number[] = [];
      const toDisk: number[] = [];
      await closedLoop(4, 2, await uploadsTo(hot.bucket));
      await closedLoop(4, 2, await uploadsTo(hot.disk));
      for (let i = 0; i < settings.repetitions; i++) {
        toBucket.push(await closedLoop(4, settings.seconds, await uploadsTo(hot.bucket)));
        toDisk.push(await closedLoop(4, settings.seconds, await uploadsTo(hot.disk)));
      }
      figures.push(
        judge({
          id: 'F9',
          title: '35 KB screenshot uploads, 4 clients, S3 store',
          dialect: 'sqlite',
          unit: 'uploads/s',
          attest: median(toBucket),
          baseline: median(toDisk),
          baselineName: 'the same uploads, disk store',
          samples: { attest: toBucket, baseline: toDisk },
        }),
      );

      settings.step('F9 S3 store: hot image');
      figures.push(await imageFigure(settings, hot, 'hot 300 KB image (image cache), S3 store'));
    } finally {
      await hot.stop();
    }

    settings.step('F9 S3 store: cold image');
    // No image cache: every read goes to the store (a GetObject, or a file read).
    const cold = await pair(temp, s3.env(await s3.createBucket(), 'attest'), { ATTEST_IMAGE_CACHE_MB: '0' });
    try {
      figures.push(await imageFigure(settings, cold, 'cold 300 KB image (no image cache), S3 store'));
    } finally {
      await cold.stop();
    }
  } finally {
    await s3.close();
  }
  return figures;
}
