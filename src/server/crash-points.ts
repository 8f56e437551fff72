/**
 * Deterministic crash points for the durability suite (DUR-13b): with
 * `ATTEST_CRASH_AT=<point>:<n>` (honoured only under `NODE_ENV=test`, see config.ts) the process
 * SIGKILLs itself the n-th time it reaches `<point>`, so a test can stop it exactly between two
 * durability steps, which random kills only hit by luck.
 */
export const CRASH_POINTS = [
  // Blob protocol (DUR-6), in FsBlobStore.put.
  'after-fsync-file',
  'after-rename',
  'after-dir-fsync',
  // Artifact rows (DUR-8): inside the transaction before COMMIT, and after COMMIT before the answer.
  'before-commit',
  'after-commit-before-response',
  // Deleting an artifact: the row is gone, its blob stays for garbage collection.
  'after-row-delete',
  // Appending results (DUR-4): the steps are inserted, the transaction is not committed yet.
  'results-mid-transaction',
  // Imports (IMP-4): a batch of runs committed, the import not finished.
  'import-after-batch',
  // Webhooks (HOOK-3): a change committed with its deliveries in the outbox, nothing sent yet.
  'webhook-after-outbox',
] as const;

export type CrashPoint = (typeof CRASH_POINTS)[number];

export interface CrashSpec {
  point: CrashPoint;
  /** Which arrival at the point kills the process, counting from 1. */
  hit: number;
}

/** Parses `<point>:<n>`; undefined when the text is not one. */
export function parseCrashSpec(text: string): CrashSpec | undefined {
  const match = /^([a-z-]+):(\d{1,6})$/.exec(text);
  const point = CRASH_POINTS.find((p) => p === match?.[1]);
  const hit = Number(match?.[2]);
  return point && hit >= 1 ? { point, hit } : undefined;
}

/**
 * The function code calls at each crash point. Without a spec it does nothing; with one it counts
 * arrivals at the named point and SIGKILLs the process (no handlers, no flushing) at the n-th.
 */
export function crashTrigger(spec: CrashSpec | undefined): (point: CrashPoint) => void {
  if (!spec) return () => {};
  let arrivals = 0;
  return (point) => {
    if (point !== spec.point || ++arrivals !== spec.hit) return;
    process.stderr.write(`attest: ATTEST_CRASH_AT reached ${point}:${arrivals}; killing the process\n`);
    process.kill(process.pid, 'SIGKILL');
  };
}
