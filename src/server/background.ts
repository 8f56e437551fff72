import { randomUUID } from 'node:crypto';

// Background work through the database (SCALE-5): tasks are rows, and any instance claims a due
// one for a lease, renews it while it runs, and deletes (or reschedules) it when done. An instance
// that dies keeps its lease only until it runs out; then another claims the task. The runner is
// the same on both dialects; the store behind it (db/repositories/tasks.ts) claims with
// `FOR UPDATE SKIP LOCKED` on PostgreSQL and with one `UPDATE … RETURNING` on SQLite.

/** A claimed task, as its handler sees it. */
export interface Task {
  id: string;
  kind: string;
  key: string;
  /** The JSON it was enqueued with, parsed. */
  payload: unknown;
  /** Times claimed since it last succeeded, this claim included. */
  attempts: number;
  lastError: string | null;
}

/** A task to add: nothing is added when a task with its `key` is there already. */
export interface NewTask {
  kind: string;
  key: string;
  payload?: unknown;
  /** Due from then on; now by default. */
  runAt?: Date;
}

/** A claimed task's row, as the store reads it (payload still JSON text). */
export type ClaimedTask = Omit<Task, 'payload'> & { payload: string };

/**
 * The queue's storage: the port the runner uses, which `db/repositories/tasks.ts` implements.
 * Every call that changes a claimed task names its owner and changes nothing when another
 * instance holds the task by now (a lease that ran out): a late writer cannot undo its successor.
 */
export interface TaskStore {
  /** Whether other processes share the queue (PostgreSQL): then an idle runner polls. */
  readonly shared: boolean;
  /** Adds a task unless its key is taken; true when added. */
  add(task: { kind: string; key: string; payload: string; runAt: Date; now: Date }): Promise<boolean>;
  /** A periodic task's row: added due at `dueBy`, or brought forward to it when it is due later. */
  schedule(kind: string, key: string, dueBy: Date, now: Date): Promise<void>;
  /** Removes a task by key (a periodic task switched off). */
  remove(key: string): Promise<void>;
  /** The oldest due task of these kinds that no live lease holds, now leased to `owner`. */
  claim(owner: string, kinds: readonly string[], now: Date, leaseUntil: Date): Promise<ClaimedTask | undefined>;
  /** Extends the lease; false when `owner` no longer holds the task. */
  renew(id: string, owner: string, leaseUntil: Date): Promise<boolean>;
  /** Deletes a finished task. */
  finish(id: string, owner: string): Promise<void>;
  /** Gives the task back: due at `runAt`, with `attempts` and `lastError` as given. */
  release(id: string, owner: string, next: { runAt: Date; attempts: number; lastError: string | null }): Promise<void>;
  /** When the next task of these kinds becomes claimable (its due time, or its lease's end); undefined: none. */
  nextClaimable(kinds: readonly string[]): Promise<Date | undefined>;
  /** At the runner's start: on SQLite, where one process owns the folder, any lease is a dead process's. */
  recover(): Promise<void>;
  /** Closes what the store opened for itself (its own connections). */
  close(): Promise<void>;
}

/**
 * How runners on the other instances hear of new tasks at once rather than at their next poll
 * (PostgreSQL: the notification bus, SCALE-3). At most once: a poll finds what a lost one announced.
 */
export interface TaskPeers {
  /** Tells the other instances that tasks were added (after they committed). */
  announce(): void;
  /** Runs `listener` when another instance announced tasks, or when announcements may have been missed. */
  listen(listener: () => void): void;
}

/** What a handler holds while it runs: whether the task is still its own. */
export interface Lease {
  /**
   * False once the lease is lost (another instance may have the task) or about to run out
   * unrenewed, or this instance is stopping: stop at the next safe point and throw
   * `TaskInterrupted`, leaving the rest to whoever claims the task next.
   */
  stillHeld(): boolean;
  /** Aborted when `stillHeld()` turns false, for work that takes a signal. */
  signal: AbortSignal;
}

export type TaskHandler = (task: Task, lease: Lease) => Promise<void>;

/** A handler stopped at a safe point because its lease was lost or the instance is stopping: the task stays queued. */
export class TaskInterrupted extends Error {
  override name = 'TaskInterrupted';
}

interface Registration {
  handler: (task: Task, lease: Lease) => Promise<unknown>;
  /** A periodic task's period; undefined for tasks run once. */
  everyMs?: number;
  /** Called once when a task of this kind is given up (attempts used), before it is deleted. */
  gaveUp?: (task: Task) => Promise<void>;
}

/** The logger the runner writes to (pino's shape). */
export type TaskLog = Record<'error' | 'warn', (object: object, message: string) => void>;

export interface TaskRunnerOptions {
  store: TaskStore;
  log: TaskLog;
  leaseMs: number;
  /** How often an idle runner looks for due tasks when other processes share the queue. */
  pollMs: number;
  /** The other instances' runners, told of new tasks (none on SQLite). */
  peers?: TaskPeers;
  /** Claims a task may take before it is given up (a task that keeps failing or killing its instance); 5. */
  maxAttempts?: number;
  /** The first retry's delay after a failure (30 s), doubled for each further attempt, up to an hour. */
  retryMs?: number;
  /** Wall-clock time: leases are between processes, never on a test's moved clock. */
  now?: () => number;
}

const MAX_RETRY_MS = 3_600_000;
/** The longest an idle runner sleeps on a queue nobody else writes to (a timer's limit is 2^31 ms). */
const MAX_SLEEP_MS = 3_600_000;

/**
 * Runs this instance's share of the background tasks, one at a time: an import takes the event
 * loop and the database's writer in turns with requests, and two at once on one instance would
 * only slow both (more instances are how more imports run at once). Handlers are registered by
 * kind before `start()`; a task of a kind this instance has no handler for is left to one that has.
 */
export class TaskRunner {
  /** This process's owner id in the leases it takes. */
  readonly instanceId = randomUUID();
  private readonly store: TaskStore;
  private readonly log: TaskLog;
  private readonly peers: TaskPeers | undefined;
  private readonly leaseMs: number;
  private readonly pollMs: number;
  private readonly maxAttempts: number;
  private readonly retryMs: number;
  private readonly now: () => number;
  private readonly kinds = new Map<string, Registration>();
  private readonly switchedOff = new Set<string>();
  private loop: Promise<void> | undefined;
  private stopped = false;
  /** Set by `wake()`: look again before sleeping. */
  private woken = false;
  private wakeSleeper: (() => void) | undefined;
  /** True while the runner sleeps after finding nothing to claim; `idle()` waits for it. */
  private sleeping = false;
  private readonly idleWaiters: (() => void)[] = [];
  /** The lease of the task running now, which `stop()` ends. */
  private current: { abort: AbortController } | undefined;

  constructor(options: TaskRunnerOptions) {
    ({ store: this.store, log: this.log, peers: this.peers, leaseMs: this.leaseMs, pollMs: this.pollMs } = options);
    ({ maxAttempts: this.maxAttempts = 5, retryMs: this.retryMs = 30_000, now: this.now = Date.now } = options);
    this.peers?.listen(() => this.wake());
  }

  /** Runs tasks of `kind` with `handler`; `gaveUp` hears of one given up after its last attempt. */
  handle(kind: string, handler: TaskHandler, options: { gaveUp?: (task: Task) => Promise<void> } = {}): void {
    this.kinds.set(kind, { handler, gaveUp: options.gaveUp });
  }

  /**
   * Runs `handler` every `everyMs` on one instance at a time (0: never, and an earlier schedule is
   * removed). The period counts from the end of the last run, on whichever instance ran it; a failed
   * run is logged and tried again a period later; one that answers a number of ms runs again that soon (at most the period).
   */
  every(kind: string, everyMs: number, handler: (lease: Lease) => Promise<unknown>): void {
    if (everyMs <= 0) {
      this.kinds.delete(kind);
      this.switchedOff.add(kind);
      return;
    }
    this.switchedOff.delete(kind);
    this.kinds.set(kind, { handler: (_task, lease) => handler(lease), everyMs });
  }

  /** The wall-clock time tasks are due by: a task enqueued with this as `runAt` is due at once. */
  time(): Date {
    return new Date(this.now());
  }

  /** Adds a task (unless its key is queued already), wakes this runner and tells the others. */
  async enqueue(task: NewTask): Promise<boolean> {
    const now = new Date(this.now());
    const added = await this.store.add({
      kind: task.kind,
      key: task.key,
      payload: JSON.stringify(task.payload ?? {}),
      runAt: task.runAt ?? now,
      now,
    });
    if (added) this.announce();
    this.wake();
    return added;
  }

  /** Tells the other instances' runners that tasks were added: a service that enqueued in its own transaction calls it after the commit. */
  announce(): void {
    this.peers?.announce();
  }

  /** Looks for due tasks now rather than at the next poll: a task was added (here, or by another instance). */
  wake(): void {
    this.woken = true;
    this.wakeSleeper?.();
  }

  /** Starts claiming tasks: the periodic ones are scheduled, then the loop runs until `stop()`. */
  start(): void {
    if (this.loop || this.stopped) return;
    this.loop = this.run();
  }

  /**
   * Resolves when this instance has no due task to run: none running, and the last look found
   * none due that no other instance holds (tests wait on it after an enqueue).
   */
  async idle(): Promise<void> {
    for (;;) {
      if (!this.loop || this.stopped) return;
      if (!this.sleeping || this.woken) {
        await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
        continue;
      }
      const next = await this.store.nextClaimable(this.handledKinds());
      if (next === undefined || next.getTime() > this.now()) return;
      this.wake();
    }
  }

  /** Runs no more tasks; the running one is told to stop (its lease then ends) and waited for. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.current?.abort.abort();
    this.wakeSleeper?.();
    await this.loop;
    for (const resolve of this.idleWaiters.splice(0)) resolve();
    await this.store.close();
  }

  private handledKinds(): string[] {
    return [...this.kinds.keys()];
  }

  private async run(): Promise<void> {
    try {
      await this.store.recover();
      for (const kind of this.switchedOff) await this.store.remove(periodicKey(kind));
      for (const [kind, registration] of this.kinds) {
        if (registration.everyMs === undefined) continue;
        const now = this.now();
        await this.store.schedule(kind, periodicKey(kind), new Date(now + registration.everyMs), new Date(now));
      }
    } catch (error) {
      this.log.error({ err: error }, 'the background tasks could not be prepared; they are tried at the next look');
    }
    while (!this.stopped) {
      this.woken = false;
      let ran = false;
      try {
        ran = await this.claimAndRun();
      } catch (error) {
        this.log.error({ err: error }, 'looking for background tasks failed');
      }
      if (ran || this.woken || this.stopped) continue;
      await this.sleep();
    }
  }

  /** Claims one due task and runs it; false when there was none. */
  private async claimAndRun(): Promise<boolean> {
    const kinds = this.handledKinds();
    if (kinds.length === 0) return false;
    const now = this.now();
    const claimed = await this.store.claim(this.instanceId, kinds, new Date(now), new Date(now + this.leaseMs));
    if (!claimed) return false;
    const registration = this.kinds.get(claimed.kind) as Registration;
    let task: Task;
    try {
      task = { ...claimed, payload: JSON.parse(claimed.payload) as unknown };
    } catch (error) {
      // Never runnable: given up at once (its kind's `gaveUp` could not read it either), not retried forever.
      await this.giveUp({ ...claimed, payload: undefined, lastError: `its payload is not JSON: ${(error as Error).message}` });
      return true;
    }
    if (registration.everyMs === undefined && task.attempts > this.maxAttempts) {
      // Claimed that often without finishing: its runs died with their instances, or kept failing.
      await this.giveUp(task, registration);
      return true;
    }
    await this.execute(task, registration, now + this.leaseMs);
    return true;
  }

  private async execute(task: Task, registration: Registration, leaseUntil: number): Promise<void> {
    const abort = new AbortController();
    this.current = { abort };
    let heldUntil = leaseUntil;
    // Renewed every third of the lease; a lease with less than a third left (two renewals missed)
    // counts as lost already, so the handler stops while the lease still covers its last step.
    const margin = this.leaseMs / 3;
    const lease: Lease = {
      stillHeld: () => {
        // Once aborted, never held again: a renewal that answers late does not undo the handler's stop.
        if (!abort.signal.aborted && !this.stopped && heldUntil - this.now() >= margin) return true;
        abort.abort();
        return false;
      },
      signal: abort.signal,
    };
    const renewal = setInterval(() => {
      const until = this.now() + this.leaseMs;
      this.store.renew(task.id, this.instanceId, new Date(until)).then(
        (held) => {
          // Renewals that overlap may answer out of order: the lease ends at the latest one's end.
          if (held) heldUntil = Math.max(heldUntil, until);
          else abort.abort();
        },
        (error: unknown) => this.log.warn({ err: error, task: task.key }, 'a background task lease could not be renewed'),
      );
    }, margin);
    renewal.unref();
    let outcome: { ok: true; againInMs?: number } | { ok: false; error: unknown };
    try {
      const again = await registration.handler(task, lease);
      outcome = { ok: true, againInMs: typeof again === 'number' ? again : undefined };
    } catch (error) {
      outcome = { ok: false, error };
    } finally {
      clearInterval(renewal);
      this.current = undefined;
    }
    if (outcome.ok) await this.succeeded(task, registration, outcome.againInMs);
    // Interrupted is not the task's fault: this claim does not count, and the task is due again at once.
    else if (outcome.error instanceof TaskInterrupted) await this.release(task, 0, task.attempts - 1, task.lastError);
    else await this.failed(task, registration, outcome.error);
  }

  /** Ends the lease: the task is due again in `afterMs`. */
  private release(task: Task, afterMs: number, attempts: number, lastError: string | null): Promise<void> {
    return this.store.release(task.id, this.instanceId, { runAt: new Date(this.now() + afterMs), attempts, lastError });
  }

  private async succeeded(task: Task, registration: Registration, againInMs: number | undefined): Promise<void> {
    if (registration.everyMs === undefined) await this.store.finish(task.id, this.instanceId);
    else await this.release(task, Math.max(0, Math.min(registration.everyMs, againInMs ?? registration.everyMs)), 0, null);
  }

  private async failed(task: Task, registration: Registration, error: unknown): Promise<void> {
    const message = error instanceof Error ? error.message : String(error);
    this.log.error({ err: error, task: task.key, attempts: task.attempts }, `background task ${task.kind} failed`);
    if (registration.everyMs !== undefined) await this.release(task, registration.everyMs, 0, message);
    else if (task.attempts >= this.maxAttempts) await this.giveUp({ ...task, lastError: message }, registration);
    else await this.release(task, Math.min(this.retryMs * 2 ** (task.attempts - 1), MAX_RETRY_MS), task.attempts, message);
  }

  private async giveUp(task: Task, registration?: Registration): Promise<void> {
    this.log.error({ task: task.key, attempts: task.attempts, lastError: task.lastError }, `background task ${task.kind} given up`);
    try {
      await registration?.gaveUp?.(task);
    } finally {
      await this.store.finish(task.id, this.instanceId);
    }
  }

  /** Sleeps until woken, stopped, or the next poll (a shared queue) or the next task's due time (a queue of its own). */
  private async sleep(): Promise<void> {
    let ms = this.pollMs;
    if (!this.store.shared) {
      // Nobody else adds tasks: sleep until the next one is due, or until woken by an enqueue.
      try {
        const next = await this.store.nextClaimable(this.handledKinds());
        ms = next === undefined ? MAX_SLEEP_MS : Math.min(MAX_SLEEP_MS, Math.max(0, next.getTime() - this.now()));
      } catch (error) {
        this.log.error({ err: error }, 'looking for background tasks failed');
      }
    }
    if (this.woken || this.stopped) return;
    this.sleeping = true;
    for (const resolve of this.idleWaiters.splice(0)) resolve();
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      timer.unref();
      this.wakeSleeper = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    this.wakeSleeper = undefined;
    this.sleeping = false;
  }
}

/** The key of a periodic task's one row. */
export const periodicKey = (kind: string) => `periodic:${kind}`;
