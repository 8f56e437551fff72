import type { Readable } from 'node:stream';
import {
  ListMultipartUploadsCommand,
  type ListMultipartUploadsCommandOutput,
  paginateListObjectsV2,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { BlobStorageError } from './blob-store.ts';

/** Where the S3 store's requests go, and how long and how often each may try. */
export interface S3ClientOptions {
  /** An S3-compatible server (`ATTEST_S3_ENDPOINT`); AWS itself when undefined. */
  endpoint: string | undefined;
  region: string;
  forcePathStyle: boolean;
  /** Longest wait to connect, for one request's answer, and for a transfer that stalls (`ATTEST_S3_TIMEOUT_MS`). */
  timeoutMs: number;
  /** Attempts per request, with exponential backoff and jitter on 5xx, throttling and network errors (`ATTEST_S3_MAX_ATTEMPTS`). */
  maxAttempts: number;
}

/** The SDK's longest backoff between two attempts (standard retry strategy). */
export const MAX_BACKOFF_MS = 20_000;

/** `timeoutMs` plus the time `bytes` take at `bytesPerSecond`: the timeout of a request whose work grows with its size. */
export function sizedTimeout(timeoutMs: number, bytes: number, bytesPerSecond: number): number {
  return timeoutMs + Math.ceil((bytes * 1000) / bytesPerSecond);
}

/**
 * The SDK client as the store uses it. It computes and checks no checksums of its own
 * (`WHEN_REQUIRED`: third-party stores reject or ignore the newer ones), retries with the SDK's
 * standard strategy, and takes its credentials from the SDK's default chain (environment,
 * profiles, instance roles), never from Attest's configuration.
 *
 * Each attempt must be answered within `timeoutMs`, and the client gives up on a transfer silent
 * that long; `transfer` makes the client for requests whose time grows with their size (the parts
 * of a multipart upload, CopyObject): answered within `transfer.requestMs` by default (or a
 * per-call `requestTimeout`), and without the silence limit, since a store copying a large object
 * may send nothing until it is done.
 */
export function createS3Client(options: S3ClientOptions, transfer?: { requestMs: number }): S3Client {
  return new S3Client({
    region: options.region,
    endpoint: options.endpoint,
    forcePathStyle: options.forcePathStyle,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    retryMode: 'standard',
    maxAttempts: options.maxAttempts,
    // The Node handler's own options (the SDK builds its NodeHttpHandler from them): a refused or
    // silent store fails each attempt within the timeout instead of hanging the request.
    requestHandler: {
      connectionTimeout: options.timeoutMs,
      requestTimeout: transfer?.requestMs ?? options.timeoutMs,
      throwOnRequestTimeout: true,
      // 0: no limit on silence.
      socketTimeout: transfer ? 0 : options.timeoutMs,
    },
  });
}

/** Whether an S3 error says the object is not there (as opposed to the store failing). */
export function isMissing(error: unknown): boolean {
  return error instanceof S3ServiceException && error.$metadata.httpStatusCode === 404 && error.name !== 'NoSuchBucket';
}

/** Any failure of the store (network, timeout, 5xx after the retries, throttling, refused credentials) as a BlobStorageError. */
export function s3Failure(operation: string, error: unknown): BlobStorageError {
  if (error instanceof BlobStorageError) return error;
  const status = error instanceof S3ServiceException ? ` ${error.$metadata.httpStatusCode ?? ''}` : '';
  const name = (error as { code?: string; name?: string } | undefined)?.code ?? (error as Error | undefined)?.name ?? 'unknown error';
  return new BlobStorageError('io', `blob store: S3 ${operation} failed (${name}${status.trimEnd()})`, { cause: error });
}

/**
 * `length` bytes of an object's answer, from `skip` on, failing with a
 * BlobStorageError when the transfer breaks or ends short, so a download is cut off rather than
 * completed short (SEC-10a). The answer is dropped once the bytes asked for are through.
 */
export async function* exactly(body: Readable, skip: number, length: number): AsyncGenerator<Buffer> {
  let at = 0;
  const end = skip + length;
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      const from = Math.max(skip - at, 0);
      const to = Math.min(end - at, chunk.length);
      at += chunk.length;
      if (to > from) yield from === 0 && to === chunk.length ? chunk : chunk.subarray(from, to);
      if (at >= end) break;
    }
  } catch (error) {
    throw s3Failure('GetObject', error);
  } finally {
    body.destroy();
  }
  if (at < end) throw new BlobStorageError('io', `blob store: S3 GetObject ended after ${at - skip} of ${length} bytes`);
}

/** Every object under `prefix`, page by page. A continuation token that comes back unchanged ends the listing rather than repeating it forever. */
export async function* listObjects(
  client: S3Client,
  bucket: string,
  prefix: string,
  pageSize: number,
): AsyncIterable<{ key: string; size: number; modifiedAt: Date }> {
  const pages = paginateListObjectsV2({ client, pageSize, stopOnSameToken: true }, { Bucket: bucket, Prefix: prefix });
  try {
    for await (const page of pages) {
      for (const object of page.Contents ?? []) {
        if (object.Key) yield { key: object.Key, size: object.Size ?? 0, modifiedAt: object.LastModified ?? new Date(0) };
      }
    }
  } catch (error) {
    throw s3Failure('ListObjectsV2', error);
  }
}

/**
 * The incomplete multipart uploads under `prefix`, page by page; none from a store that does not
 * list them (answers NotImplemented). A page that says there is more but whose markers do not move
 * on ends the listing: asked again, the store would answer the same page forever.
 */
export async function* listMultipartUploads(
  client: S3Client,
  bucket: string,
  prefix: string,
): AsyncIterable<{ Key: string; UploadId: string; initiated: Date }> {
  let marker: { KeyMarker?: string; UploadIdMarker?: string } = {};
  for (;;) {
    let page: ListMultipartUploadsCommandOutput;
    try {
      page = await client.send(new ListMultipartUploadsCommand({ Bucket: bucket, Prefix: prefix, ...marker }));
    } catch (error) {
      if (error instanceof S3ServiceException && error.name === 'NotImplemented') return;
      throw s3Failure('ListMultipartUploads', error);
    }
    for (const { Key, UploadId, Initiated } of page.Uploads ?? []) {
      if (Key && UploadId) yield { Key, UploadId, initiated: Initiated ?? new Date(0) };
    }
    const next = { KeyMarker: page.NextKeyMarker, UploadIdMarker: page.NextUploadIdMarker };
    if (!page.IsTruncated || (next.KeyMarker === marker.KeyMarker && next.UploadIdMarker === marker.UploadIdMarker)) return;
    marker = next;
  }
}
