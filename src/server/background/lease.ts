// One claimed background task run under its lease (SCALE-5) and within its time limit (SCALE-9):
// the lease renewed every third of its length while the handler runs, the handler told to stop
// (its lease's signal) when the lease is lost, about to run out, the instance stops or the time
// limit passes, and waited for at most `abandonMs` once told. The runner (../background.ts) then
// records what came of it.

/** What a handler holds while it runs: whether the task is still its own. */
export interface Lease {
  /**
   * False once the lease is lost (another instance may have the task) or about to run out
   * unrenewed, the task ran past its time limit, or this instance is stopping: stop at the next
   * safe point and throw `TaskInterrupted`, leaving the rest to whoever claims the task next.
   */
  stillHeld(): boolean;
  /** Aborted when `stillHeld()` turns false, for work that takes a signal; its reason is a TaskTimedOut past the time limit. */
  signal: AbortSignal;
}

/** A handler stopped at a safe point because its lease was lost or the instance is stopping: the task stays queued. */
export class TaskInterrupted extends Error {
  override name = 'TaskInterrupted';
}

/** Why a task was stopped and failed: it ran past the runner's time limit (the lease's signal aborts with it). */
export class TaskTimedOut extends Error {
  override name = 'TaskTimedOut';
  constructor(
    readonly kind: string,
    readonly limitMs: number,
  ) {
    super(`background task ${kind} ran past its time limit of ${limitMs / 1000} s and was stopped`);
  }
}

/** The terms a task runs on. */
export interface LeaseTerms {
  kind: string;
  leaseMs: number;
  /** When the claim's lease ends. */
  leaseUntil: number;
  timeoutMs: number;
  abandonMs: number;
  now: () => number;
  /** Extends the lease to `until`; false when the task is another's now. */
  renew: (until: Date) => Promise<boolean>;
  /** Whether the instance is stopping. */
  stopping: () => boolean;
  /** The controller behind the lease's signal, which the runner aborts when it stops. */
  abort: AbortController;
  /** Where a renewal that failed is told. */
  renewalFailed: (error: unknown) => void;
}

/** What came of a handler: its answer or its error, or it did not stop when told (`abandoned`); `timedOut` when its limit passed. */
export type LeaseOutcome = ({ ok: true; value: unknown } | { ok: false; error: unknown } | { ok: false; abandoned: true }) & {
  timedOut?: TaskTimedOut;
};

/**
 * Once told to stop, a handler is waited for `abandonMs`: one that does not stop (stuck on a
 * call that takes no signal) is left to settle on its own, and the runner ends its lease.
 * Whatever it writes later is fenced by the lease it no longer holds.
 */
function abandonAfterAbort(signal: AbortSignal, abandonMs: number): { abandoned: Promise<LeaseOutcome>; stop: () => void } {
  let abandon: NodeJS.Timeout | undefined;
  let onAbort = () => {};
  const abandoned = new Promise<LeaseOutcome>((resolve) => {
    onAbort = () => {
      abandon = setTimeout(() => resolve({ ok: false, abandoned: true }), abandonMs);
      abandon.unref();
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
  return {
    abandoned,
    stop: () => {
      signal.removeEventListener('abort', onAbort);
      clearTimeout(abandon);
    },
  };
}

/** Runs `handler` under the lease `terms` describe, until it settles or is abandoned. */
export async function runUnderLease(terms: LeaseTerms, handler: (lease: Lease) => Promise<unknown>): Promise<LeaseOutcome> {
  const { abort, leaseMs, now } = terms;
  let heldUntil = terms.leaseUntil;
  // Renewed every third of the lease; a lease with less than a third left (two renewals missed)
  // counts as lost already, so the handler stops while the lease still covers its last step.
  const margin = leaseMs / 3;
  const lease: Lease = {
    stillHeld: () => {
      // Once aborted, never held again: a renewal that answers late does not undo the handler's stop.
      if (!abort.signal.aborted && !terms.stopping() && heldUntil - now() >= margin) return true;
      abort.abort();
      return false;
    },
    signal: abort.signal,
  };
  const renewal = setInterval(() => {
    const until = now() + leaseMs;
    terms.renew(new Date(until)).then((held) => {
      // Renewals that overlap may answer out of order: the lease ends at the latest one's end.
      if (held) heldUntil = Math.max(heldUntil, until);
      else abort.abort();
    }, terms.renewalFailed);
  }, margin);
  renewal.unref();
  // The time limit: the handler is told to stop, as when its lease is lost, with the reason.
  let timedOut: TaskTimedOut | undefined;
  const limit = setTimeout(() => {
    timedOut = new TaskTimedOut(terms.kind, terms.timeoutMs);
    abort.abort(timedOut);
  }, terms.timeoutMs);
  limit.unref();
  const abandonment = abandonAfterAbort(abort.signal, terms.abandonMs);
  const ran: Promise<LeaseOutcome> = Promise.resolve()
    .then(() => handler(lease))
    .then(
      (value) => ({ ok: true, value }),
      (error: unknown) => ({ ok: false, error }),
    );
  try {
    const outcome = await Promise.race([ran, abandonment.abandoned]);
    return timedOut ? { ...outcome, timedOut } : outcome;
  } finally {
    clearInterval(renewal);
    clearTimeout(limit);
    abandonment.stop();
    // Whatever happens to the task from now on, a handler left running is told it is no longer held.
    abort.abort();
  }
}

/** Whose a claimed task is: the task and the runner that claimed it. */
export interface TaskHold {
  taskId: string;
  owner: string;
}

/** The lease of a claimed task, and whose it is: what a handler that checks its hold in each transaction gets. */
export type HeldLease = Lease & TaskHold;
