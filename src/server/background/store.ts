// The task runner's (../background.ts, SCALE-5) tasks and ports: the queue's storage, which
// db/repositories/tasks.ts implements, and the other instances' runners.

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
