import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

// The calls the integrations make to code hosts and issue trackers (docs/integrations.md, FORGE-7):
// every one through `integrationFetch`, which refuses loopback, link-local and private addresses
// unless the instance allows them (the URLs are a manager's, not an admin's), gives up after a
// short timeout, and reads at most a capped answer. Octokit takes it as its `request.fetch`.

/** How long one call may take, connection and answer together. */
export const INTEGRATION_TIMEOUT_MS = 15_000;
/** The most of an answer read: code hosts and trackers answer small JSON documents. */
export const INTEGRATION_MAX_RESPONSE_BYTES = 2 * 1024 * 1024;

const PRIVATE = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  PRIVATE.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const)
  PRIVATE.addSubnet(net, prefix, 'ipv6');

/** Whether an address is loopback, link-local, private, shared or otherwise not on the public internet. */
export function isPrivateAddress(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return PRIVATE.check(mapped[1] as string, 'ipv4');
  const family = isIP(address);
  if (family === 0) return true;
  return PRIVATE.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/** A call the integration could not make, or that the other side refused; its message never holds a secret. */
export class IntegrationError extends Error {
  override name = 'IntegrationError';
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

export interface IntegrationFetchOptions {
  allowPrivate: boolean;
  timeoutMs?: number;
  maxResponseBytes?: number;
}

/**
 * A `fetch` for the integrations: the host is resolved and refused when any of its addresses is
 * not public (unless allowed), redirects are not followed (a redirect could lead past that check),
 * and the answer is read to at most `maxResponseBytes`.
 */
export function integrationFetch(options: IntegrationFetchOptions): typeof fetch {
  const timeoutMs = options.timeoutMs ?? INTEGRATION_TIMEOUT_MS;
  const maxBytes = options.maxResponseBytes ?? INTEGRATION_MAX_RESPONSE_BYTES;
  return async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new IntegrationError(`${url.protocol} URLs are not called`);
    if (!options.allowPrivate) await assertPublicHost(url.hostname);
    const signal = init?.signal ? AbortSignal.any([init.signal, AbortSignal.timeout(timeoutMs)]) : AbortSignal.timeout(timeoutMs);
    let response: Response;
    try {
      response = await fetch(input, { ...init, signal, redirect: 'manual' });
    } catch (error) {
      const cause = (error as Error & { cause?: { code?: string } }).cause?.code;
      const why = (error as Error).name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : (cause ?? (error as Error).message);
      throw new IntegrationError(`${url.host} could not be reached: ${why}`);
    }
    const bytes = await readCapped(response, maxBytes, url.host);
    return new Response(bytes.length === 0 && nullBodyStatus(response.status) ? null : bytes, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
}

const nullBodyStatus = (status: number) => status === 204 || status === 205 || status === 304;

async function assertPublicHost(hostname: string): Promise<void> {
  const host = hostname.replace(/^\[|\]$/g, '');
  let addresses: string[];
  if (isIP(host) !== 0) addresses = [host];
  else {
    try {
      addresses = (await lookup(host, { all: true })).map((a) => a.address);
    } catch {
      throw new IntegrationError(`${host} does not resolve`);
    }
  }
  if (addresses.length === 0 || addresses.some(isPrivateAddress)) {
    throw new IntegrationError(
      `${host} is a loopback, link-local or private address; an admin may allow those with ATTEST_INTEGRATIONS_ALLOW_PRIVATE=true`,
    );
  }
}

async function readCapped(response: Response, maxBytes: number, host: string): Promise<Uint8Array> {
  if (!response.body) return new Uint8Array();
  const chunks: Uint8Array[] = [];
  let total = 0;
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel();
      throw new IntegrationError(`${host} answered more than ${maxBytes} bytes`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}

/** `text` with every secret replaced by `***`: what may be logged or stored of an error. */
export function masked(text: string, secrets: readonly (string | null | undefined)[]): string {
  let out = text;
  for (const secret of secrets) {
    if (secret && secret.length >= 4) out = out.split(secret).join('***');
  }
  return out;
}

/** A JSON call (trackers, GitLab): the answer's JSON, or an IntegrationError naming the status and the start of the answer. */
export async function callJson(
  fetcher: typeof fetch,
  url: string,
  init: { method: string; headers: Record<string, string>; body?: unknown },
): Promise<unknown> {
  const response = await fetcher(url, {
    method: init.method,
    headers: { accept: 'application/json', ...(init.body === undefined ? {} : { 'content-type': 'application/json' }), ...init.headers },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await response.text();
  if (!response.ok) {
    throw new IntegrationError(
      `${init.method} ${new URL(url).pathname} answered ${response.status}: ${text.slice(0, 300)}`,
      response.status,
    );
  }
  if (text === '') return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new IntegrationError(`${init.method} ${new URL(url).pathname} answered ${response.status} with a body that is not JSON`);
  }
}
