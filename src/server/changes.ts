/**
 * What a committed write changed, for answers kept in memory that may show it: completed runs'
 * results (PERF-2), device answers (PERF-5), images' known uses (PERF-6) and the owners of
 * resources (PERF-7). Services say what they changed; the keepers of those answers, which live in
 * the HTTP layer, listen (`createContext` wires them). Services never see the keepers.
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
  | { kind: 'thumbnail-stored'; imageId: string };

/** Listeners of changes, called in order, at once, by the code that made the change. */
export class Changes {
  readonly #listeners: ((change: Change) => void)[] = [];

  on(listener: (change: Change) => void): void {
    this.#listeners.push(listener);
  }

  emit(change: Change): void {
    for (const listener of this.#listeners) listener(change);
  }
}
