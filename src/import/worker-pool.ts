/**
 * The host side of the import worker (`worker.ts`, IMP-7): reads uploads in worker threads, at
 * most {@link MAX_WORKERS} at once (more wait their turn), so the event loop only ever copies
 * chunks in (a few megabytes a turn at most) and takes small pieces out.
 *
 * A worker is kept for the next upload for a while ({@link IDLE_MS}), unless it just read a large
 * one: then it is ended, and its heap given back to the system at once. Each worker's heap is
 * capped ({@link HEAP_MB}): an upload that needs more to be read is refused (a 400), and the server
 * is untouched. Every answer the host waits for has a deadline ({@link ANSWER_TIMEOUT_MS}), and a
 * message it cannot read (`messageerror`) fails the exchange: a worker that spins, hangs or answers
 * what cannot be read is ended, never waited for (IMP-8). A reading whose signal aborts (its
 * background task ran out of time, lost its lease, or the instance stops) ends its worker too.
 */

import { Worker } from 'node:worker_threads';
import { type ImportedReport, ImportInputError } from './model.ts';
import type { ReadUpload, UploadInput } from './upload.ts';
import type { HostMessage, ReadRequest, WorkerMessage } from './worker.ts';

/** Uploads read at once; on a machine of two cores, one is left to the server for requests. */
export const MAX_WORKERS = 2;
/** How long an idle worker is kept for the next upload. */
const IDLE_MS = 10_000;
/** A worker that read an upload of this size or more is ended after it. */
const LARGE_UPLOAD_BYTES = 8 * 1024 * 1024;
/** A worker's old generation at most: a 64 MiB report of 600,000 tags needs about 300 MB of it. */
export const HEAP_MB = 384;
/**
 * The longest a worker may take to answer: reading a 64 MiB report takes it a few seconds (about
 * 6 s for the whole import of a 60 MB one, docs/imports.md), so a worker silent this long spins or
 * hangs, and is ended with the upload refused.
 */
export const ANSWER_TIMEOUT_MS = 120_000;

/**
 * The worker's module. Under tsx (tests, `npm run dev`) it is the TypeScript source beside this
 * file, loaded through tsx's loader, which a worker does not inherit; in the esbuild bundle this
 * code sits in dist/server/main.js or in a chunk of dist/chunks/, and the worker is the entry
 * point dist/server/import-worker.js (scripts/build.mjs): `../server/` finds it from both.
 */
function startWorker(): Worker {
  const options = { resourceLimits: { maxOldGenerationSizeMb: HEAP_MB, maxYoungGenerationSizeMb: 8 }, name: 'attest-import' };
  if (import.meta.url.endsWith('.ts')) {
    const tsx = import.meta.resolve('tsx/esm/api');
    const source = new URL('./worker.ts', import.meta.url).href;
    const boot = `import(${JSON.stringify(tsx)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(source)}); });`;
    return new Worker(boot, { ...options, eval: true });
  }
  return new Worker(new URL('../server/import-worker.js', import.meta.url), options);
}

interface Slot {
  worker: Worker;
  idleTimer?: NodeJS.Timeout;
}

const idle: Slot[] = [];
const waiting: (() => void)[] = [];
let live = 0;
/** Workers being ended: a new one starts after they are gone, so two large heaps never overlap (an import's check, then its reading). */
const ending = new Set<Promise<number>>();

function end(slot: Slot): void {
  const ended = slot.worker.terminate();
  ending.add(ended);
  void ended.finally(() => ending.delete(ended));
}

function startSlot(): Slot {
  const slot: Slot = { worker: startWorker() };
  // A job listens for its worker's errors itself; between jobs one must not take the process down.
  slot.worker.on('error', () => {});
  slot.worker.once('exit', () => {
    // An idle worker that died: its place is free again.
    const at = idle.indexOf(slot);
    if (at === -1) return;
    idle.splice(at, 1);
    clearTimeout(slot.idleTimer);
    live--;
    waiting.shift()?.();
  });
  return slot;
}

async function acquire(): Promise<Slot> {
  for (;;) {
    const slot = idle.pop();
    if (slot) {
      clearTimeout(slot.idleTimer);
      slot.worker.ref();
      return slot;
    }
    if (live < MAX_WORKERS) {
      live++;
      if (ending.size > 0) await Promise.allSettled([...ending]);
      try {
        return startSlot();
      } catch (error) {
        live--;
        throw error;
      }
    }
    await new Promise<void>((resolve) => waiting.push(resolve));
  }
}

function release(slot: Slot, keep: boolean): void {
  if (keep) {
    // An idle worker keeps no process alive, and ends on its own after a while.
    slot.worker.unref();
    slot.idleTimer = setTimeout(() => {
      const at = idle.indexOf(slot);
      if (at !== -1) idle.splice(at, 1);
      live--;
      end(slot);
    }, IDLE_MS).unref();
    idle.push(slot);
  } else {
    live--;
    end(slot);
  }
  waiting.shift()?.();
}

/**
 * One exchange with a worker: messages sent, and answers taken in order; a worker's death, an
 * answer that cannot be read, an answer later than `answerMs` or `signal` aborting fails what is
 * awaited (and the exchange, so the worker is not used again).
 */
class Exchange {
  readonly #worker: Worker;
  readonly #fileName: string;
  readonly #answerMs: number;
  readonly #signal: AbortSignal | undefined;
  readonly #inbox: WorkerMessage[] = [];
  #pending: { resolve: (message: WorkerMessage) => void; reject: (error: unknown) => void } | undefined;
  #failure: unknown;
  #rejectEnded: (error: unknown) => void = () => {};
  /** Rejects with the failure once the exchange fails. */
  readonly ended = new Promise<never>((_, reject) => {
    this.#rejectEnded = reject;
  });

  constructor(worker: Worker, fileName: string, answerMs: number, signal: AbortSignal | undefined) {
    this.#worker = worker;
    this.#fileName = fileName;
    this.#answerMs = answerMs;
    this.#signal = signal;
    this.ended.catch(() => {});
    worker.on('message', this.#onMessage);
    worker.on('messageerror', this.#onMessageError);
    worker.on('error', this.#onError);
    worker.on('exit', this.#onExit);
    signal?.addEventListener('abort', this.#onAbort, { once: true });
    if (signal?.aborted) this.#onAbort();
  }

  get broken(): boolean {
    return this.#failure !== undefined;
  }

  send(message: HostMessage, transfer: ArrayBuffer[] = []): void {
    if (this.#failure === undefined) this.#worker.postMessage(message, transfer);
  }

  receive(): Promise<WorkerMessage> {
    const next = this.#inbox.shift();
    if (next) return Promise.resolve(next);
    if (this.#failure !== undefined) return Promise.reject(this.#failure);
    return new Promise((resolve, reject) => {
      const late = `took the import worker longer than ${this.#answerMs / 1000} s to read; it was stopped`;
      const timer = setTimeout(() => this.#fail(new ImportInputError(this.#fileName, late)), this.#answerMs);
      this.#pending = {
        resolve: (message) => {
          clearTimeout(timer);
          resolve(message);
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      };
    });
  }

  close(): void {
    this.#worker.off('message', this.#onMessage);
    this.#worker.off('messageerror', this.#onMessageError);
    this.#worker.off('error', this.#onError);
    this.#worker.off('exit', this.#onExit);
    this.#signal?.removeEventListener('abort', this.#onAbort);
  }

  #fail = (error: unknown) => {
    this.#failure ??= error;
    this.#rejectEnded(this.#failure);
    this.#pending?.reject(this.#failure);
    this.#pending = undefined;
  };

  #onMessage = (message: WorkerMessage) => {
    if (this.#pending) {
      this.#pending.resolve(message);
      this.#pending = undefined;
    } else this.#inbox.push(message);
  };

  #onError = (error: Error & { code?: string }) => {
    if (error.code === 'ERR_WORKER_OUT_OF_MEMORY') {
      this.#fail(new ImportInputError(this.#fileName, `needs more memory to be read than an import may use (${HEAP_MB} MB)`));
    } else this.#fail(error);
  };

  #onExit = (code: number) => this.#fail(new Error(`the import worker stopped (exit code ${code})`));

  // A message V8 cannot deserialize here (a tree nested too deep for the host's stack) is no
  // `message` at all: without this, the answer it was is awaited forever.
  #onMessageError = (error: Error) =>
    this.#fail(new ImportInputError(this.#fileName, `could not be handed over by the import worker (${error.message})`));

  #onAbort = () => this.#fail(this.#signal?.reason ?? new Error('the reading was stopped'));
}

function converse(worker: Worker, fileName: string, answerMs: number, signal: AbortSignal | undefined): Exchange {
  return new Exchange(worker, fileName, answerMs, signal);
}

/** The worker's answer as what it is: an ImportInputError with the same message, or a server fault. */
function failureOf(message: Extract<WorkerMessage, { op: 'error' }>): Error {
  if (message.input) {
    const error = new ImportInputError(message.file, '');
    error.message = message.message;
    return error;
  }
  const error = new Error(`the import worker failed: ${message.message}`);
  if (message.stack) error.stack = message.stack;
  return error;
}

/** An upload as the host hands it over: what to read, and its bytes as they come (a buffer's slices, or a stored blob's stream). */
export interface HostInput extends Omit<UploadInput, 'bytes'> {
  size: number;
  /** The bytes as they come; or `whole`, an array whose buffer is its own, moved to the worker at once (and then empty here). */
  chunks?: AsyncIterable<Uint8Array>;
  whole?: Uint8Array;
  /** Stops the reading, and ends its worker: the task it is for ran out of time or lost its lease, or the instance stops. */
  signal?: AbortSignal;
  /** The longest wait for each of the worker's answers; ANSWER_TIMEOUT_MS unless said. */
  answerTimeoutMs?: number;
}

/** Whether an array can be moved to a worker whole: it is all of its buffer (a view on a shared pool is not). */
export const movable = (bytes: Uint8Array): boolean => bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength;

async function inWorker<T>(
  input: HostInput,
  mode: ReadRequest['mode'],
  take: (first: { runs: number; reports: ImportedReport[] }, next: () => Promise<WorkerMessage>) => Promise<T>,
): Promise<T> {
  input.signal?.throwIfAborted();
  const slot = await acquire();
  const talk = converse(slot.worker, input.fileName, input.answerTimeoutMs ?? ANSWER_TIMEOUT_MS, input.signal);
  let healthy = false;
  try {
    const { size } = input;
    talk.send({ op: 'read', fileName: input.fileName, type: input.type, format: input.format, limits: input.limits, size, mode });
    let sent = 0;
    if (input.whole) {
      if (!movable(input.whole) || input.whole.byteLength !== size)
        throw new Error('the upload handed over whole is not a buffer of its own');
      talk.send({ op: 'bytes', chunk: input.whole }, [input.whole.buffer as ArrayBuffer]);
      sent = size;
      const took = await talk.receive();
      if (took.op !== 'took') throw new Error(`the import worker answered ${took.op} to the upload`);
    }
    for await (const chunk of input.chunks ? untilFailed(input.chunks, talk.ended) : []) {
      if (sent + chunk.byteLength > size) throw new Error(`the upload holds more than the ${size} bytes it was said to`);
      // A copy of the chunk, moved: posting a view would copy the whole buffer under it.
      const copy = new Uint8Array(chunk);
      talk.send({ op: 'bytes', chunk: copy }, [copy.buffer as ArrayBuffer]);
      sent += chunk.byteLength;
      // One slice in flight at most: a worker still starting would otherwise have the whole upload
      // queued for it, beside the buffer it then copies it into.
      const took = await talk.receive();
      if (took.op !== 'took') throw new Error(`the import worker answered ${took.op} to a slice`);
    }
    if (sent !== size) throw new Error(`the upload ended after ${sent} of the ${size} bytes it was said to hold`);
    const first = await talk.receive();
    if (first.op === 'error') {
      healthy = true;
      throw failureOf(first);
    }
    if (first.op !== 'read') throw new Error(`the import worker answered ${first.op} to a read`);
    const result = await take(first, async () => {
      talk.send({ op: 'next' });
      const piece = await talk.receive();
      if (piece.op === 'error') throw failureOf(piece);
      return piece;
    });
    healthy = true;
    return result;
  } finally {
    talk.close();
    release(slot, healthy && !talk.broken && input.size < LARGE_UPLOAD_BYTES);
  }
}

/**
 * The upload's bytes as they come, until the exchange fails: a source that stops sending (a
 * store that stalls) would otherwise hold the reading past its signal. The source is then ended.
 */
async function* untilFailed(chunks: AsyncIterable<Uint8Array>, ended: Promise<never>): AsyncGenerator<Uint8Array> {
  const source = chunks[Symbol.asyncIterator]();
  try {
    for (;;) {
      const next = await Promise.race([source.next(), ended]);
      if (next.done) return;
      yield next.value;
    }
  } finally {
    // A stream's iterator destroys it; a pending `next()` of it then settles on its own.
    source.return?.()?.catch(() => {});
  }
}

/**
 * Reads an upload in a worker only to check it (its count of cases, or the ImportInputError that
 * refuses it), then, while the worker is still held, gives
 * `keep` its count of cases and the upload's bytes back from the worker, slice by slice: an upload
 * moved over whole (`whole`) is then never in this thread again, and its memory goes with the worker.
 */
export function checkAndKeepInWorker<T>(
  input: HostInput,
  keep: (runs: number, chunks: AsyncIterable<Uint8Array>) => Promise<T>,
): Promise<T> {
  return inWorker(input, 'keep', async (first, next) => {
    let ended = false;
    async function* chunks(): AsyncGenerator<Uint8Array> {
      for (let piece = await next(); piece.op !== 'end'; piece = await next()) {
        if (piece.op !== 'slice') throw new Error(`the import worker sent ${piece.op} among the upload's slices`);
        yield piece.chunk;
      }
      ended = true;
    }
    const result = await keep(first.runs, chunks());
    // A keeper that did not take every slice leaves the worker mid-answer: it is not reused.
    if (!ended) throw new Error('the upload kept was not read to its end');
    return result;
  });
}

/** Reads an upload in a worker: its reports, whole, and the files of its archive. */
export function readInWorker(input: HostInput): Promise<ReadUpload> {
  return inWorker(input, 'full', async (first, next) => {
    const reports = first.reports;
    const files = new Map<string, Uint8Array>();
    for (let piece = await next(); piece.op !== 'end'; piece = await next()) {
      if (piece.op === 'cases') {
        const cases = (reports[piece.report] as ImportedReport).cases;
        for (const testCase of piece.cases) cases.push(testCase);
      } else if (piece.op === 'file') {
        files.set(piece.name, piece.bytes);
      } else {
        throw new Error(`the import worker sent ${piece.op} among its pieces`);
      }
    }
    return { reports, files };
  });
}
