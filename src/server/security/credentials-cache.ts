/**
 * Principals by key digest, so a request with a known key costs no query (PERF-1). Only
 * successful lookups are kept, and only as long as nothing that decides access has changed: every
 * write to users, keys, roles or memberships says so once it has committed (`changingAccess` in
 * changes.ts), here and on every other instance (SCALE-3), and `forget` drops the principals of
 * the keys and users it names, or every principal.
 *
 * A lookup takes a `ticket()` before it reads the database and stores its answer with it; an
 * answer read while a change was committing carries an older ticket and is not kept. Expiry is
 * checked on every hit, since time passes without any write: each entry keeps, as a number, its
 * key's expiry or the end of its time to live, whichever comes first. The time to live
 * (`ATTEST_CACHE_TTL_SECONDS`) bounds what a lost notification from another instance can cost.
 */
/** Keys kept at once: far more than the keys in active use on one instance. */
export const CREDENTIALS_CACHE_ENTRIES = 10_000;

/** What the cache needs to know of a principal: whose key it is. */
interface Holder {
  user: { id: string };
  key: { id: string };
}

export class CredentialsCache<Principal extends Holder> {
  #generation = 0;
  readonly #entries = new Map<string, { principal: Principal; expiresAtMs: number }>();

  /** `keeping`: whether answers are kept at all (`ATTEST_ANSWER_CACHES`, PERF-8); off, nothing is found or stored. */
  constructor(
    private readonly capacity: number,
    private readonly ttlMs = Number.POSITIVE_INFINITY,
    private readonly keeping: { readonly on: boolean } = { on: true },
  ) {}

  /** The generation a lookup starts in; pass it back to `store`. */
  ticket(): number {
    return this.#generation;
  }

  /** The principal kept for `key`, unless its key has expired, or its time to live ended, by `nowMs`. */
  get(key: string, nowMs: number): Principal | undefined {
    const entry = this.keeping.on ? this.#entries.get(key) : undefined;
    return entry !== undefined && nowMs < entry.expiresAtMs ? entry.principal : undefined;
  }

  /**
   * Keeps `principal` until `keyExpiresAtMs` (Infinity: a key without expiry) or the time to live
   * from `nowMs`, whichever comes first, unless access changed since `ticket` was taken; the oldest
   * entry makes room.
   */
  store(key: string, principal: Principal, ticket: number, keyExpiresAtMs: number, nowMs: number): void {
    if (ticket !== this.#generation || this.capacity === 0 || !this.keeping.on) return;
    if (this.#entries.size >= this.capacity) {
      const oldest = this.#entries.keys().next().value;
      if (oldest !== undefined) this.#entries.delete(oldest);
    }
    this.#entries.set(key, { principal, expiresAtMs: Math.min(keyExpiresAtMs, nowMs + this.ttlMs) });
  }

  /**
   * Access may have changed for these keys and users, or for anyone when neither is given: forget
   * their principals, and refuse every answer read before now (a lookup under way cannot tell
   * whose it is until it has read it).
   */
  forget(affected: { keyIds?: readonly string[]; userIds?: readonly string[] } = {}): void {
    this.#generation++;
    const { keyIds, userIds } = affected;
    if (keyIds === undefined && userIds === undefined) {
      this.#entries.clear();
      return;
    }
    for (const [key, { principal }] of this.#entries) {
      if (keyIds?.includes(principal.key.id) || userIds?.includes(principal.user.id)) this.#entries.delete(key);
    }
  }

  get size(): number {
    return this.#entries.size;
  }
}
