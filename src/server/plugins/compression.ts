import compress from '@fastify/compress';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

/**
 * Answers of this many bytes or more go out compressed when the client accepts br or gzip. Below
 * it the CPU spent (tens of microseconds) buys little: a few KiB cross any network in the first
 * round trip anyway.
 */
export const COMPRESSION_THRESHOLD = 8 * 1024;

/** JSON, including `application/problem+json`: the API's own answers. */
const JSON_TYPES = /^application\/(?:[\w.+-]+\+)?json(?:;|$)/;

/** An array schema allowing more entries than this can make an answer large. */
const SMALL_ARRAY = 100;

/**
 * Whether an answer of this schema may reach the threshold: it holds an array that may have more
 * than a hundred entries (a page, a run's steps, a batch) or an object of any shape. The others (one
 * device, one run, a receipt of one thing) stay far below it and get no compression hook: on the
 * device read that hook alone cost about 4% of the throughput.
 */
export function mayBeLarge(schema: unknown): boolean {
  if (schema === null || typeof schema !== 'object') return false;
  const node = schema as Record<string, unknown>;
  // An object of any shape (the OpenAPI document) may be of any size.
  if (node.additionalProperties === true) return true;
  if (node.type === 'array') {
    const maxItems = typeof node.maxItems === 'number' ? node.maxItems : Number.POSITIVE_INFINITY;
    if (maxItems > SMALL_ARRAY) return true;
  }
  const children = [
    ...Object.values((node.properties as Record<string, unknown> | undefined) ?? {}),
    node.items,
    node.additionalProperties,
    ...((node.anyOf as unknown[] | undefined) ?? []),
    ...((node.oneOf as unknown[] | undefined) ?? []),
    ...((node.allOf as unknown[] | undefined) ?? []),
  ];
  return children.some(mayBeLarge);
}

/**
 * Large JSON answers compressed (br, else gzip, by `Accept-Encoding`; `Vary: Accept-Encoding`), and
 * the web interface's text files. The contract turns it off (`compress: false`) for endpoints whose
 * answers stay small (`mayBeLarge`) and for stored content: the download routes (artifact content,
 * images, run exports) send the stored bytes, with their Content-Length, ETag and byte ranges.
 * An answer already encoded (a completed run's kept results, PERF-2) is left as it is. Request
 * bodies are never decompressed: a body's size limit is the size of what arrives. Compressing
 * answers that hold secrets next to attacker-chosen text (BREACH) needs the victim's browser to
 * send its credentials on the attacker's requests; Attest's keys travel in headers, never cookies.
 * Registered before any route: it attaches its hook to each route as the route is added.
 */
export const compressionPlugin = fp(
  async (app: FastifyInstance) => {
    await app.register(compress, {
      global: true,
      globalDecompression: false,
      threshold: COMPRESSION_THRESHOLD,
      encodings: ['br', 'gzip'],
      customTypes: JSON_TYPES,
    });
  },
  { name: 'attest-compression' },
);
