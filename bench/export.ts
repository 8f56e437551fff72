import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { Api, type Attest, tempDir } from './attest.ts';
import { png, type Settings } from './figures.ts';
import { LOAD_CPU, median, pinned } from './lib.ts';
import { type Figure, judge } from './report.ts';

// F7 (EXP-1): `attest export` of a completed 300-screenshot run, against a plain parallel
// download of the same images in the same run (bench/parallel-download.mjs), both as processes
// on the load core, interleaved. The bar: the export takes at most 1.5 × the download.

const run = promisify(execFile);
const SCREENSHOTS = 300;
const CONCURRENCY = 8;

async function timed(command: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<number> {
  const [file, argv] = pinned(LOAD_CPU, command, args);
  const started = performance.now();
  await run(file, argv, { env: { ...process.env, ...env }, maxBuffer: 64 * 1024 * 1024 });
  return (performance.now() - started) / 1000;
}

export async function exportFigure(attest: Attest, settings: Settings): Promise<Figure> {
  const api = new Api(attest.url, attest.key);
  const project = await api.project();
  const created = await api.call<{ id: string }>('POST', '/testmgmt/testruns', { projectId: project.id, name: 'Export: 300 screenshots' });
  const shots = await Promise.all(Array.from({ length: SCREENSHOTS }, () => png(35)));
  let next = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < shots.length) {
        const i = next++;
        await api.upload(project.id, { testRunId: created.id, kind: 'screenshot', name: `shot-${i}.png` }, shots[i] as Buffer, 'image/png');
      }
    }),
  );
  await api.call('PATCH', `/testmgmt/testruns/${created.id}`, { status: 'completed', verdict: 'passed' });
  const listing = await api.call<{ items: { id: string }[] }>('GET', `/projects/${project.id}/artifact?testRunId=${created.id}`);
  const imageIds: string[] = [];
  for (let i = 0; i < listing.items.length; i += 100) {
    const ids = listing.items.slice(i, i + 100).map((item) => item.id);
    const details = await api.call<{ items: { images: { id: string }[] }[] }>('GET', `/artifact/artifacts?ids=${ids.join(',')}`);
    imageIds.push(...details.items.flatMap((item) => item.images.map((image) => image.id)));
  }
  const work = tempDir('attest-bench-export-');
  const idsFile = path.join(work, 'ids.json');
  fs.writeFileSync(idsFile, JSON.stringify(imageIds));

  const exportOnce = () =>
    timed(
      process.execPath,
      [
        'dist/cli/main.js',
        'export',
        created.id,
        '--out',
        fs.mkdtempSync(path.join(work, 'export-')),
        '--concurrency',
        String(CONCURRENCY),
        '--json',
      ],
      { ATTEST_URL: attest.url, ATTEST_API_KEY: attest.key, ATTEST_CONFIG_DIR: work },
    );
  const downloadOnce = () =>
    timed(process.execPath, [
      'bench/parallel-download.mjs',
      attest.url,
      attest.key,
      fs.mkdtempSync(path.join(work, 'plain-')),
      idsFile,
      String(CONCURRENCY),
    ]);
  await exportOnce(); // warm-up: the server's caches, the page cache
  await downloadOnce();
  const exports: number[] = [];
  const downloads: number[] = [];
  for (let i = 0; i < Math.max(3, settings.repetitions * 2); i++) {
    exports.push(SCREENSHOTS / (await exportOnce()));
    downloads.push(SCREENSHOTS / (await downloadOnce()));
  }
  fs.rmSync(work, { recursive: true, force: true });
  return judge({
    id: 'F7',
    title: `attest export of a ${SCREENSHOTS}-screenshot run (35 KB each), whole process`,
    dialect: 'sqlite',
    unit: 'images/s',
    attest: median(exports),
    baseline: median(downloads),
    baselineName: `plain parallel download, ${CONCURRENCY} at once`,
    minRatio: Number((1 / 1.5).toFixed(2)),
    samples: { attest: exports, baseline: downloads },
    notes: `export ${(SCREENSHOTS / median(exports)).toFixed(2)} s, download ${(SCREENSHOTS / median(downloads)).toFixed(2)} s (medians)`,
  });
}
