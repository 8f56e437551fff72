import { lookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { APP_VERSION } from '../version.ts';
import { describeAddress, isPrivateAddress, isSpecialHost } from './addresses.ts';

/** One request to a server outside Attest (a webhook receiver, a code host's API). */
export interface OutgoingRequest {
  url: string;
  method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  headers?: Record<string, string>;
  body?: string;
  /** For the whole exchange, connecting included; 10 s unless said. */
  timeoutMs?: number;
}

/** What came back: any status (3xx is not followed), headers lower-cased, the body read up to the cap. */
export interface OutgoingResponse {
  status: number;
  headers: Record<string, string>;
  /** The body as UTF-8, at most `maxResponseBytes` of it. */
  text: string;
  latencyMs: number;
  /** Whether the body went on past the cap (the rest was not read). */
  truncated: boolean;
}

export type OutgoingErrorCode = 'private_address' | 'timeout' | 'connection' | 'invalid_url';

/** Why no answer came: the target was refused before connecting, took too long, or could not be reached. */
export class OutgoingError extends Error {
  readonly code: OutgoingErrorCode;
  constructor(code: OutgoingErrorCode, message: string) {
    super(message);
    this.name = 'OutgoingError';
    this.code = code;
  }
}

export interface OutgoingOptions {
  /** Whether loopback, link-local and private addresses may be reached (ATTEST_WEBHOOK_ALLOW_PRIVATE). */
  allowPrivate: boolean;
  /** How much of the answer's body is read; 256 KiB unless said. */
  maxResponseBytes?: number;
}

const DEFAULT_TIMEOUT_MS = 10_000;
const DEFAULT_MAX_RESPONSE_BYTES = 256 * 1024;

/** The parsed URL of an outgoing request, or `invalid_url`: http or https only, a host, no more than 2048 characters. */
export function parseOutgoingUrl(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new OutgoingError('invalid_url', 'The URL is not an absolute URL.');
  }
  if (text.length > 2048) throw new OutgoingError('invalid_url', 'The URL is longer than 2048 characters.');
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new OutgoingError('invalid_url', 'The URL is not http or https.');
  if (!url.hostname) throw new OutgoingError('invalid_url', 'The URL has no host.');
  return url;
}

/**
 * A URL as a webhook or an integration is saved with it: what `parseOutgoingUrl` accepts, its host
 * not written as a special address (`isSpecialHost`: loopback, private, mapped forms…, `localhost`)
 * unless private targets are allowed. A name is not resolved here: it is judged at each call, once
 * resolved, since its answer may change. Throws OutgoingError (`invalid_url`, `private_address`).
 */
export function checkSavedUrl(text: string, allowPrivate: boolean): URL {
  const url = parseOutgoingUrl(text);
  if (!allowPrivate && isSpecialHost(url.hostname)) {
    const host = url.hostname.replace(/^\[|\]$/g, '');
    throw new OutgoingError(
      'private_address',
      `is ${isIP(host) ? describeAddress(url.hostname) : url.hostname}, a loopback, link-local or private address, or another special-purpose one; an admin may allow these with ATTEST_WEBHOOK_ALLOW_PRIVATE=true`,
    );
  }
  return url;
}

/**
 * The address a request to `url` connects to: an IP literal as written, a name resolved through
 * DNS. Every address the name resolves to is checked, not only the one used, so a name that
 * answers with a public and a private address is refused as a whole (unless private targets are
 * allowed). The request then connects to this checked address, never resolving the name again
 * (a second answer could differ: DNS rebinding).
 */
export async function resolveOutgoingAddress(url: URL, allowPrivate: boolean): Promise<{ address: string; family: 4 | 6 }> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  let addresses: { address: string; family: number }[];
  if (isIP(host)) addresses = [{ address: host, family: isIP(host) }];
  else {
    try {
      addresses = await lookup(host, { all: true, verbatim: true });
    } catch (error) {
      throw new OutgoingError(
        'connection',
        `The host ${host} could not be resolved (${(error as NodeJS.ErrnoException).code ?? 'error'}).`,
      );
    }
  }
  const first = addresses[0];
  if (!first) throw new OutgoingError('connection', `The host ${host} resolved to no address.`);
  if (!allowPrivate) {
    const refused = addresses.find((a) => isPrivateAddress(a.address));
    if (refused) {
      throw new OutgoingError(
        'private_address',
        `The host ${host} is (or resolves to) ${describeAddress(refused.address)}, a loopback, link-local or private address, or another special-purpose one; an admin may allow these with ATTEST_WEBHOOK_ALLOW_PRIVATE=true.`,
      );
    }
  }
  return { address: first.address, family: first.family === 6 ? 6 : 4 };
}

/**
 * Sends one request outside Attest, safely: the target's addresses are checked before connecting
 * (see resolveOutgoingAddress), redirects are not followed (they could lead anywhere), the whole
 * exchange has a deadline, and at most `maxResponseBytes` of the answer is read before the
 * connection is dropped. Throws OutgoingError when no answer came; any status is an answer.
 */
export async function sendOutgoing(request: OutgoingRequest, options: OutgoingOptions): Promise<OutgoingResponse> {
  const url = parseOutgoingUrl(request.url);
  const timeoutMs = request.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const maxBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  const started = performance.now();
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), timeoutMs);
  try {
    const target = await withDeadline(resolveOutgoingAddress(url, options.allowPrivate), deadline.signal, timeoutMs);
    return await exchange(url, target, request, maxBytes, deadline.signal, timeoutMs, started);
  } finally {
    clearTimeout(timer);
  }
}

function timeoutError(timeoutMs: number): OutgoingError {
  return new OutgoingError('timeout', `No complete answer within ${timeoutMs} ms.`);
}

function withDeadline<T>(work: Promise<T>, signal: AbortSignal, timeoutMs: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    if (signal.aborted) return reject(timeoutError(timeoutMs));
    const onAbort = () => reject(timeoutError(timeoutMs));
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** Settles an exchange once: with its answer, or with the first error. */
interface Settle {
  settled: () => boolean;
  answer: (response: OutgoingResponse) => void;
  fail: (error: OutgoingError) => void;
}

/** Reads an answer up to `maxBytes`; past them it is kept truncated and the connection dropped. */
function readAnswer(res: http.IncomingMessage, url: URL, maxBytes: number, started: number, settle: Settle): void {
  const chunks: Buffer[] = [];
  let size = 0;
  let truncated = false;
  const finish = () => {
    if (settle.settled()) return;
    const headerValues: Record<string, string> = {};
    for (const [name, value] of Object.entries(res.headers)) {
      if (value !== undefined) headerValues[name] = Array.isArray(value) ? value.join(', ') : value;
    }
    settle.answer({
      status: res.statusCode ?? 0,
      headers: headerValues,
      text: Buffer.concat(chunks).toString('utf8'),
      latencyMs: Math.round(performance.now() - started),
      truncated,
    });
    if (truncated) res.destroy();
  };
  res.on('data', (chunk: Buffer) => {
    if (settle.settled()) return;
    const room = maxBytes - size;
    if (chunk.length > room) {
      chunks.push(chunk.subarray(0, room));
      size = maxBytes;
      truncated = true;
      finish();
      return;
    }
    chunks.push(chunk);
    size += chunk.length;
  });
  res.on('end', finish);
  res.on('error', (error: NodeJS.ErrnoException) =>
    settle.fail(new OutgoingError('connection', `The answer from ${url.host} broke off: ${error.code ?? error.message}.`)),
  );
}

function exchange(
  url: URL,
  target: { address: string; family: 4 | 6 },
  request: OutgoingRequest,
  maxBytes: number,
  signal: AbortSignal,
  timeoutMs: number,
  started: number,
): Promise<OutgoingResponse> {
  // Connect to the checked address whatever the name resolves to now; TLS still verifies the name.
  const pinned: LookupFunction = (_host, opts, callback) => {
    if ((opts as { all?: boolean }).all) (callback as (e: null, a: { address: string; family: number }[]) => void)(null, [target]);
    else callback(null, target.address, target.family);
  };
  const body = request.body === undefined ? undefined : Buffer.from(request.body, 'utf8');
  const headers: Record<string, string> = { 'user-agent': `Attest/${APP_VERSION}`, ...request.headers };
  if (body) headers['content-length'] = String(body.length);
  const client = url.protocol === 'https:' ? https : http;
  return new Promise<OutgoingResponse>((resolve, reject) => {
    let settled = false;
    const fail = (error: OutgoingError) => {
      if (settled) return;
      settled = true;
      req.destroy();
      reject(error);
    };
    const req = client.request(url, {
      method: request.method,
      headers,
      lookup: pinned,
      agent: false,
      auth: url.username ? `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}` : undefined,
    });
    const onAbort = () => fail(timeoutError(timeoutMs));
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    req.on('error', (error: NodeJS.ErrnoException) =>
      fail(new OutgoingError('connection', `The connection to ${url.host} failed: ${error.code ?? error.message}.`)),
    );
    const settle: Settle = {
      settled: () => settled,
      answer: (response) => {
        settled = true;
        signal.removeEventListener('abort', onAbort);
        resolve(response);
      },
      fail,
    };
    req.on('response', (res) => readAnswer(res, url, maxBytes, started, settle));
    req.end(body);
  });
}
