import type { Readable } from 'node:stream';
import { ByteLru } from './byte-lru.ts';
import type { AnswerSwitch } from './kept-answers.ts';

// Hot blobs in memory (PERF-3): the bytes of small, often-read immutable blobs (screenshots),
// keyed by their SHA-256. A blob's bytes never change for its digest, so an entry is never stale:
// who may read it is decided by the access hooks before any lookup here.

/** Blobs larger than this are streamed from disk every time, never kept. */
export const HOT_BLOB_MAX_BYTES = 4 * 1024 * 1024;

export class HotBlobs {
  readonly #kept: ByteLru<Buffer>;
  readonly #switch: AnswerSwitch;

  /** `capacity` in bytes; 0 keeps nothing; nothing either while `keeping` is off (PERF-8). */
  constructor(capacity: number, keeping: AnswerSwitch = { on: true }) {
    this.#kept = new ByteLru(capacity, (bytes) => bytes.length);
    this.#switch = keeping;
  }

  /** Whether a blob of this size is kept (and looked for). */
  keeps(size: number): boolean {
    return size <= HOT_BLOB_MAX_BYTES && size <= this.#kept.capacity && this.#switch.on;
  }

  get(sha256: string): Buffer | undefined {
    return this.#kept.get(sha256);
  }

  /** Reads `stream` whole, keeps the bytes when they are the blob's `size`, and returns them. */
  async fill(sha256: string, size: number, stream: Readable): Promise<Buffer> {
    const chunks: Buffer[] = [];
    for await (const chunk of stream) chunks.push(chunk as Buffer);
    const bytes = Buffer.concat(chunks);
    if (bytes.length === size && this.keeps(size) && !this.#kept.has(sha256)) this.#kept.set(sha256, bytes);
    return bytes;
  }

  get size(): { entries: number; bytes: number } {
    return this.#kept.size;
  }
}
