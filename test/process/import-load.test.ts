import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { v1 } from '../../src/client/index.ts';
import { generateKey } from '../../src/server/security/api-key.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { describeSamples, pollHealth } from '../helpers/health-poller.ts';
import { rawRequest } from '../helpers/http.ts';
import { createStorage, spawnServer } from '../helpers/spawned-server.ts';
import { waitFor } from '../helpers/wait.ts';
import { deflateEntry, zipOf } from '../helpers/zip-writer.ts';

// IMP-7: a large import, as a raw body and as a ZIP, against the real server process. A poller in a
// worker thread of this process (its own event loop, so the 60 MB this test sends do not delay it)
// asks GET /api/v1/health every 50 ms from before the upload until the import is completed. Issue
// 27's bar is 200 ms for every answer; the suite runs three files at once on two cores, and no test
// here asserts a wall-clock bound under a second (test/README.md), so the test fails on a poll of a
// second or more (before the worker, the event loop stalled for 10-11 s) and reports every poll
// over 200 ms beside its figures. The server's memory is its peak RSS (VmHWM, reset through
// /proc/<pid>/clear_refs before each upload) against its RSS just before.

const MB = 1024 * 1024;
/** IMP-7's bar for every health answer during the import: reported, not asserted. */
const HEALTH_BAR_MS = 200;
/** What the test asserts: no poll waits a second (the stall before the worker was 10 s and more). */
const HEALTH_BOUND_MS = 1000;
const mb = (n: number) => (n / MB).toFixed(1);

/** A pseudo-random number generator, so the reports are the same on every run. */
function lcg(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
    return state;
  };
}

/** A case's stdout: about 20 KB of log lines that compress as real logs do (about 10 to 1). */
function logOf(caseIndex: number, next: () => number): string {
  let text = '';
  for (let line = 0; line < 200; line++) {
    const n = next();
    text += `2026-03-02T09:${String(n % 60).padStart(2, '0')}:12.${n % 1000} INFO [worker-${n % 8}] case ${caseIndex} step ${line}: GET /api/items/${(n >>> 8).toString(16)} answered 200 in ${n % 997} ms\n`;
  }
  return text;
}

/** A JUnit report of `bytes` or a little more: many cases, each with a long stdout. Answers the bytes and the case count. */
function bigJUnit(bytes: number): { xml: Buffer; cases: number } {
  const next = lcg(27);
  const parts = [
    '<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="load">\n<testsuite name="load" timestamp="2026-03-02T09:29:12">\n',
  ];
  let size = parts[0]?.length ?? 0;
  let cases = 0;
  while (size < bytes - 64 * 1024) {
    const failed = cases % 10 === 3;
    const body = failed ? '<failure message="expected 200 but was 500" type="AssertionError">at Load.java:42</failure>' : '';
    const part = `<testcase classname="load.Suite${cases % 40}" name="case ${cases}" time="0.${cases % 1000}">${body}<system-out>${logOf(cases, next)}</system-out></testcase>\n`;
    parts.push(part);
    size += part.length;
    cases++;
  }
  parts.push('</testsuite>\n</testsuites>\n');
  return { xml: Buffer.from(parts.join('')), cases };
}

/**
 * The chunks of a JUnit report of `bytes` whose stdout repeats one line with a counter: it deflates
 * about 37 to 1, far below a bomb's ratio, so only its declared size can refuse it.
 */
function* repetitiveJUnit(bytes: number): Generator<Buffer> {
  yield Buffer.from(
    '<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="big">\n<testsuite name="big">\n<testcase classname="big" name="case"><system-out>',
  );
  let sent = 0;
  let n = 0;
  while (sent < bytes) {
    let chunk = '';
    for (let i = 0; i < 10_000; i++)
      chunk += `    at com.example.checkout.CartService.addItem(CartService.java:142) request ${n++} answered 200 in time\n`;
    sent += chunk.length;
    yield Buffer.from(chunk);
  }
  yield Buffer.from('</system-out></testcase>\n</testsuite>\n</testsuites>\n');
}

function procStatus(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const kib = new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  if (kib === undefined) throw new Error(`no ${field} for process ${pid}`);
  return Number(kib) * 1024;
}

/** Resets the process's peak RSS (VmHWM) to its current RSS (Linux: `echo 5 > /proc/<pid>/clear_refs`). */
function resetPeak(pid: number): void {
  fs.writeFileSync(`/proc/${pid}/clear_refs`, '5');
}

const tempDirs: string[] = [];
after(() => {
  for (const dir of tempDirs) fs.rmSync(dir, { recursive: true, force: true });
});

describe('large imports keep the server answering (IMP-7)', { skip: process.platform !== 'linux' }, () => {
  let report: { xml: Buffer; cases: number };
  let zipped: Buffer;
  let declared200: Buffer;
  let bomb: Buffer;

  before(async () => {
    report = bigJUnit(60 * MB);
    zipped = zipOf([await deflateEntry('reports/TEST-load.xml', [report.xml], 6)]);
    // An honest entry of 200 MB (it really expands to that), deflated about 37 to 1: no bomb.
    declared200 = zipOf([await deflateEntry('TEST-big.xml', repetitiveJUnit(200 * MB), 1)]);
    // A bomb: 256 MB of one byte, deflated about 1,000 to 1.
    const zeros = Buffer.alloc(MB, 0x20);
    bomb = zipOf([
      await deflateEntry('TEST-small.xml', [Buffer.from('<testsuite name="s"><testcase name="c"/></testsuite>')]),
      await deflateEntry(
        'TEST-bomb.xml',
        (function* () {
          for (let i = 0; i < 256; i++) yield zeros;
        })(),
        9,
      ),
    ]);
  });

  for (const dialect of DIALECTS) {
    describe(`[${dialect}]`, () => {
      /**
       * A fresh server for each measure (a heap grown by an earlier import would hide the next
       * one's growth), warmed up by one small import that loads every module of the import path,
       * the worker's included.
       */
      async function freshServer() {
        const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'attest-import-load-'));
        tempDirs.push(dataDir);
        const storage = await createStorage(dialect, dataDir, generateKey('standard'));
        const server = await spawnServer(storage);
        const close = async () => {
          await server.stop();
          await storage.drop();
        };
        try {
          const project = await server.admin.call(v1.projects.createProject, {
            body: { key: `L${randomBytes(3).toString('hex').toUpperCase()}`, name: 'Import load' },
          });
          const post = (body: Buffer, type: string) =>
            rawRequest(`${server.url}/api/v1/projects/${project.id}/imports`, {
              method: 'POST',
              headers: {
                'service.api-token': storage.adminKey,
                accept: 'application/json',
                'content-type': type,
                'content-length': body.length,
              },
              body,
            });
          const settled = (importId: string) =>
            waitFor(
              async () => {
                const record = await server.admin.call(v1.imports.getImport, { params: { projectId: project.id, importId } });
                return record.status === 'completed' || record.status === 'failed' ? record : undefined;
              },
              { timeoutMs: 15 * 60_000, intervalMs: 250, message: `import ${importId} settles` },
            );
          const warm = await post(Buffer.from('<testsuite name="w"><testcase name="warm"/></testsuite>'), 'application/xml');
          assert.equal(warm.status, 202, warm.text);
          assert.equal((await settled(warm.json.id as string)).status, 'completed');
          /** Posts `body`, waits for its import to settle, and measures the server meanwhile. */
          const measured = async (body: Buffer, type: string) => {
            const baseline = procStatus(server.pid, 'VmRSS');
            resetPeak(server.pid);
            const poller = await pollHealth(`${server.url}/api/v1/health`, 50);
            const started = Date.now();
            try {
              const answer = await post(body, type);
              const record = answer.status === 202 ? await settled(answer.json.id as string) : undefined;
              const seconds = (Date.now() - started) / 1000;
              const samples = await poller.stop();
              return { answer, record, seconds, samples, baseline, growth: procStatus(server.pid, 'VmHWM') - baseline };
            } finally {
              await poller.stop().catch(() => {});
            }
          };
          const imports = async () =>
            (await server.admin.call(v1.imports.listImports, { params: { projectId: project.id }, query: { limit: 10 } })).items;
          return { measured, imports, close };
        } catch (error) {
          await close();
          throw error;
        }
      }

      for (const kind of ['raw body', 'ZIP'] as const) {
        test(`a 60 MB JUnit report as a ${kind}: /health answers at every poll, within a second, RSS grows < 300 MB`, {
          timeout: 20 * 60_000,
        }, async (t) => {
          const server = await freshServer();
          try {
            const body = kind === 'ZIP' ? zipped : report.xml;
            const { answer, record, seconds, samples, baseline, growth } = await server.measured(
              body,
              kind === 'ZIP' ? 'application/zip' : 'application/xml',
            );
            const slow = samples.filter((s) => s.ms >= HEALTH_BOUND_MS || s.status !== 200);
            const overBar = samples
              .filter((s) => s.ms >= HEALTH_BAR_MS)
              .map((s) => `${s.ms.toFixed(0)} ms at ${(s.at / 1000).toFixed(2)} s`);
            t.diagnostic(
              `${kind} of ${mb(body.length)} MB (${report.cases} cases): import ${seconds.toFixed(1)} s; ${describeSamples(samples)}; ` +
                `RSS ${mb(baseline)} MB before, peak ${mb(baseline + growth)} MB (+${mb(growth)} MB); ` +
                `polls at or over ${HEALTH_BAR_MS} ms: ${overBar.length === 0 ? 'none' : overBar.join(', ')}`,
            );
            assert.equal(answer.status, 202, answer.text);
            assert.equal(record?.status, 'completed', JSON.stringify(record?.error));
            assert.equal(record?.counts?.runs, report.cases);
            // Polls every 50 ms over an import of several seconds: the whole of it was watched.
            assert.ok(samples.length >= 20, `only ${samples.length} polls`);
            assert.deepEqual(
              slow.map((s) => `${s.ms.toFixed(0)} ms (status ${s.status}) at ${(s.at / 1000).toFixed(2)} s`),
              [],
              `health polls at or over ${HEALTH_BOUND_MS} ms`,
            );
            assert.ok(growth < 300 * MB, `RSS grew by ${mb(growth)} MB`);
          } finally {
            await server.close();
          }
        });
      }

      for (const kind of ['an entry declaring 200 MB', 'a bomb'] as const) {
        test(`a ZIP with ${kind} is refused without expanding it: RSS grows < 100 MB`, { timeout: 10 * 60_000 }, async (t) => {
          const server = await freshServer();
          try {
            const body = kind === 'a bomb' ? bomb : declared200;
            const { answer, samples, growth } = await server.measured(body, 'application/zip');
            t.diagnostic(`${kind} (${mb(body.length)} MB upload): ${describeSamples(samples)}; RSS +${mb(growth)} MB`);
            assert.equal(answer.status, 400, answer.text);
            assert.match(String(answer.json.detail), kind === 'a bomb' ? /TEST-bomb\.xml.*bomb/ : /TEST-big\.xml.*declares 2\d{8} bytes/);
            // Expanding the entry would take 200 MB or more (and parsing it far more): it stayed packed.
            assert.ok(growth < 100 * MB, `RSS grew by ${mb(growth)} MB`);
            // Nothing was stored: the warm-up's import only.
            assert.equal((await server.imports()).length, 1);
          } finally {
            await server.close();
          }
        });
      }
    });
  }
});
