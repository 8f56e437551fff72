import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/**
 * WAL pages after which the serving connection checkpoints by itself: a backstop for a worker that
 * fell behind or failed (SQLite's default is 1,000 pages, about 4 MB).
 */
export const BACKSTOP_CHECKPOINT_PAGES = 16_000;
/** How often the worker is asked to checkpoint while commits keep coming. */
const CHECKPOINT_EVERY_MS = 500;

/** The worker: its own connection to the file, a PASSIVE checkpoint per message. CommonJS, run by `eval`. */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
let db;
parentPort.on('message', (message) => {
  if (message === 'close') {
    if (db) db.close();
    parentPort.close();
    return;
  }
  try {
    db ??= new Database(workerData.file, { fileMustExist: true });
    db.pragma('wal_checkpoint(PASSIVE)');
    parentPort.postMessage({ ok: true });
  } catch (error) {
    parentPort.postMessage({ ok: false, error: String((error && error.message) || error) });
  }
});
`;

/**
 * Checkpoints the SQLite write-ahead log from a second connection in a worker thread. Left to
 * SQLite, the commit that crosses 1,000 WAL pages copies them into the database file and syncs
 * it, on the event loop, while every other request waits (in a workload of whole runs, 66 of
 * 1,003 commits took over 5 ms; docs/performance.md). Here a PASSIVE checkpoint, which never
 * blocks a writer, runs beside the server every half second while commits come in; the serving
 * connection checkpoints by itself only past BACKSTOP_CHECKPOINT_PAGES. Crash safety is SQLite's:
 * a checkpoint interrupted anywhere is redone from the WAL on the next open.
 */
export class WalCheckpointer {
  private worker: Worker | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** The checkpoint asked for and not yet answered; settles when the worker answers, fails or ends. */
  private inFlight: { done: Promise<void>; settle: () => void } | undefined;
  private seenCommits = 0;
  private failed = false;
  private closed = false;
  /** Checkpoints the worker completed (tests read it). */
  completed = 0;

  constructor(
    private readonly file: string,
    private readonly commits: () => number,
    private readonly onFailure: (error: Error) => void,
  ) {
    this.seenCommits = commits();
    this.timer = setInterval(() => this.tick(), CHECKPOINT_EVERY_MS);
    this.timer.unref();
  }

  /** Asks for a checkpoint now if commits came in since the last one (tests, and the timer). */
  tick(): void {
    if (this.closed || this.failed || this.inFlight) return;
    const commits = this.commits();
    if (commits === this.seenCommits) return;
    this.seenCommits = commits;
    let settle!: () => void;
    const done = new Promise<void>((resolve) => {
      settle = resolve;
    });
    this.inFlight = { done, settle };
    this.start().postMessage('checkpoint');
  }

  /** Resolves once no checkpoint is in flight. */
  async idle(): Promise<void> {
    await this.inFlight?.done;
  }

  private settle(): void {
    this.inFlight?.settle();
    this.inFlight = undefined;
  }

  /** Stops the timer and the worker; call before the serving connection closes. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    this.timer = undefined;
    const worker = this.worker;
    this.worker = undefined;
    if (!worker) return;
    const exited = new Promise((resolve) => worker.once('exit', resolve));
    // Held until it has closed its connection: an unreferenced worker would not keep the process up for that.
    worker.ref();
    worker.postMessage('close');
    await exited;
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { file: this.file, driver },
      resourceLimits: { maxOldGenerationSizeMb: 8, maxYoungGenerationSizeMb: 1, codeRangeSizeMb: 2 },
    });
    worker.unref();
    worker.on('message', (message: { ok: boolean; error?: string }) => {
      this.settle();
      if (message.ok) this.completed++;
      else this.fail(new Error(`a WAL checkpoint failed: ${message.error}`));
    });
    // What a worker throws arrives cloned, and not always as an Error.
    worker.on('error', (error: unknown) =>
      this.fail(error instanceof Error ? error : new Error(String((error as { message?: unknown } | null)?.message ?? error))),
    );
    worker.on('exit', () => {
      // Ended by close(), or by a failure: close() then has nothing to wait for.
      if (this.worker === worker) this.worker = undefined;
      this.settle();
    });
    this.worker = worker;
    return worker;
  }

  /** The serving connection's own checkpoints (the backstop) carry on; the worker is not asked again. */
  private fail(error: Error): void {
    this.settle();
    if (this.failed) return;
    this.failed = true;
    this.onFailure(error);
  }
}
