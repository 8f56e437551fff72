import http from 'node:http';
import net from 'node:net';

/** Clients in tests see every answer as sent: a 429 or 503 is what a test checks, not something to wait out. */
export const NO_RETRY = { attempts: 1 };

/** A response as it came off the wire: status, headers as node:http gives them, the body as text, and as JSON when it is JSON. */
export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  /** The body parsed as JSON, or `{}` when it is not JSON (the assertions on `text` then say what it was). */
  json: Record<string, unknown>;
}

export interface RawRequestOptions {
  method?: string;
  /** Exactly the headers sent (Host aside, unless given): nothing is added, not even Content-Length. */
  headers?: Record<string, string | number | string[]>;
  body?: string | Buffer;
  /** A kept-alive agent for a test that makes many calls; by default a connection of its own. */
  agent?: http.Agent | false;
  /** The loopback address to send from (all of 127/8 is local), for per-address limits. */
  localAddress?: string;
}

/**
 * One raw HTTP exchange with node:http, for what fetch would not send: malformed or duplicated
 * headers, a wrong Host, exact body bytes. `target` is a URL, or a base URL and a path that goes out
 * exactly as written (a URL would resolve `.` and `..` segments before the server saw them).
 */
export function rawRequest(target: string | { base: string; path: string }, options: RawRequestOptions = {}): Promise<RawResponse> {
  const { method = 'GET', headers = {}, body, agent = false, localAddress } = options;
  const where =
    typeof target === 'string'
      ? new URL(target)
      : (() => {
          const { hostname, port } = new URL(target.base);
          return { hostname, port, path: target.path };
        })();
  const requestOptions: http.RequestOptions = { method, headers, agent, localAddress };
  return new Promise((resolve, reject) => {
    const callback = (response: http.IncomingMessage) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: Record<string, unknown> = {};
        try {
          json = JSON.parse(text) as Record<string, unknown>;
        } catch {
          // not JSON; the assertions say so
        }
        resolve({ status: response.statusCode ?? 0, headers: response.headers, text, json });
      });
    };
    const request =
      where instanceof URL
        ? http.request(where, requestOptions, callback)
        : http.request({ ...requestOptions, hostname: where.hostname, port: where.port, path: where.path }, callback);
    request.on('error', reject);
    request.end(body);
  });
}

/** A multipart form encoded as fetch would send it: the bytes and the Content-Type with its boundary. */
export async function encodeForm(form: FormData): Promise<{ payload: Buffer; contentType: string }> {
  const encoded = new Request('http://form.invalid/', { method: 'POST', body: form });
  return { payload: Buffer.from(await encoded.arrayBuffer()), contentType: encoded.headers.get('content-type') as string };
}

/** The headers of a JSON call, with the caller's key when there is one. */
export const jsonHeaders = (key?: string): Record<string, string> => ({
  'content-type': 'application/json',
  accept: 'application/json',
  ...(key ? { 'service.api-token': key } : {}),
});

/** A local port nothing listens on: bound to learn a free one, then closed. */
export async function closedPort(): Promise<number> {
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as net.AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** A password login (`POST /auth/login`) from the local address `address`, as the login throttle counts it. */
export const login = (server: { url: string }, address: string, email: string, password: string): Promise<RawResponse> =>
  rawRequest(`${server.url}/api/v1/auth/login`, {
    method: 'POST',
    localAddress: address,
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ email, password }),
  });
