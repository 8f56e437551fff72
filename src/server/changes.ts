/**
 * What a committed write changed, for answers kept in memory that may show it: completed runs'
 * results (PERF-2), device answers (PERF-5), images' known uses (PERF-6), the owners of resources
 * (PERF-7) and the principals of keys (PERF-1). Services say what they changed; the keepers of
 * those answers listen (`createContext` wires them). Services never see the keepers.
 *
 * Behind a load balancer the other instances keep answers too: every change emitted here is also
 * sent to them (cluster/change-relay.ts, SCALE-3), and a change one of them made arrives here
 * `fromPeer`, runs the same listeners, and is not sent on again.
 */
export type Change =
  /** Runs went (a run, a job's or a test's runs, a project): any kept result, image use or owner may be gone. */
  | { kind: 'runs-deleted' }
  /** A test with no runs went. */
  | { kind: 'test-deleted'; testId: string }
  /** An artifact went, and with it its image links (no run's results show artifacts). */
  | { kind: 'artifact-deleted'; artifactId: string }
  /** A device was written to, or the write failed: its kept answer may be stale either way. */
  | { kind: 'device-written'; deviceId: string }
  /** An image got its stored thumbnail. */
  | { kind: 'thumbnail-stored'; imageId: string }
  /**
   * Who may do what changed (keys, roles, users, memberships, projects): the principals of these
   * keys and users may be stale, or every principal when neither is named.
   */
  | { kind: 'access-changed'; keyIds?: string[]; userIds?: string[] }
  /** This instance may have missed changes of others (its notifications were cut off): anything kept may be stale. */
  | { kind: 'changes-missed' };

/** The keys and users a change of access concerns; neither: everyone. */
export type AccessChanged = Omit<Extract<Change, { kind: 'access-changed' }>, 'kind'>;

export type ChangeListener = (change: Change, fromPeer: boolean) => void;

/** Listeners of changes, called in order, at once, by the code that made the change. */
export class Changes {
  readonly #listeners: ChangeListener[] = [];

  on(listener: ChangeListener): void {
    this.#listeners.push(listener);
  }

  /** `fromPeer`: the change was made by another instance and came through the relay. */
  emit(change: Change, fromPeer = false): void {
    for (const listener of this.#listeners) listener(change, fromPeer);
  }
}

/**
 * Runs a write that may change who can do what, and says so once it has committed, before it is
 * acknowledged, so the very next request sees its effect here and on every other instance. The
 * write names the keys and users it concerns through `concerns` as it finds them; one that names
 * none concerns everyone. A write that failed says so for everyone (it may have failed after its
 * commit): the cost is one query per key in use, once.
 */
export async function changingAccess<T>(changes: Changes, write: (concerns: (affected: AccessChanged) => void) => Promise<T>): Promise<T> {
  const keyIds: string[] = [];
  const userIds: string[] = [];
  let named = false;
  let result: T;
  try {
    result = await write((affected) => {
      named = true;
      keyIds.push(...(affected.keyIds ?? []));
      userIds.push(...(affected.userIds ?? []));
    });
  } catch (error) {
    changes.emit({ kind: 'access-changed' });
    throw error;
  }
  changes.emit(named ? { kind: 'access-changed', keyIds, userIds } : { kind: 'access-changed' });
  return result;
}
