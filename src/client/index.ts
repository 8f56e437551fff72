import type { BodyOf, Endpoint, ParamsOf, QueryOf, ReplyOf } from '../api/endpoint.ts';

export * as v1 from '../api/v1/index.ts';

/** How the client authenticates: a standard key alone, or an old-format (UUID) key with its owner's e-mail. */
export interface Credentials {
  apiKey: string;
  /** Only for old-format keys: sent as `service.user`. */
  user?: string;
}

export interface ClientOptions extends Partial<Credentials> {
  /** The instance base URL, e.g. `https://attest.example.com` (no `/api/v1`). */
  baseUrl: string;
  version?: string;
  /** Custom fetch (tests, proxies); defaults to the global one. */
  fetch?: typeof fetch;
  /** Per-request timeout in milliseconds (default 60 s). */
  timeoutMs?: number;
}

/** A problem response (RFC 9457) as an exception; branch on `code`. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly problem: Record<string, unknown>,
  ) {
    super(`${status} ${code}: ${String(problem.detail ?? problem.title ?? '')}`);
    this.name = 'ApiError';
  }
}

type Optional<T> = T extends Record<string, never> | undefined ? T | undefined : T;

export type CallInput<E extends Endpoint> = {
  params?: Optional<ParamsOf<E>>;
  query?: Optional<QueryOf<E>>;
  body?: BodyOf<E>;
  headers?: Record<string, string>;
};

function expandPath(path: string, params: Record<string, unknown> = {}): string {
  return path.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined) throw new Error(`missing path parameter ${name}`);
    return encodeURIComponent(String(value));
  });
}

function queryString(query: Record<string, unknown> = {}): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value === undefined || value === null) continue;
    search.set(name, Array.isArray(value) ? value.join(',') : String(value));
  }
  const text = search.toString();
  return text ? `?${text}` : '';
}

/** The typed Attest client: every call is one contract endpoint, its input and output types derive from it. */
export class AttestClient {
  readonly baseUrl: string;
  readonly version: string;
  private readonly fetchImpl: typeof fetch;

  constructor(private readonly options: ClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.version = options.version ?? 'v1';
    this.fetchImpl = options.fetch ?? fetch;
  }

  /** The headers SPEC-1.2/SPEC-1.3 say every call carries. */
  headers(extra: Record<string, string> = {}): Record<string, string> {
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json', ...extra };
    if (this.options.apiKey) headers['service.api-token'] = this.options.apiKey;
    if (this.options.user) headers['service.user'] = this.options.user;
    return headers;
  }

  url(path: string): string {
    return `${this.baseUrl}/api/${this.version}${path}`;
  }

  /** Sends one request and returns the raw response (binary downloads, custom bodies). */
  async fetchRaw(
    method: string,
    path: string,
    init: { headers?: Record<string, string>; body?: RequestInit['body'] } = {},
  ): Promise<Response> {
    return this.fetchImpl(this.url(path), {
      method,
      headers: this.headers(init.headers),
      body: init.body,
      signal: AbortSignal.timeout(this.options.timeoutMs ?? 60_000),
    });
  }

  /** Calls a JSON endpoint; resolves with the parsed body or rejects with an ApiError. */
  async call<E extends Endpoint>(endpoint: E, input: CallInput<E> = {}): Promise<ReplyOf<E>> {
    const path = expandPath(endpoint.path, input.params as Record<string, unknown>) + queryString(input.query as Record<string, unknown>);
    const response = await this.fetchRaw(endpoint.method, path, {
      headers: input.headers,
      body: input.body === undefined ? undefined : JSON.stringify(input.body),
    });
    return (await AttestClient.read(response)) as ReplyOf<E>;
  }

  /** Parses a response: JSON body on success, undefined on 204, ApiError on a problem. */
  static async read(response: Response): Promise<unknown> {
    const text = await response.text();
    if (!response.ok) {
      let problem: Record<string, unknown> = {};
      try {
        problem = JSON.parse(text) as Record<string, unknown>;
      } catch {
        problem = { detail: text.slice(0, 200) };
      }
      throw new ApiError(response.status, String(problem.code ?? 'UNKNOWN'), problem);
    }
    return text === '' ? undefined : JSON.parse(text);
  }
}

export function createClient(options: ClientOptions): AttestClient {
  return new AttestClient(options);
}
