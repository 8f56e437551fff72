import type { ImagesTable } from '../db/types.ts';
import { ByteLru } from './byte-lru.ts';

// Answers kept in memory until a write may have changed them: a byte-bounded LRU with a
// generation, so an answer read while a write was under way is never kept. Behind the device
// answers (PERF-5), the completed runs' results (PERF-2, `frozen-answers.ts`), the projects known
// to use each image (PERF-6, `routes/image-access.ts`) and the owners of runs, tests, jobs and
// artifacts (PERF-7, `routes/owners.ts`). `through` is the one place that runs the protocol (get,
// ticket, load, store); a route that keeps its answer names it (`RouteImpl.keeps`, kept-routes.ts)
// and never runs it by hand.

/**
 * Whether answers are kept at all (`ATTEST_ANSWER_CACHES`, PERF-8): one per context, shared by
 * every keeper. Off, nothing is found and nothing is stored, so every answer is read afresh; what
 * was kept stays, and still forgets on every change. The coherence test turns it off for a moment
 * to read what the database says now, on the very server whose kept answers it checks.
 */
export interface AnswerSwitch {
  on: boolean;
}

/** Room for the device answers: about 4,000 devices of 500 bytes; a lab rarely has more. */
export const DEVICE_ANSWERS_BYTES = 4 * 1024 * 1024;

/** The size of a kept JSON text: UTF-16 code units × 2. */
export const textBytes = (text: string) => 2 * text.length;

/** An image and the projects known to use it: a positive fact learned from the database (PERF-6). */
export interface ImageUses {
  image: ImagesTable;
  projects: ReadonlySet<string>;
}

/** Room for the image uses kept (PERF-6): about 4,000 images seen by a few projects each. */
export const IMAGE_USES_BYTES = 2 * 1024 * 1024;

/** About what an entry holds: the image row, and an id per project. */
export const imageUsesBytes = (uses: ImageUses) => 600 + 80 * uses.projects.size;

/** Room for the owners kept (PERF-7): about 20,000 runs, tests, jobs, artifacts and projects. */
export const OWNERS_BYTES = 4 * 1024 * 1024;

/** About what an owner entry holds: its key (a kind and an id), a project id and the map's entry. */
const OWNER_ENTRY_BYTES = 200;

export class KeptAnswers<V> {
  readonly #kept: ByteLru<V>;
  readonly #switch: AnswerSwitch;
  #generation = 0;

  /** `capacity` in bytes as `sizeOf` counts them; 0 keeps nothing; nothing either while `keeping` is off. */
  constructor(capacity: number, sizeOf: (value: V) => number, keeping: AnswerSwitch = { on: true }) {
    this.#kept = new ByteLru(capacity, sizeOf);
    this.#switch = keeping;
  }

  /** Taken before the answer is read; `store` refuses an answer read across a `forget`. */
  ticket(): number {
    return this.#generation;
  }

  get(key: string): V | undefined {
    return this.#switch.on ? this.#kept.get(key) : undefined;
  }

  /** Keeps `value`, unless a write happened since `ticket` was taken. */
  store(key: string, value: V, ticket: number): void {
    if (ticket === this.#generation && this.#switch.on) this.#kept.set(key, value);
  }

  /**
   * The answer kept under `key` at once, else `load(of)`'s, kept unless a write overlapped the
   * load; `undefined` (a "no") is never kept. `of` is passed through, so a hit allocates nothing.
   */
  through<A>(key: string, load: (of: A) => Promise<V | undefined>, of: A): V | Promise<V | undefined> {
    const known = this.get(key);
    if (known !== undefined) return known;
    const ticket = this.#generation;
    return load(of).then((value) => {
      if (value !== undefined) this.store(key, value, ticket);
      return value;
    });
  }

  /**
   * A fact learned: `load(of)`'s finding, folded into what is kept under `key` then (`fold`), and
   * kept unless a write overlapped the load. Answers the finding; a "no" (undefined) is never kept.
   */
  async learn<A, F>(
    key: string,
    load: (of: A) => Promise<F | undefined>,
    of: A,
    fold: (found: F, known: V | undefined) => V,
  ): Promise<F | undefined> {
    const ticket = this.#generation;
    const found = await load(of);
    if (found !== undefined) this.store(key, fold(found, this.get(key)), ticket);
    return found;
  }

  /** `value`, kept under `key`, now holds `bytes` more (a compressed form added). */
  grew(key: string, value: V, bytes: number): void {
    this.#kept.grew(key, value, bytes);
  }

  /** `key` was written (or may have been): drop it, and refuse every answer read before now. */
  forget(key: string): void {
    this.#generation++;
    this.#kept.delete(key);
  }

  /** Anything kept may have changed: drop everything, and refuse every answer read before now. */
  forgetAll(): void {
    this.#generation++;
    this.#kept.clear();
  }

  get size(): { entries: number; bytes: number } {
    return this.#kept.size;
  }
}

/** What an owner is kept for: a resource by its id, or a project by its id or its key. */
export type OwnerKind = 'project' | 'key' | 'run' | 'test' | 'job' | 'artifact';

/** The project that owns a run, test, job or artifact, or has an id or a key (PERF-7), kept by kind and id. */
export class KeptOwners {
  readonly #kept: KeptAnswers<string>;

  /** `capacity` in bytes; 0 keeps nothing. */
  constructor(capacity = OWNERS_BYTES, keeping?: AnswerSwitch) {
    this.#kept = new KeptAnswers(capacity, () => OWNER_ENTRY_BYTES, keeping);
  }

  /** Taken before the database is asked; `store` refuses an answer read across a `forget`. */
  ticket(): number {
    return this.#kept.ticket();
  }

  get(kind: OwnerKind, id: string): string | undefined {
    return this.#kept.get(`${kind}:${id}`);
  }

  store(kind: OwnerKind, id: string, projectId: string, ticket: number): void {
    this.#kept.store(`${kind}:${id}`, projectId, ticket);
  }

  /** The project of `id` as kept at once, else `lookup`'s, kept unless a deletion overlapped it. */
  through(kind: OwnerKind, id: string, lookup: (id: string) => Promise<string | undefined>): string | Promise<string | undefined> {
    return this.#kept.through(`${kind}:${id}`, lookup, id);
  }

  /** `id` was deleted: drop its owner, and refuse every answer read before now. */
  forget(kind: OwnerKind, id: string): void {
    this.#kept.forget(`${kind}:${id}`);
  }

  /** Runs or projects were deleted, with whatever they held: drop every kept owner. */
  forgetAll(): void {
    this.#kept.forgetAll();
  }
}
