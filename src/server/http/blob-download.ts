import type { Readable } from 'node:stream';
import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify';
import { RASTER_TYPES } from '../../api/v1/artifacts.ts';
import type { BlobDownload, BlobStore, ByteRange } from '../blob/blob-store.ts';
import type { Config } from '../config.ts';
import { AppError } from '../errors.ts';
import { asciiFileName, imageFileName } from '../media/file-names.ts';
import { ByteLru } from './byte-lru.ts';
import { matchesEtag } from './etag.ts';
import type { HotBlobs } from './hot-blobs.ts';

/** What sending a blob needs: the store, the hot-image cache, the offload settings and the log. */
export interface BlobSending {
  blobs: BlobStore;
  hotBlobs: HotBlobs;
  config: Pick<Config, 'blobOffload' | 'blobOffloadPrefix'>;
  log: FastifyBaseLogger;
}

/** The policy raw.githubusercontent.com sends: nothing loads, nothing runs, even if a browser renders it as HTML. */
const SANDBOX_CSP = "default-src 'none'; style-src 'unsafe-inline'; sandbox";

export const isRasterImage = (type: string): boolean => (RASTER_TYPES as readonly string[]).includes(type);

/** Each byte as RFC 8187 writes it: an `attr-char` as itself, any other byte percent-encoded. */
const EXT_VALUE_BYTES = Array.from({ length: 256 }, (_, byte) => {
  const c = String.fromCharCode(byte);
  return /[A-Za-z0-9!#$&+\-.^_`|~]/.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
});

/** RFC 8187 `ext-value` encoding: every byte outside `attr-char` is percent-encoded, so no quote, CR or LF survives. */
export function encodeRfc8187(value: string): string {
  let encoded = '';
  for (const byte of Buffer.from(value, 'utf8')) encoded += EXT_VALUE_BYTES[byte];
  return encoded;
}

/** Headers already built, by type and name: a hot image's name is normalised and encoded once, not per request. */
const DISPOSITIONS_KEPT = 1000;
const dispositions = new ByteLru<string>(DISPOSITIONS_KEPT, () => 1);

/**
 * `inline` for raster images only, `attachment` for everything else (text and HTML included). The
 * name goes twice (RFC 6266): a plain ASCII `filename=` for clients that ignore the other, and the
 * exact name in `filename*=`. An inline image's name always ends in its type's extension.
 */
export function contentDisposition(download: Pick<BlobDownload, 'contentType' | 'fileName'>): string {
  const key = `${download.contentType}\n${download.fileName ?? ''}`;
  let value = dispositions.get(key);
  if (value === undefined) {
    value = buildContentDisposition(download);
    dispositions.set(key, value);
  }
  return value;
}

function buildContentDisposition(download: Pick<BlobDownload, 'contentType' | 'fileName'>): string {
  const inline = isRasterImage(download.contentType);
  if (!download.fileName) return inline ? 'inline' : 'attachment';
  const name = inline ? imageFileName(download.fileName, download.contentType) : download.fileName;
  return `${inline ? 'inline' : 'attachment'}; filename="${asciiFileName(name)}"; filename*=UTF-8''${encodeRfc8187(name)}`;
}

/**
 * Where the front proxy finds a blob (PERF-4): the path under the nginx `internal` location for
 * `X-Accel-Redirect`, or the file's absolute path for `X-Sendfile`. Undefined when the store keeps
 * no files.
 */
function offloadTarget(ctx: BlobSending, sha256: string): { header: string; target: string } | undefined {
  const store = ctx.blobs as BlobStore & { blobPath?: (sha256: string) => string };
  if (typeof store.blobPath !== 'function') return undefined;
  const file = store.blobPath(sha256);
  if (ctx.config.blobOffload === 'x-sendfile') return { header: 'x-sendfile', target: file };
  return { header: 'x-accel-redirect', target: `${ctx.config.blobOffloadPrefix}${sha256.slice(0, 2)}/${sha256.slice(2, 4)}/${sha256}` };
}

/**
 * The one range of a `Range: bytes=…` header, `'unsatisfiable'` (416), or undefined to send the
 * whole representation: no header, another unit, several ranges, or a malformed one (RFC 9110
 * lets a server ignore those).
 */
export function parseRange(header: string | undefined, size: number): ByteRange | 'unsatisfiable' | undefined {
  if (header === undefined) return undefined;
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!match || (match[1] === '' && match[2] === '')) return undefined;
  const [first, last] = [match[1] ?? '', match[2] ?? ''];
  if (first === '') {
    // Suffix range: the last N bytes.
    const length = Number(last);
    if (length === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - length), end: size - 1 };
  }
  const start = Number(first);
  const end = last === '' ? size - 1 : Math.min(Number(last), size - 1);
  if (last !== '' && Number(last) < start) return undefined;
  if (start >= size) return 'unsatisfiable';
  return { start, end };
}

/**
 * Sends a blob with the headers of FILE-5: the stored type, `nosniff`, a sandboxing
 * CSP, `inline` only for raster images, an ETag from the SHA-256 with `If-None-Match` → 304, and
 * single byte ranges → 206 (416 outside the blob). A 304, a hot image and an offloaded answer are
 * sent in the same tick; only a read from the store waits.
 */
export function sendBlob(
  ctx: BlobSending,
  request: FastifyRequest,
  reply: FastifyReply,
  download: BlobDownload,
): FastifyReply | Promise<FastifyReply> {
  const etag = `"${download.sha256}"`;
  const ifNoneMatch = request.headers['if-none-match'];
  const rangeHeader = request.headers.range;
  const ifRange = request.headers['if-range'] as string | undefined;
  // A Range under If-Range applies only while the client's copy is still this one.
  const range = ifRange === undefined || ifRange.trim() === etag ? parseRange(rangeHeader, download.size) : undefined;
  const notModified = ifNoneMatch !== undefined && matchesEtag(ifNoneMatch, etag);
  if (range === 'unsatisfiable' && !notModified) {
    // Outside the blob, and not answered by a 304 (conditions come before ranges, RFC 9110 13.2.2).
    throw new AppError('RANGE_NOT_SATISFIABLE', `The range lies outside the ${download.size} bytes of the content.`, {
      headers: { 'content-range': `bytes */${download.size}` },
    });
  }
  const answer = { etag, notModified, part: range === 'unsatisfiable' ? undefined : range };
  if (notModified) return sendStored(reply, download, answer, {});

  const offload = ctx.config.blobOffload !== 'none' ? offloadTarget(ctx, download.sha256) : undefined;
  if (offload) return sendStored(reply, download, { ...answer, part: undefined }, { offload });
  // A whole immutable raster image may come from memory, and once read goes there (PERF-3).
  const hot = !answer.part && download.caching === 'immutable' && isRasterImage(download.contentType) && ctx.hotBlobs.keeps(download.size);
  const kept = hot ? ctx.hotBlobs.get(download.sha256) : undefined;
  if (kept) return sendStored(reply, download, answer, { bytes: kept });
  return ctx.blobs.get(download.sha256, answer.part).then(async (stream) => {
    if (!stream) {
      // A row without its blob breaks durability invariant I1: report it loudly, answer 503 (and
      // before any caching header is set, so no cache keeps the failure).
      ctx.log.error({ sha256: download.sha256 }, 'blob missing for a stored row');
      throw new AppError('UNAVAILABLE', 'The stored content is not available.');
    }
    if (hot) return sendStored(reply, download, answer, { bytes: await ctx.hotBlobs.fill(download.sha256, download.size, stream) });
    return sendStored(reply, download, answer, { stream });
  });
}

/** The headers of FILE-5 and the answer itself: 304, the proxy's file, the kept bytes or the stream. */
function sendStored(
  reply: FastifyReply,
  download: BlobDownload,
  { etag, notModified, part }: { etag: string; notModified: boolean; part: ByteRange | undefined },
  content: { offload?: { header: string; target: string }; bytes?: Buffer; stream?: Readable },
): FastifyReply {
  reply.header('etag', etag);
  reply.header('cache-control', download.caching === 'immutable' ? 'private, max-age=31536000, immutable' : 'no-store');
  // A 304 carries what a cache updates its stored answer with (RFC 9110 15.4.5); the stored answer
  // keeps the rest. The sandboxing policy goes too, so the API's own policy never replaces it.
  reply.header('content-security-policy', SANDBOX_CSP);
  if (notModified) return reply.code(304).send();
  reply.header('cross-origin-resource-policy', 'same-site');
  reply.header('x-content-type-options', 'nosniff');
  reply.header('accept-ranges', 'bytes');
  for (const [name, value] of Object.entries(download.headers ?? {})) reply.header(name, value);

  reply.header('content-disposition', contentDisposition(download));
  reply.type(download.contentType);
  if (content.offload) {
    // The proxy sends the file, ranges included; Attest has checked access and set every header.
    reply.header(content.offload.header, content.offload.target);
    return reply.code(200).send();
  }
  if (part) {
    reply.code(206).header('content-range', `bytes ${part.start}-${part.end}/${download.size}`);
    reply.header('content-length', String(part.end - part.start + 1));
  } else {
    reply.code(200).header('content-length', String(download.size));
  }
  return reply.send(content.bytes ?? content.stream);
}
