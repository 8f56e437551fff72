/**
 * The import worker (IMP-7): a worker thread that reads uploads into reports, so expanding a ZIP
 * and parsing a 60 MB report never hold the server's event loop. `worker-pool.ts` is its host, and
 * the protocol's only other end:
 *
 * - in: `read` (what to read, and its size), then `bytes` slices until that size is in, each sent
 *   once the one before is answered `took` (slices never queue up while a worker starts);
 * - out: `read` (the reports without their cases, and the count of cases) or `error`;
 * - then, in `full` mode, each `next` asks for one piece: a `cases` batch of one report, a `file`
 *   of the archive (its bytes moved, not copied), or `end`; in `keep` mode, a `slice` of the upload
 *   as it came, or `end`.
 *
 * An upload handed over whole (one `bytes` message of its full size, its buffer moved) is taken as
 * it is, not copied.
 *
 * Pieces are small (about a megabyte of text) and asked for one at a time, so the host takes each
 * in a turn of its event loop of its own instead of all of them in one.
 */

import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { parentPort } from 'node:worker_threads';
import type { ImportedAttachment, ImportedCase, ImportedStep } from './model.ts';
import { ImportInputError } from './model.ts';
import { COLLECT_BYTES, type ReadUpload, readUploadBytes, type UploadFormat, type UploadLimits, type UploadType } from './upload.ts';

export interface ReadRequest {
  op: 'read';
  fileName: string;
  type: UploadType;
  format: UploadFormat;
  limits: UploadLimits;
  size: number;
  /**
   * `keep`: only whether it reads, and its count of cases, then the upload's own bytes back in
   * slices (the host stores them, and so never holds the upload itself while it is read); `full`:
   * the reports and files.
   */
  mode: 'keep' | 'full';
}

export type HostMessage = ReadRequest | { op: 'bytes'; chunk: Uint8Array } | { op: 'next' };

export type WorkerMessage =
  | { op: 'read'; runs: number; reports: ReadUpload['reports'] }
  | { op: 'error'; input: boolean; file: string; message: string; stack?: string }
  | { op: 'cases'; report: number; cases: ImportedCase[] }
  | { op: 'file'; name: string; bytes: Uint8Array }
  | { op: 'end' }
  | { op: 'took' }
  | { op: 'slice'; chunk: Uint8Array };

/** Text per `cases` piece, about: large enough to be cheap, small enough to take in one short turn. */
const PIECE_CHARS = 1024 * 1024;
/** Cases per piece at most, whatever their size. */
const PIECE_CASES = 500;

const port = parentPort;
if (!port) throw new Error('src/import/worker.ts runs as a worker thread only');

/** An inline body as an array of its own: a view on a larger buffer would be copied whole. */
const ownBytes = (bytes: Uint8Array) =>
  bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes : new Uint8Array(bytes);

/** Inline bytes: an attachment's own, and those of the images it groups (a visual diff's). */
type WithBody = { body?: Uint8Array };

function ownBody(holder: WithBody): number {
  if (!holder.body) return 0;
  holder.body = ownBytes(holder.body);
  return holder.body.byteLength;
}

function ownAttachments(attachments: ImportedAttachment[]): number {
  let size = 0;
  for (const attachment of attachments) {
    size += ownBody(attachment);
    const images = (attachment as { images?: Record<string, WithBody> }).images;
    for (const image of Object.values(images ?? {})) size += ownBody(image);
  }
  return size;
}

/** A step tree's size in characters and bytes, its inline bodies made arrays of their own on the way. */
function stepWeight(step: ImportedStep): number {
  let size = step.title.length + (step.error?.length ?? 0) + ownAttachments(step.attachments);
  for (const cell of step.cells) size += cell.text.length;
  for (const child of step.steps) size += stepWeight(child);
  return size;
}

function caseWeight(testCase: ImportedCase): number {
  let size = testCase.fullName.length + ownAttachments(testCase.attachments);
  for (const cell of testCase.cells) size += cell.text.length;
  for (const step of testCase.steps) size += stepWeight(step);
  return size;
}

/** What a `full` reading hands over after its first answer, piece by piece. */
function* piecesOf(read: ReadUpload): Generator<{ message: WorkerMessage; transfer: ArrayBuffer[] }> {
  for (const [report, { cases }] of read.reports.entries()) {
    let batch: ImportedCase[] = [];
    let chars = 0;
    for (let at = 0; at < cases.length; at++) {
      const testCase = cases[at] as ImportedCase;
      // Let go of as it is sent: the host's copy grows as this one shrinks.
      (cases as (ImportedCase | undefined)[])[at] = undefined;
      batch.push(testCase);
      chars += caseWeight(testCase);
      if (chars >= PIECE_CHARS || batch.length >= PIECE_CASES) {
        yield { message: { op: 'cases', report, cases: batch }, transfer: [] };
        batch = [];
        chars = 0;
      }
    }
    if (batch.length > 0) yield { message: { op: 'cases', report, cases: batch }, transfer: [] };
  }
  for (const [name, bytes] of read.files) {
    read.files.delete(name);
    const own = ownBytes(bytes);
    yield { message: { op: 'file', name, bytes: own }, transfer: [own.buffer as ArrayBuffer] };
  }
  yield { message: { op: 'end' }, transfer: [] };
}

/**
 * V8's full garbage collection, for this worker's heap only. Node gives no API for it but the
 * `--expose-gc` flag, which is turned on just long enough to take the function from a fresh
 * context and then off again (contexts made later get no `gc`). It only lowers the peak memory
 * of a large import (a 60 MB ZIP: +200 MB of RSS with it, +240-265 MB without; docs/decisions.md),
 * so a runtime that no longer hands out `gc` this way gets a no-op, never a failed import.
 */
const collect: () => void = (() => {
  try {
    setFlagsFromString('--expose-gc');
    const gc: unknown = runInNewContext('typeof gc === "function" ? gc : undefined');
    return typeof gc === 'function' ? (gc as () => void) : () => {};
  } catch {
    return () => {};
  } finally {
    setFlagsFromString('--no-expose-gc');
  }
})();

/** Bytes per `slice` of a kept upload. */
const SLICE_BYTES = 4 * 1024 * 1024;

/** A kept upload's bytes, in copies of a slice each (moved, so the host takes them without a copy). */
function* slicesOf(bytes: Uint8Array): Generator<{ message: WorkerMessage; transfer: ArrayBuffer[] }> {
  for (let at = 0; at < bytes.length; at += SLICE_BYTES) {
    const chunk = bytes.slice(at, at + SLICE_BYTES);
    yield { message: { op: 'slice', chunk }, transfer: [chunk.buffer as ArrayBuffer] };
  }
  yield { message: { op: 'end' }, transfer: [] };
}

let request: ReadRequest | undefined;
let received: Uint8Array | undefined;
let filled = 0;
let pieces: Generator<{ message: WorkerMessage; transfer: ArrayBuffer[] }> | undefined;

const send = (message: WorkerMessage, transfer: ArrayBuffer[] = []) => port.postMessage(message, transfer);

async function read(job: ReadRequest): Promise<void> {
  // The reading takes the bytes over, and lets go of them as soon as it can (unless they are kept).
  const kept = job.mode === 'keep' ? received : undefined;
  const input = {
    fileName: job.fileName,
    bytes: received ?? new Uint8Array(0),
    type: job.type,
    format: job.format,
    limits: job.limits,
    collect,
  };
  received = undefined;
  try {
    const result = await readUploadBytes(input);
    // A large document and its element tree are garbage now: only the runs are left.
    if (job.size >= COLLECT_BYTES) collect();
    const runs = result.reports.reduce((sum, report) => sum + report.cases.length, 0);
    if (job.mode !== 'full') {
      send({ op: 'read', runs, reports: [] });
      if (kept) pieces = slicesOf(kept);
      return;
    }
    send({ op: 'read', runs, reports: result.reports.map((report) => ({ ...report, cases: [] })) });
    pieces = piecesOf(result);
  } catch (error) {
    const input = error instanceof ImportInputError;
    send({
      op: 'error',
      input,
      file: input ? error.file : job.fileName,
      message: (error as Error)?.message ?? String(error),
      stack: input ? undefined : (error as Error)?.stack,
    });
  }
}

port.on('message', (message: HostMessage) => {
  if (message.op === 'read') {
    request = message;
    received = undefined;
    filled = 0;
    pieces = undefined;
  } else if (message.op === 'bytes') {
    const { chunk } = message;
    const size = request?.size ?? 0;
    if (filled + chunk.byteLength > size) throw new Error('bytes past the size announced');
    if (filled === 0 && chunk.byteLength === size) received = chunk;
    else {
      received ??= new Uint8Array(size);
      received.set(chunk, filled);
    }
    filled += chunk.byteLength;
    send({ op: 'took' });
  } else {
    const next = pieces?.next();
    if (!next || next.done) {
      pieces = undefined;
      send({ op: 'end' });
    } else {
      send(next.value.message, next.value.transfer);
      if (next.value.message.op === 'end') pieces = undefined;
    }
    return;
  }
  if (request && filled === request.size) {
    received ??= new Uint8Array(0);
    const job = request;
    request = undefined;
    // Read in a turn of its own: run from this handler, its frame would keep the whole upload's
    // buffer alive (a root of the heap) for as long as the reading takes.
    setImmediate(() => void read(job));
  }
});
