import { IS_UUID } from '../api/common.ts';
import type { BodyOf, Endpoint, ParamsOf, QueryOf, ReplyOf } from '../api/endpoint.ts';
import { completeJob, exportJob } from '../api/v1/jobs.ts';
import type { EXPORT_FORMATS } from '../api/v1/results.ts';
import { claimRun, heartbeatRun } from '../api/v1/runs.ts';
import { type RetryPolicy, retrying } from './retry.ts';

export * as v1 from '../api/v1/index.ts';
export { type RetryPolicy, retryAfterMs } from './retry.ts';

/** How the client authenticates: a standard key alone, or an old-format (UUID) key with its owner's e-mail. */
export interface Credentials {
  apiKey: string;
  /** Only for old-format keys: sent as `service.user`, and required with them. */
  user?: string;
}

export interface ClientOptions extends Partial<Credentials> {
  /** The instance base URL, e.g. `https://attest.example.com` (no `/api/v1`). */
  baseUrl: string;
  version?: string;
  /** Custom fetch (tests, proxies, the server exporting through its own routes); defaults to the global one. */
  fetch?: typeof fetch;
  /** Per-request timeout in milliseconds (default 60 s). */
  timeoutMs?: number;
  /** Retries of idempotent calls; `{ attempts: 1 }` turns them off. */
  retry?: Partial<RetryPolicy>;
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

/** The client was configured so that no call could succeed; raised before anything is sent. */
export class ClientConfigError extends Error {
  override name = 'ClientConfigError';
}

/** The shape of an old-format key (SPEC-1.3): a UUID. Such a key is only valid with its owner's e-mail. */
export const OLD_FORMAT_KEY = IS_UUID;

type Optional<T> = T extends Record<string, never> | undefined ? T | undefined : T;

export type CallInput<E extends Endpoint> = {
  params?: Optional<ParamsOf<E>>;
  query?: Optional<QueryOf<E>>;
  body?: BodyOf<E>;
  headers?: Record<string, string>;
};

/** One file part of an artifact upload. */
export interface UploadFile {
  /** `file`, or `baseline` / `actual` / `diff` for a visual diff. */
  field?: 'file' | 'baseline' | 'actual' | 'diff';
  name: string;
  bytes: Uint8Array;
  type?: string;
}

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

/** Methods a retry cannot make happen twice (RFC 9110 §9.2.2). */
const IDEMPOTENT = new Set(['GET', 'HEAD', 'PUT', 'DELETE', 'OPTIONS']);

/**
 * The typed Attest client: every call is one contract endpoint, its input and output types derive
 * from it. Idempotent calls are retried on 429, 503 and network errors, honouring `Retry-After`.
 */
export class AttestClient {
  readonly baseUrl: string;
  readonly version: string;
  private readonly fetchImpl: typeof fetch;
  private readonly retry: Partial<RetryPolicy>;

  constructor(private readonly options: ClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.version = options.version ?? 'v1';
    this.fetchImpl = options.fetch ?? fetch;
    this.retry = options.retry ?? {};
  }

  /** Whether the key is an old-format one, which travels with `service.user`. */
  get oldFormatKey(): boolean {
    return this.options.apiKey !== undefined && OLD_FORMAT_KEY.test(this.options.apiKey);
  }

  /** The headers SPEC-1.2/SPEC-1.3 say every call carries: the key, and the e-mail only beside an old-format key. */
  headers(extra: Record<string, string> = {}): Record<string, string> {
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json', ...extra };
    if (this.options.apiKey) headers['service.api-token'] = this.options.apiKey;
    if (this.oldFormatKey && this.options.user) headers['service.user'] = this.options.user;
    return headers;
  }

  url(path: string): string {
    return `${this.baseUrl}/api/${this.version}${path}`;
  }

  /**
   * Sends one request and returns the raw response (binary downloads, custom bodies). A GET, HEAD,
   * PUT or DELETE is retried on 429, 503 and network errors, and any call its endpoint documents
   * as idempotent (`init.idempotent`); the last answer or error is the result.
   */
  async fetchRaw(
    method: string,
    path: string,
    init: { headers?: Record<string, string>; body?: RequestInit['body']; idempotent?: boolean } = {},
  ): Promise<Response> {
    if (this.oldFormatKey && !this.options.user) {
      throw new ClientConfigError('an old-format (UUID) key needs the e-mail of its owner: set ATTEST_USER or pass --email');
    }
    const send = () =>
      this.fetchImpl(this.url(path), {
        method,
        headers: this.headers(init.headers),
        body: init.body,
        signal: AbortSignal.timeout(this.options.timeoutMs ?? 60_000),
      });
    return init.idempotent || IDEMPOTENT.has(method.toUpperCase()) ? retrying(send, this.retry) : send();
  }

  /** Calls a JSON endpoint; resolves with the parsed body or rejects with an ApiError. */
  async call<E extends Endpoint>(endpoint: E, input: CallInput<E> = {}): Promise<ReplyOf<E>> {
    const response = await this.fetchRaw(endpoint.method, this.pathOf(endpoint, input), {
      headers: input.headers,
      body: input.body === undefined ? undefined : JSON.stringify(input.body),
    });
    return (await AttestClient.read(response)) as ReplyOf<E>;
  }

  /**
   * Closes a launch (`POST /testmgmt/jobs/{jobId}/complete`): what a reporter or an import sends
   * once it is done, so the job can say `completed`. The server answers a repeat with the job as it
   * is, so this POST is retried like a GET.
   */
  async completeJob(jobId: string): Promise<ReplyOf<typeof completeJob>> {
    const response = await this.fetchRaw('POST', this.pathOf(completeJob, { params: { jobId } }), { idempotent: true });
    return (await AttestClient.read(response)) as ReplyOf<typeof completeJob>;
  }

  /**
   * A runner takes the oldest queued run it can serve (`POST /testmgmt/testruns/claim`): the run,
   * `running` under the runner's lease, or undefined when none is queued for it (204). Not retried:
   * a retry could take a second run.
   */
  async claimRun(body: BodyOf<typeof claimRun>): Promise<ReplyOf<typeof claimRun> | undefined> {
    return this.call(claimRun, { body });
  }

  /**
   * Extends the runner's lease on a run it claimed (`POST /testmgmt/testruns/{testRunId}/heartbeat`).
   * Extending it twice does no harm, so this POST is retried like a GET. A lease already lost is an
   * ApiError 409 `STATE_CONFLICT`: the runner must stop working on the run.
   */
  async heartbeatRun(testRunId: string, body: BodyOf<typeof heartbeatRun>): Promise<ReplyOf<typeof heartbeatRun>> {
    const response = await this.fetchRaw('POST', this.pathOf(heartbeatRun, { params: { testRunId } }), {
      body: JSON.stringify(body),
      idempotent: true,
    });
    return (await AttestClient.read(response)) as ReplyOf<typeof heartbeatRun>;
  }

  /** The path and query of a call, relative to the version root. */
  pathOf<E extends Endpoint>(endpoint: E, input: Pick<CallInput<E>, 'params' | 'query'> = {}): string {
    return expandPath(endpoint.path, input.params as Record<string, unknown>) + queryString(input.query as Record<string, unknown>);
  }

  /**
   * Attaches evidence to a run (`POST /projects/{projectId}/artifact`, multipart): the metadata
   * part first, then the files. Not retried unless `metadata.idempotencyKey` makes a retry harmless.
   */
  async upload(projectId: string, metadata: Record<string, unknown>, files: UploadFile[]): Promise<Record<string, unknown>> {
    const form = () => {
      const body = new FormData();
      body.append('metadata', JSON.stringify(metadata));
      for (const file of files) {
        body.append(
          file.field ?? 'file',
          new Blob([file.bytes as Uint8Array<ArrayBuffer>], { type: file.type ?? 'application/octet-stream' }),
          file.name,
        );
      }
      return body;
    };
    const path = `/projects/${encodeURIComponent(projectId)}/artifact`;
    const send = async () => {
      if (this.oldFormatKey && !this.options.user) throw new ClientConfigError('an old-format (UUID) key needs the e-mail of its owner');
      const headers = this.headers();
      delete headers['content-type'];
      return this.fetchImpl(this.url(path), {
        method: 'POST',
        headers,
        body: form(),
        signal: AbortSignal.timeout(this.options.timeoutMs ?? 60_000),
      });
    };
    const response = metadata.idempotencyKey === undefined ? await send() : await retrying(send, this.retry);
    return (await AttestClient.read(response)) as Record<string, unknown>;
  }

  /**
   * Imports a report (`POST /projects/{projectId}/imports`): a JUnit XML file, a Playwright JSON
   * report, or a ZIP of reports and attachments, sent as the body itself with its options in the
   * query. `onProgress` hears the bytes sent. Retried only with `options.idempotencyKey`, which
   * makes a retry answer the import the first call started.
   */
  async importReport(
    projectId: string,
    file: { name: string; bytes: Uint8Array },
    options: Record<string, string | undefined> = {},
    onProgress?: (sent: number, total: number) => void,
  ): Promise<Record<string, unknown>> {
    const query = new URLSearchParams(Object.entries(options).filter((e): e is [string, string] => e[1] !== undefined)).toString();
    const path = `/projects/${encodeURIComponent(projectId)}/imports${query ? `?${query}` : ''}`;
    const { bytes } = file;
    const type =
      bytes[0] === 0x50 && bytes[1] === 0x4b ? 'application/zip' : /\.json$/i.test(file.name) ? 'application/json' : 'application/xml';
    const send = async () => {
      if (this.oldFormatKey && !this.options.user) throw new ClientConfigError('an old-format (UUID) key needs the e-mail of its owner');
      let sent = 0;
      const chunk = 256 * 1024;
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (sent >= bytes.length) return controller.close();
          const next = bytes.subarray(sent, sent + chunk);
          sent += next.length;
          controller.enqueue(next);
          onProgress?.(sent, bytes.length);
        },
      });
      const headers = this.headers({
        'content-type': type,
        'content-length': String(bytes.length),
        'content-disposition': `attachment; filename="${encodeURIComponent(file.name)}"`,
      });
      return this.fetchImpl(this.url(path), {
        method: 'POST',
        headers,
        body,
        duplex: 'half',
        signal: AbortSignal.timeout(this.options.timeoutMs ?? 600_000),
      } as RequestInit);
    };
    const response = options.idempotencyKey === undefined ? await send() : await retrying(send, this.retry);
    return (await AttestClient.read(response)) as Record<string, unknown>;
  }

  /**
   * A job's export (`GET /testmgmt/jobs/{jobId}/export`): ONE report per format for the whole job,
   * retries folded into their test. Resolves with the streamed answer (a ZIP, JUnit XML, Xray JSON or
   * an HTML report; read it with `arrayBuffer()` or `body`); a problem rejects with its ApiError.
   * `accept: 'application/zip'` asks JUnit for its ZIP, `'application/xml'` for the XML alone.
   */
  async exportJob(
    jobId: string,
    format: (typeof EXPORT_FORMATS)[number],
    options: { xrayProject?: string; accept?: string } = {},
  ): Promise<Response> {
    // The contract's union of literals is built from a list, which TypeBox's static type cannot follow.
    const query = { format, ...(options.xrayProject ? { xrayProject: options.xrayProject } : {}) } as unknown as QueryOf<typeof exportJob>;
    const response = await this.fetchRaw('GET', this.pathOf(exportJob, { params: { jobId }, query }), {
      headers: { accept: options.accept ?? '*/*' },
    });
    if (!response.ok) await AttestClient.read(response);
    return response;
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
