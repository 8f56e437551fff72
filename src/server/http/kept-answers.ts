import type { ImagesTable } from '../db/types.ts';
import { ByteLru } from './byte-lru.ts';

// Answers kept in memory until a write may have changed them: a byte-bounded LRU with a
// generation, so an answer read while a write was under way is never kept. Behind the device
// answers (PERF-5), the completed runs' results (PERF-2, `frozen-answers.ts`), the projects known
// to use each image (PERF-6, `routes/image-access.ts`) and the owners of runs, tests, jobs and
// artifacts (PERF-7, `routes/owners.ts`).

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
  #generation = 0;

  /** `capacity` in bytes as `sizeOf` counts them; 0 keeps nothing. */
  constructor(capacity: number, sizeOf: (value: V) => number) {
    this.#kept = new ByteLru(capacity, sizeOf);
  }

  /** Taken before the answer is read; `store` refuses an answer read across a `forget`. */
  ticket(): number {
    return this.#generation;
  }

  get(key: string): V | undefined {
    return this.#kept.get(key);
  }

  /** Keeps `value`, unless a write happened since `ticket` was taken. */
  store(key: string, value: V, ticket: number): void {
    if (ticket === this.#generation) this.#kept.set(key, value);
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
  constructor(capacity = OWNERS_BYTES) {
    this.#kept = new KeptAnswers(capacity, () => OWNER_ENTRY_BYTES);
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

  /** `id` was deleted: drop its owner, and refuse every answer read before now. */
  forget(kind: OwnerKind, id: string): void {
    this.#kept.forget(`${kind}:${id}`);
  }

  /** Runs or projects were deleted, with whatever they held: drop every kept owner. */
  forgetAll(): void {
    this.#kept.forgetAll();
  }
}
