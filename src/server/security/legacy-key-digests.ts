import { keyDigest } from './api-key.ts';

/**
 * The digests of every stored old-format key, so that the request log can tell an old-format key
 * pasted into a URL from a resource id: both are UUIDs (SEC-2a). A UUID in an id's place is logged
 * unless its old-format digest is one of these.
 *
 * The set holds digests, never keys, like the database it mirrors. It is loaded at start, grows at
 * once when this process stores a key, and is read again from the database every minute, which
 * brings in keys another instance or `attest admin-key` stored. With no old-format key stored (the
 * usual case) nothing is hashed.
 */
export class LegacyKeyDigests {
  #digests = new Set<string>();

  /** Replaces the set with what the database holds now. */
  replace(digests: Iterable<string>): void {
    this.#digests = new Set(digests);
  }

  add(digest: string): void {
    this.#digests.add(digest);
  }

  /** Whether `uuid` is a stored old-format key (revoked ones included: a log keeps no key). */
  isKey = (uuid: string): boolean => this.#digests.size > 0 && this.#digests.has(keyDigest(uuid, 'legacy'));
}
