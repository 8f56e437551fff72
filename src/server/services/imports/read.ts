import { setImmediate as nextTurn } from 'node:timers/promises';
import { TEST_FULL_NAME_MAX } from '../../../api/v1/runs.ts';
import { IMPORT_STEP_DEPTH_MAX, ImportInputError } from '../../../import/model.ts';
import type { ImportUpload, ReadUpload } from '../../../import/upload.ts';
import { checkAndKeepInWorker, type HostInput, movable, readInWorker } from '../../../import/worker-pool.ts';
import type { ServiceContext } from '../../context.ts';
import type { ImportsTable } from '../../db/types.ts';
import { AppError } from '../../errors.ts';

// Reading an upload (IMP-5): everything an import holds is read and checked here, before anything
// is stored; whatever is wrong with it is a 400 that names the file. The reading itself (expanding,
// parsing) runs in a worker thread (IMP-7, src/import/worker-pool.ts), off the event loop.

export type { ImportOptionsInput, ImportUpload, ReadUpload } from '../../../import/upload.ts';
export type SourceType = ImportsTable['source_type'];

/** Most runs one import may make: far above real suites, and a bound on one upload's work. */
export const IMPORT_RUNS_MAX = 200_000;
/** The largest report file (XML or JSON) read: parsing takes several times its size in memory. */
export const REPORT_MAX_BYTES = 64 * 1024 * 1024;
/** Most tags one XML report may hold: each becomes an object while parsing (≈ 500 bytes each). */
export const XML_TAGS_MAX = 1_500_000;

/** An upload kept as a blob, read again: its bytes come as they are read from the store. */
export interface StoredUpload extends Omit<ImportUpload, 'bytes'> {
  size: number;
  chunks: AsyncIterable<Uint8Array>;
}

/** Bytes handed over to the worker per turn of the event loop, at most. */
const SLICE_BYTES = 4 * 1024 * 1024;

/** A buffer as slices, one per turn of the event loop. */
export async function* slicesOf(bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  for (let at = 0; at < bytes.length; at += SLICE_BYTES) {
    if (at > 0) await nextTurn();
    yield bytes.subarray(at, at + SLICE_BYTES);
  }
}

/** What the worker is given: the upload, and the bounds of this server. */
function inputOf(ctx: ServiceContext, upload: ImportUpload | StoredUpload): HostInput {
  const { size, chunks } = 'bytes' in upload ? { size: upload.bytes.length, chunks: slicesOf(upload.bytes) } : upload;
  return {
    fileName: upload.fileName,
    size,
    chunks,
    type: upload.type,
    format: upload.options.format ?? 'auto',
    limits: {
      maxEntries: ctx.config.maxImportEntries,
      maxExpandedBytes: ctx.config.maxImportExpandedBytes,
      maxReportBytes: REPORT_MAX_BYTES,
      maxXmlTags: XML_TAGS_MAX,
      fullNameMax: TEST_FULL_NAME_MAX,
      maxStepDepth: IMPORT_STEP_DEPTH_MAX,
    },
  };
}

/** A worker's reading, its input faults as the 400 they are. */
async function inputFaults<T>(reading: Promise<T>): Promise<T> {
  try {
    return await reading;
  } catch (error) {
    if (error instanceof ImportInputError) throw new AppError('INVALID_INPUT', error.message);
    throw error;
  }
}

function checkRuns(upload: { fileName: string }, runs: number): void {
  if (runs === 0) throw new AppError('INVALID_INPUT', `${upload.fileName}: holds no test case to import.`);
  if (runs > IMPORT_RUNS_MAX) {
    throw new AppError('INVALID_INPUT', `The upload holds ${runs} test cases; an import takes at most ${IMPORT_RUNS_MAX}.`);
  }
}

/**
 * Checks a whole upload as an import would read it, then has `store` keep its bytes, which come back from
 * the worker that checked it, slice by slice. The upload's buffer is moved to that worker when it is
 * a buffer of its own (a request body of any size but the smallest): `upload.bytes` is empty
 * afterwards, and the server holds no copy of a large upload while its import is read and written
 * (IMP-7), the worker's memory going back to the system when it ends.
 */
export async function checkAndStoreUpload<T>(
  ctx: ServiceContext,
  upload: ImportUpload,
  store: (chunks: AsyncIterable<Uint8Array>) => Promise<T>,
): Promise<T> {
  const input = inputOf(ctx, upload);
  if (movable(upload.bytes)) {
    input.chunks = undefined;
    input.whole = upload.bytes;
  }
  // Any fault is a 400 naming the file, before anything is stored (IMP-5).
  return inputFaults(
    checkAndKeepInWorker(input, async (runs, chunks) => {
      checkRuns(upload, runs);
      return store(chunks);
    }),
  );
}

/**
 * Reads a whole upload into its reports (names made storable) and its archive's files; faults as
 * `checkAndStoreUpload`. `signal` stops the reading and ends its worker (a background task's lease).
 */
export async function readUpload(ctx: ServiceContext, upload: ImportUpload | StoredUpload, signal?: AbortSignal): Promise<ReadUpload> {
  const read = await inputFaults(readInWorker({ ...inputOf(ctx, upload), signal }));
  checkRuns(
    upload,
    read.reports.reduce((sum, report) => sum + report.cases.length, 0),
  );
  return read;
}
