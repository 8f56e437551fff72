import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import sharp from 'sharp';
import { v1 } from '../../src/client/index.ts';
import { generateKey } from '../../src/server/security/api-key.ts';
import { blobFile, sha256OfFile } from '../helpers/blob-files.ts';
import { pixelFloodPng, pngClaiming, randomPng } from '../helpers/png.ts';
import { startRun } from '../helpers/records.ts';
import { createStorage, residentBytes, type SpawnedServer, spawnServer, watchResident } from '../helpers/spawned-server.ts';
import { filesUnder, upload } from '../helpers/uploads.ts';
import { waitFor } from '../helpers/wait.ts';

// The memory a hostile or merely large upload costs the real server (a spawned process, measured
// by its RSS from /proc): streaming keeps a 200 MB body off the heap (FILE-8), and a pixel flood is
// refused from its header before anything decodes it (FILE-2), and a burst of thumbnail requests for
// images at the pixel limit decodes a bounded number at once (FILE-3).

const MB = 1024 * 1024;
const mb = (n: number) => (n / MB).toFixed(1);

const tempDirs: string[] = [];
after(() => {
  for (const dir of tempDirs) fs.rmSync(dir, { recursive: true, force: true });
});

/**
 * Waits until the RSS of `pid` holds still: five samples in a row, 50 ms apart, within 1 MB of one
 * another. There is no event that says a heap has been collected or that work behind an answer has
 * ended; a steady RSS is the condition itself, and on a loaded machine it is simply waited for longer.
 */
async function steadyResident(pid: number): Promise<number> {
  const window: number[] = [];
  return waitFor(
    async () => {
      window.push(await residentBytes(pid));
      if (window.length > 5) window.shift();
      return window.length === 5 && Math.max(...window) - Math.min(...window) < MB ? (window.at(-1) as number) : 0;
    },
    { timeoutMs: 30_000, intervalMs: 50, message: () => `a steady RSS (last samples ${window.map(mb).join(', ')} MB)` },
  );
}

/** A spawned server on SQLite with a project and a running run, warmed up by one small screenshot upload. */
async function warmServer(
  label: string,
  env: Record<string, string> = {},
): Promise<{ server: SpawnedServer; dataDir: string; key: string; projectId: string; runId: string }> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `attest-${label}-`));
  tempDirs.push(dataDir);
  const storage = await createStorage('sqlite', dataDir, generateKey('standard'));
  const server = await spawnServer(storage, env);
  try {
    const project = await server.admin.call(v1.projects.createProject, {
      body: { key: `M${randomBytes(3).toString('hex').toUpperCase()}`, name: 'Memory' },
    });
    const runId = (await startRun(server.admin, project.id)).id;
    // Warm-up: load every module of the upload path before the baseline is taken.
    const warm = await upload(
      server.url,
      storage.adminKey,
      project.id,
      { testRunId: runId, kind: 'screenshot', name: 'w.png' },
      { file: { bytes: await randomPng() } },
    );
    assert.equal(warm.status, 201);
    // The warm-up's garbage is collected before the baseline: wait until the RSS stops moving.
    await steadyResident(server.pid);
    return { server, dataDir, key: storage.adminKey, projectId: project.id, runId };
  } catch (error) {
    await server.stop();
    throw error;
  }
}

describe('memory while streaming a large upload', () => {
  test('a 200 MB artifact streams to disk with the server RSS growing by less than 64 MB', async (t) => {
    const { server, dataDir, key, projectId, runId } = await warmServer('memory');
    try {
      const baseline = await residentBytes(server.pid);

      const total = 200 * MB;
      const chunkSize = 256 * 1024;
      const boundary = `attest${randomBytes(8).toString('hex')}`;
      const head = Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="metadata"\r\n\r\n` +
          `${JSON.stringify({ testRunId: runId, kind: 'video', name: 'screen-recording.bin' })}\r\n` +
          `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="screen-recording.bin"\r\n` +
          'Content-Type: application/octet-stream\r\n\r\n',
      );
      const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
      const hash = createHash('sha256');
      let sent = 0;
      // Generated chunk by chunk as the socket asks for it: the test never holds 200 MB either.
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(head);
        },
        pull(controller) {
          if (sent >= total) {
            controller.enqueue(tail);
            controller.close();
            return;
          }
          const chunk = randomBytes(Math.min(chunkSize, total - sent));
          hash.update(chunk);
          sent += chunk.length;
          controller.enqueue(chunk);
        },
      });

      const watch = watchResident(server.pid);
      const started = Date.now();
      const response = await fetch(`${server.url}/api/v1/projects/${projectId}/artifact`, {
        method: 'POST',
        headers: {
          accept: 'application/json',
          'service.api-token': key,
          'content-type': `multipart/form-data; boundary=${boundary}`,
        },
        body,
        duplex: 'half',
      } as RequestInit);
      const result = (await response.json()) as { size: number; sha256: string };
      const seconds = (Date.now() - started) / 1000;
      const peak = Math.max(baseline, (await watch.stop()).peak);

      assert.equal(response.status, 201, JSON.stringify(result));
      assert.equal(result.size, total);
      const digest = hash.digest('hex');
      assert.equal(result.sha256, digest);
      assert.equal(await sha256OfFile(blobFile(dataDir, digest)), digest);
      const growth = peak - baseline;
      const figure = `server RSS baseline ${mb(baseline)} MB, peak ${mb(peak)} MB, growth ${mb(growth)} MB while streaming 200 MB in ${seconds.toFixed(1)} s`;
      t.diagnostic(figure);
      assert.ok(growth < 64 * MB, figure);
    } finally {
      await server.stop();
    }
  });
});

describe('memory while refusing a pixel flood (FILE-2)', () => {
  test('a 20 000 × 20 000 PNG and a header claiming 100 000 × 100 000 are refused with 422, the server RSS growing by less than 50 MB', async (t) => {
    // Encoding the flood takes a few seconds: overlap it with the server start.
    const [flood, { server, dataDir, key, projectId, runId }] = await Promise.all([pixelFloodPng(), warmServer('flood')]);
    try {
      const bombs = [
        { name: 'flood.png', what: `a 1-colour 20000×20000 PNG of ${(flood.length / 1024).toFixed(0)} KB`, bytes: flood },
        { name: 'claim.png', what: 'a PNG header claiming 100000×100000', bytes: pngClaiming(100_000, 100_000) },
      ];
      const baseline = await residentBytes(server.pid);
      let peak = baseline;
      for (const bomb of bombs) {
        const watch = watchResident(server.pid);
        const started = Date.now();
        const res = await upload(
          server.url,
          key,
          projectId,
          { testRunId: runId, kind: 'screenshot', name: bomb.name },
          { file: { bytes: bomb.bytes, type: 'image/png', filename: bomb.name } },
        );
        const elapsed = Date.now() - started;
        // Keep sampling after the answer until the RSS stops moving: work left running behind it counts too.
        await steadyResident(server.pid);
        const seen = await watch.stop();
        peak = Math.max(peak, seen.peak);
        t.diagnostic(
          `${bomb.what}: ${res.status} ${String(res.body.code)} in ${elapsed} ms; server RSS peak ${mb(seen.peak)} MB ` +
            `(${seen.samples} samples), ${mb(seen.peak - baseline)} MB over the baseline`,
        );
        assert.equal(res.status, 422, JSON.stringify(res.body));
        assert.equal(res.body.code, 'IMAGE_TOO_LARGE');
        // Memory first: a decode shows as both, and the memory is what the limit protects.
        assert.ok(seen.peak - baseline < 50 * MB, `${bomb.what}: RSS grew by ${mb(seen.peak - baseline)} MB`);
      }
      const growth = peak - baseline;
      const figure = `server RSS baseline ${mb(baseline)} MB, peak ${mb(peak)} MB, growth ${mb(growth)} MB over both pixel-flood uploads`;
      t.diagnostic(figure);
      assert.ok(growth < 50 * MB, figure);

      // Nothing of them was kept: no artifact in the run, no temp file.
      const listed = await server.admin.call(v1.artifacts.listArtifacts, { params: { projectId }, query: { testRunId: runId } });
      assert.deepEqual(
        listed.items.map((a) => a.name),
        ['w.png'],
      );
      assert.deepEqual(filesUnder(path.join(dataDir, 'tmp')), []);
    } finally {
      await server.stop();
    }
  });
});

describe('memory while decoding thumbnails (FILE-3)', () => {
  test('30 concurrent thumbnail requests for 49 MP screenshots answer 200 or 503, the server RSS staying bounded', async (t) => {
    // Distinct one-colour images just under the 50 MP limit: cheap to upload, full price to decode.
    const makeImages = Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        sharp({ create: { width: 7000, height: 7000, channels: 3, background: { r: i * 20, g: Date.now() % 256, b: 99 } } })
          .png()
          .toBuffer(),
      ),
    );
    const [images, { server, key, projectId, runId }] = await Promise.all([makeImages, warmServer('thumbs')]);
    try {
      const imageIds: string[] = [];
      for (const [i, bytes] of images.entries()) {
        const res = await upload(
          server.url,
          key,
          projectId,
          { testRunId: runId, kind: 'screenshot', name: `${i}.png` },
          { file: { bytes } },
        );
        assert.equal(res.status, 201, JSON.stringify(res.body));
        imageIds.push((res.body.images as { id: string }[])[0]?.id as string);
      }
      const baseline = await residentBytes(server.pid);
      const watch = watchResident(server.pid);
      const started = Date.now();
      const answers = await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          fetch(`${server.url}/api/v1/images/${imageIds[i % imageIds.length]}?thumbnail=true`, {
            headers: { accept: 'application/json', 'service.api-token': key },
          }).then(async (res) => ({
            status: res.status,
            retryAfter: res.headers.get('retry-after'),
            bytes: (await res.arrayBuffer()).byteLength,
          })),
        ),
      );
      const seconds = (Date.now() - started) / 1000;
      // Keep sampling after the answers until the RSS stops moving: decodes left running behind them count too.
      await steadyResident(server.pid);
      const seen = await watch.stop();
      const statuses = answers.map((a) => a.status);
      const growth = seen.peak - baseline;
      const figure =
        `30 thumbnail requests over 10 images of 49 MP in ${seconds.toFixed(1)} s: ` +
        `${statuses.filter((s) => s === 200).length} × 200, ${statuses.filter((s) => s === 503).length} × 503; ` +
        `server RSS baseline ${mb(baseline)} MB, peak ${mb(seen.peak)} MB, growth ${mb(growth)} MB`;
      t.diagnostic(figure);
      assert.ok(
        statuses.every((s) => s === 200 || s === 503),
        figure,
      );
      for (const answer of answers.filter((a) => a.status === 503)) assert.equal(answer.retryAfter, '1');
      // The bound: decode slots × one decode's peak (about 40 MB at 49 MP, decoding row by row), plus
      // what glibc keeps in its per-thread arenas (see docs/configuration.md, MALLOC_ARENA_MAX). Ten
      // whole 49 MP images in memory at once would be about 1.5 GB.
      assert.ok(growth < 320 * MB, figure);
    } finally {
      await server.stop();
    }
  });
});
