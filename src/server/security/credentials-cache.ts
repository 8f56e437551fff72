/**
 * Principals by key digest, so a request with a known key costs no query (PERF-1). Only
 * successful lookups are kept, and only as long as nothing that decides access has changed: every
 * write to users, keys, roles or memberships calls `invalidate()` once it has committed, which
 * drops every entry. One process owns a data folder and its database (`lockDataDir`), so no other
 * writer can change access behind this process's back.
 *
 * A lookup takes a `ticket()` before it reads the database and stores its answer with it; an
 * answer read while a change was committing carries an older ticket and is not kept. Expiry is
 * checked on every hit, since time passes without any write: each entry keeps its key's expiry
 * as a number, so a hit compares two numbers rather than formatting the time.
 */
/** Keys kept at once: far more than the keys in active use on one instance. */
export const CREDENTIALS_CACHE_ENTRIES = 10_000;

export class CredentialsCache<Principal> {
  #generation = 0;
  readonly #entries = new Map<string, { principal: Principal; expiresAtMs: number }>();

  constructor(private readonly capacity: number) {}

  /** The generation a lookup starts in; pass it back to `store`. */
  ticket(): number {
    return this.#generation;
  }

  /** The principal kept for `key`, unless its key has expired by `nowMs`. */
  get(key: string, nowMs: number): Principal | undefined {
    const entry = this.#entries.get(key);
    return entry !== undefined && nowMs < entry.expiresAtMs ? entry.principal : undefined;
  }

  /**
   * Keeps `principal` until `expiresAtMs` (Infinity: a key without expiry), unless access changed
   * since `ticket` was taken; the oldest entry makes room.
   */
  store(key: string, principal: Principal, ticket: number, expiresAtMs: number): void {
    if (ticket !== this.#generation || this.capacity === 0) return;
    if (this.#entries.size >= this.capacity) {
      const oldest = this.#entries.keys().next().value;
      if (oldest !== undefined) this.#entries.delete(oldest);
    }
    this.#entries.set(key, { principal, expiresAtMs });
  }

  /** Access may have changed: forget everything, and refuse answers read before now. */
  invalidate(): void {
    this.#generation++;
    this.#entries.clear();
  }

  get size(): number {
    return this.#entries.size;
  }
}

/**
 * Runs a write that may change who can do what (roles, keys, users, memberships, projects), and
 * empties the credentials cache after it, whether it committed or failed, so the very next request
 * sees its effect.
 */
export async function changingAccess<T>(cache: { invalidate(): void }, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } finally {
    cache.invalidate();
  }
}
