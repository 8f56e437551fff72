import fs from 'node:fs';
import { promisify } from 'node:util';

const fdatasync = promisify(fs.fdatasync);

/** Counters the handle exposes in `stats`; tests read them to prove the barrier (DUR-14). */
export interface SyncCounters {
  /** Commits the driver saw: COMMITs and autocommit writes (it counts them; WalSync reads them). */
  commits: number;
  /** WAL syncs completed. */
  syncs: number;
  /** The commit count the last completed sync covered: every commit up to it is on disk. */
  syncedThrough: number;
}

/** The WAL could not be synced: what was committed since the last sync may be lost, so nothing more is acknowledged. */
export class DurabilityError extends Error {
  override name = 'DurabilityError';
}

/**
 * Group commit for SQLite in WAL mode (DUR-14). The connection runs `synchronous=NORMAL`: a commit
 * writes its frames to the `-wal` file without syncing it, so it costs no fsync on the event loop.
 * `durable()` is the barrier an acknowledgement waits on: it resolves once a WAL sync that began
 * after every commit counted so far has completed. Commits are synchronous (better-sqlite3), so
 * when the counter moves their frames are already written to the file; an fdatasync that starts
 * afterwards puts them on disk. Callers that arrive while a sync runs wait for the next one, so
 * concurrent requests share one sync.
 *
 * The descriptor stays open for the life of the connection: SQLite never unlinks or replaces the
 * WAL while a connection holds the database open (a checkpoint rewrites it from the start, in the
 * same file), and SQLite takes no POSIX locks on it, so this descriptor cannot drop any of its locks.
 */
export class WalSync {
  private running: { covers: number; done: Promise<void> } | undefined;
  private queued: Promise<void> | undefined;
  private failure: DurabilityError | undefined;

  constructor(
    private readonly fd: number,
    readonly counters: SyncCounters,
  ) {}

  /** Closes the descriptor, after the connection closed (SQLite then removed the WAL). */
  close(): void {
    fs.closeSync(this.fd);
  }

  durable(): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    const target = this.counters.commits;
    if (target <= this.counters.syncedThrough) return Promise.resolve();
    if (!this.running) return this.start();
    if (this.running.covers >= target) return this.running.done;
    // The running sync began before this commit: wait for the next, shared with every caller that
    // arrives until it starts.
    const current = this.running.done;
    this.queued ??= current.then(
      () => this.startQueued(),
      () => this.startQueued(),
    );
    return this.queued;
  }

  private startQueued(): Promise<void> {
    this.queued = undefined;
    return this.start();
  }

  private start(): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    const covers = this.counters.commits;
    const done = (async () => {
      try {
        await fdatasync(this.fd);
      } catch (error) {
        // Final, as with a failed fsync anywhere: Linux may have dropped the dirty pages after
        // reporting the error once, so a later sync could succeed without them (PG-FSYNC).
        this.failure = new DurabilityError('syncing the SQLite write-ahead log failed; writes are no longer acknowledged', {
          cause: error,
        });
        throw this.failure;
      } finally {
        this.running = undefined;
      }
      this.counters.syncs++;
      if (covers > this.counters.syncedThrough) this.counters.syncedThrough = covers;
    })();
    this.running = { covers, done };
    return done;
  }
}

/** Makes a directory's entries (a file just created in it) durable. */
export function fsyncDirectory(dir: string): void {
  const fd = fs.openSync(dir, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}
