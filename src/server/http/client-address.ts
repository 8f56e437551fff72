import { isIP } from 'node:net';

/** What `clientAddress` reads of a Fastify request. */
interface AddressedRequest {
  ip: string;
  ips?: string[];
  socket?: { remoteAddress?: string };
}

/**
 * The client's address as logs, throttles and audits use it (SEC-8c): Fastify's `ip`, which behind a
 * trusted proxy (`ATTEST_TRUST_PROXY`) is the nearest untrusted hop of `X-Forwarded-For`, only when it
 * is an IP address. A hop that is not one (`X-Forwarded-For: <script>`, a name, an address with a
 * port, from a client the trust list covers) is never logged or counted under its own text: the
 * nearest hop before it that is an address (the proxy that passed it on) stands for the client.
 */
export function clientAddress(request: AddressedRequest): string {
  if (isIP(request.ip) !== 0) return request.ip;
  // `ips` runs from the socket's peer outwards and ends with `ip`.
  const hops = request.ips ?? [];
  for (let i = hops.length - 2; i >= 0; i--) {
    const hop = hops[i] as string;
    if (isIP(hop) !== 0) return hop;
  }
  return request.socket?.remoteAddress ?? 'unknown';
}
