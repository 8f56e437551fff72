import { ByteLru } from './byte-lru.ts';

// Serialised answers of resources that change only through this process's own writes (a device,
// PERF-5): kept by key until a write to that key, so a read sends text built once and runs no query.

/** Room for the device answers: about 4,000 devices of 500 bytes; a lab rarely has more. */
export const DEVICE_ANSWERS_BYTES = 4 * 1024 * 1024;

export class KeptAnswers {
  readonly #kept: ByteLru<string>;
  #generation = 0;

  /** `capacity` in bytes (UTF-16 code units × 2); 0 keeps nothing. */
  constructor(capacity: number) {
    this.#kept = new ByteLru(capacity, (text) => 2 * text.length);
  }

  /** Taken before the answer is read; `store` refuses an answer read across a `forget`. */
  ticket(): number {
    return this.#generation;
  }

  get(key: string): string | undefined {
    return this.#kept.get(key);
  }

  /** Keeps `text`, unless a write happened since `ticket` was taken. */
  store(key: string, text: string, ticket: number): void {
    if (ticket === this.#generation) this.#kept.set(key, text);
  }

  /** `key` was written (or may have been): drop it, and refuse every answer read before now. */
  forget(key: string): void {
    this.#generation++;
    this.#kept.delete(key);
  }

  get size(): { entries: number; bytes: number } {
    return this.#kept.size;
  }
}
