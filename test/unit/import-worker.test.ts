import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ImportInputError } from '../../src/import/model.ts';
import { MAX_WORKERS, readInWorker } from '../../src/import/worker-pool.ts';
import { nestedPlaywrightReport } from '../helpers/nested-report.ts';

// IMP-8: the import worker's host (src/import/worker-pool.ts) never waits forever on its worker.
// An answer V8 cannot read on the host's side (a step tree nested 2,000 deep, which a reading
// told of a bound far above IMPORT_STEP_DEPTH_MAX lets through), a worker silent past its deadline
// and a reading whose signal aborts each fail the reading and end the worker; the pool then reads
// the next upload as before. Real workers, real reports: only the bounds differ from the server's.

const limits = {
  maxEntries: 100,
  maxExpandedBytes: 64 * 1024 * 1024,
  maxReportBytes: 64 * 1024 * 1024,
  maxXmlTags: 600_000,
  fullNameMax: 2000,
  maxStepDepth: 100,
};

/** What the host hands a worker for a JSON report held in memory. */
const inputOf = (bytes: Buffer, overrides: Partial<Parameters<typeof readInWorker>[0]> = {}) => ({
  fileName: 'report.json',
  size: bytes.length,
  whole: new Uint8Array(bytes),
  type: 'json' as const,
  format: 'auto' as const,
  limits,
  ...overrides,
});

/** A JUnit report large enough that reading it takes the worker a good while (tens of milliseconds at least). */
function largeJUnit(cases: number): Buffer {
  const parts = ['<testsuite name="large">'];
  for (let i = 0; i < cases; i++)
    parts.push(`<testcase classname="c${i % 50}" name="case ${i}"><system-out>${'x'.repeat(200)}</system-out></testcase>`);
  parts.push('</testsuite>');
  return Buffer.from(parts.join(''));
}

/** The pool reads a small report as before: its workers were ended and their places given back. */
async function poolStillReads(): Promise<void> {
  const read = await readInWorker(inputOf(nestedPlaywrightReport(3)));
  assert.equal(read.reports[0]?.cases.length, 1);
}

describe('the import worker host (IMP-8)', () => {
  test('an answer too deeply nested for the host to read fails the reading instead of hanging it', { timeout: 60_000 }, async () => {
    const deep = nestedPlaywrightReport(2000);
    const started = Date.now();
    await assert.rejects(
      readInWorker(inputOf(deep, { limits: { ...limits, maxStepDepth: 5000 } })),
      (error: unknown) => error instanceof ImportInputError && /could not be handed over by the import worker/.test(error.message),
    );
    assert.ok(Date.now() - started < 30_000, 'failed at once, not at a deadline');
    await poolStillReads();
  });

  test('a worker that does not answer within its deadline is ended, the reading refused naming the deadline', {
    timeout: 60_000,
  }, async () => {
    const xml = largeJUnit(20_000);
    // More readings than workers: each ended worker must give its place back, or the last would wait forever.
    for (let i = 0; i <= MAX_WORKERS; i++) {
      await assert.rejects(
        readInWorker({
          fileName: 'large.xml',
          size: xml.length,
          whole: new Uint8Array(xml),
          type: 'xml',
          format: 'auto',
          limits,
          answerTimeoutMs: 1,
        }),
        (error: unknown) =>
          error instanceof ImportInputError &&
          error.message === 'large.xml: took the import worker longer than 0.001 s to read; it was stopped',
      );
    }
    await poolStillReads();
  });

  test('a reading whose signal aborts stops waiting for its bytes and ends its worker', { timeout: 60_000 }, async () => {
    const bytes = nestedPlaywrightReport(3);
    const abort = new AbortController();
    // A source that sends half the upload, then nothing more (a store that stalls).
    async function* stalling(): AsyncGenerator<Uint8Array> {
      yield new Uint8Array(bytes.subarray(0, 100));
      await new Promise(() => {});
    }
    const reading = readInWorker({ ...inputOf(bytes), whole: undefined, chunks: stalling(), signal: abort.signal });
    setTimeout(() => abort.abort(new Error('the task ran out of time')), 200);
    await assert.rejects(reading, /the task ran out of time/);
    await poolStillReads();
  });
});
