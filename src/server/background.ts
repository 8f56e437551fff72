import { randomUUID } from 'node:crypto';
import { type Lease, runUnderLease, TaskInterrupted, type TaskTimedOut } from './background/lease.ts';
import type { Task, TaskPeers, TaskStore } from './background/store.ts';

export { type HeldLease, type Lease, type TaskHold, TaskInterrupted, TaskTimedOut } from './background/lease.ts';
export type { ClaimedTask, Task, TaskPeers, TaskStore } from './background/store.ts';

// Background work through the database (SCALE-5): tasks are rows, and any instance claims a due
// one for a lease, renews it while it runs, and deletes (or reschedules) it when done. An instance
// that dies keeps its lease only until it runs out; then another claims the task. The runner is
// the same on both dialects; the store behind it (db/repositories/tasks.ts) claims with
// `FOR UPDATE SKIP LOCKED` on PostgreSQL and with one `UPDATE … RETURNING` on SQLite. Each kind
// of task has a lane of its own, one task at a time in it, and every task a time limit (SCALE-9):
// a slow or stuck task delays only the tasks of its own kind, and only until its limit.

/** A task to add: nothing is added when a task with its `key` is there already. */
export interface NewTask {
  kind: string;
  key: string;
  payload?: unknown;
  /** Due from then on; now by default. */
  runAt?: Date;
}

export type TaskHandler = (task: Task, lease: Lease) => Promise<void>;

/**
 * Called once when a task is given up, before it is deleted: `cause` is what ended its last
 * attempt (a TaskTimedOut when it ran past its time limit; undefined when its attempts were used
 * by instances that died with it).
 */
export type GaveUp = (task: Task, cause?: unknown) => Promise<void>;

interface Registration {
  handler: (task: Task, lease: Lease) => Promise<unknown>;
  /** A periodic task's period; undefined for tasks run once. */
  everyMs?: number;
  gaveUp?: GaveUp;
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
  /**
   * The longest a task may run (15 minutes; `ATTEST_TASK_TIMEOUT_SECONDS`): then its lease's
   * signal aborts with a TaskTimedOut, and it fails (a task run once is given up at once; a periodic
   * one runs again a period later).
   */
  timeoutMs?: number;
  /**
   * How long a handler told to stop (its time limit, a lost lease, `stop()`) is waited for before
   * the runner stops waiting, frees its lane and ends its lease itself (a third of the lease).
   */
  abandonMs?: number;
  /** Wall-clock time: leases are between processes, never on a test's moved clock. */
  now?: () => number;
}

/** A task running in its lane: its lease's controller, and its end (its outcome recorded). */
interface Running {
  abort: AbortController;
  done: Promise<void>;
}

const MAX_RETRY_MS = 3_600_000;
/** The longest an idle runner sleeps on a queue nobody else writes to (a timer's limit is 2^31 ms). */
const MAX_SLEEP_MS = 3_600_000;

/**
 * Runs this instance's share of the background tasks, one of each kind at a time (SCALE-9): each
 * kind is a lane, so an import (which takes the event loop and the database's writer in turns with
 * requests; two at once on one instance would only slow both, and more instances are how more
 * imports run at once) never delays a webhook delivery, a retention sweep or a garbage collection.
 * One loop claims for every lane that is free, so an idle instance still asks the database once a
 * poll. Handlers are registered by kind before `start()`; a task of a kind this instance has no
 * handler for is left to one that has.
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
  private readonly timeoutMs: number;
  private readonly abandonMs: number;
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
  /** The tasks running now, by kind (each kind's lane runs one at a time); `stop()` ends them. */
  private readonly running = new Map<string, Running>();

  constructor(options: TaskRunnerOptions) {
    ({ store: this.store, log: this.log, peers: this.peers, leaseMs: this.leaseMs, pollMs: this.pollMs } = options);
    ({ maxAttempts: this.maxAttempts = 5, retryMs: this.retryMs = 30_000, now: this.now = Date.now } = options);
    ({ timeoutMs: this.timeoutMs = 900_000, abandonMs: this.abandonMs = options.leaseMs / 3 } = options);
    this.peers?.listen(() => this.wake());
  }

  /** Runs tasks of `kind` with `handler`; `gaveUp` hears of one given up (its attempts used, or past its time limit). */
  handle(kind: string, handler: TaskHandler, options: { gaveUp?: GaveUp } = {}): void {
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

  /** Every kind registered, the periodic ones switched off (period 0) included, in the order registered. */
  registeredKinds(): string[] {
    return [...new Set([...this.kinds.keys(), ...this.switchedOff])];
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
      if (!this.sleeping || this.woken || this.running.size > 0) {
        await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
        continue;
      }
      const next = await this.store.nextClaimable(this.handledKinds());
      if (next === undefined || next.getTime() > this.now()) return;
      this.wake();
    }
  }

  /**
   * Runs no more tasks; the running ones are told to stop (their leases then end) and waited for,
   * each at most `abandonMs` once told.
   */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    for (const { abort } of this.running.values()) abort.abort();
    this.wakeSleeper?.();
    await this.loop;
    await Promise.all([...this.running.values()].map(({ done }) => done));
    for (const resolve of this.idleWaiters.splice(0)) resolve();
    await this.store.close();
  }

  private handledKinds(): string[] {
    return [...this.kinds.keys()];
  }

  /** The kinds whose lane has no task running: the ones a claim may take. */
  private freeKinds(): string[] {
    return this.handledKinds().filter((kind) => !this.running.has(kind));
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

  /** Claims one due task of a free lane and starts it there (not waited for); false when there was none. */
  private async claimAndRun(): Promise<boolean> {
    const kinds = this.freeKinds();
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
    const abort = new AbortController();
    const done = this.execute(task, registration, now + this.leaseMs, abort)
      .catch((error: unknown) => this.log.error({ err: error, task: task.key }, `background task ${task.kind} could not be ended`))
      .finally(() => {
        this.running.delete(task.kind);
        // Its lane is free: a task of its kind may be due.
        this.wake();
      });
    this.running.set(task.kind, { abort, done });
    // Claimed while `stop()` was telling the running tasks to stop: told too.
    if (this.stopped) abort.abort();
    return true;
  }

  private async execute(task: Task, registration: Registration, leaseUntil: number, abort: AbortController): Promise<void> {
    const outcome = await runUnderLease(
      {
        kind: task.kind,
        leaseMs: this.leaseMs,
        leaseUntil,
        timeoutMs: this.timeoutMs,
        abandonMs: this.abandonMs,
        now: this.now,
        renew: (until) => this.store.renew(task.id, this.instanceId, until),
        stopping: () => this.stopped,
        abort,
        renewalFailed: (error) => this.log.warn({ err: error, task: task.key }, 'a background task lease could not be renewed'),
      },
      (lease) => registration.handler(task, lease),
    );
    const abandoned = 'abandoned' in outcome;
    if (abandoned) {
      this.log.warn(
        { task: task.key, abandonMs: this.abandonMs },
        `background task ${task.kind} did not stop when told; left to end on its own`,
      );
    }
    if (outcome.ok) await this.succeeded(task, registration, typeof outcome.value === 'number' ? outcome.value : undefined);
    else if (outcome.timedOut) await this.timedOut(task, registration, outcome.timedOut);
    else if (abandoned) {
      // Told to stop (a lost lease, or the instance stopping) and did not: this claim counts.
      const message = `it did not stop within ${this.abandonMs} ms of being told to`;
      await this.release(task, 0, registration.everyMs === undefined ? task.attempts : 0, message);
    }
    // Interrupted is not the task's fault: this claim does not count, and the task is due again at once.
    else if ('error' in outcome && outcome.error instanceof TaskInterrupted) await this.release(task, 0, task.attempts - 1, task.lastError);
    else await this.failed(task, registration, 'error' in outcome ? outcome.error : undefined);
  }

  /** Past its time limit: a periodic task runs again a period later; a task run once is given up at once (it would only take as long again). */
  private async timedOut(task: Task, registration: Registration, error: TaskTimedOut): Promise<void> {
    this.log.error({ err: error, task: task.key, attempts: task.attempts }, `background task ${task.kind} ran past its time limit`);
    if (registration.everyMs !== undefined) await this.release(task, registration.everyMs, 0, error.message);
    else await this.giveUp({ ...task, lastError: error.message }, registration, error);
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
    else if (task.attempts >= this.maxAttempts) await this.giveUp({ ...task, lastError: message }, registration, error);
    else await this.release(task, Math.min(this.retryMs * 2 ** (task.attempts - 1), MAX_RETRY_MS), task.attempts, message);
  }

  private async giveUp(task: Task, registration?: Registration, cause?: unknown): Promise<void> {
    this.log.error({ task: task.key, attempts: task.attempts, lastError: task.lastError }, `background task ${task.kind} given up`);
    try {
      await registration?.gaveUp?.(task, cause);
    } finally {
      await this.store.finish(task.id, this.instanceId);
    }
  }

  /**
   * Sleeps until woken (an enqueue, a lane freed), stopped, or the next poll (a shared queue) or
   * the next task's due time (a queue of its own). With every lane busy there is nothing to poll for.
   */
  private async sleep(): Promise<void> {
    const kinds = this.freeKinds();
    let ms = kinds.length === 0 ? MAX_SLEEP_MS : this.pollMs;
    if (!this.store.shared && kinds.length > 0) {
      // Nobody else adds tasks: sleep until the next one is due, or until woken by an enqueue.
      try {
        const next = await this.store.nextClaimable(kinds);
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
