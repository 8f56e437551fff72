/**
 * Largest image whose bytes an upload keeps in memory for its decode check, instead of reading the
 * stored blob back (a stat, an open, reads and a close per upload). Screenshots are mostly smaller.
 */
export const KEEP_FOR_DECODE_MAX_BYTES = 2 * 1024 * 1024;

/** The chunks of a stream, as they pass, while they fit in `maxBytes`; beyond it, none. */
export class KeptBytes {
  private chunks: Uint8Array[] | undefined = [];
  private size = 0;
  constructor(private readonly maxBytes: number) {}

  async *keep(source: AsyncIterable<Uint8Array>): AsyncIterable<Uint8Array> {
    for await (const chunk of source) {
      this.size += chunk.byteLength;
      if (this.size > this.maxBytes) this.chunks = undefined;
      this.chunks?.push(chunk);
      yield chunk;
    }
  }

  /** The whole stream, or undefined when it was larger than the bound. */
  bytes(): Buffer | undefined {
    return this.chunks && Buffer.concat(this.chunks, this.size);
  }
}
