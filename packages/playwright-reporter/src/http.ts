import { isOldFormatKey, type Settings } from './options.ts';

/**
 * A call that did not succeed. `unreachable` when the server never answered (network error or
 * time-out) and did not answer a health probe either. An `outage` is the server's trouble (down,
 * 500, 502, 503, 504, 408, 429, the flush deadline): what the spool is for. Any other answer is a
 * refusal of this one call (a problem answer: 403, 413, 415, 507 quota…), which says nothing about
 * the next one.
 */
export class SendError extends Error {
  readonly status: number | undefined;
  readonly unreachable: boolean;
  readonly outage: boolean;

  constructor(message: string, status?: number, unreachable = false, outage = unreachable || (status !== undefined && OUTAGE(status))) {
    super(message);
    this.name = 'SendError';
    this.status = status;
    this.unreachable = unreachable;
    this.outage = outage;
  }
}

/** The server's trouble: the answers also retried (RETRYABLE). A 507 (storage full, quota) is a refusal of this upload. */
const OUTAGE = (status: number) => RETRYABLE.has(status);

const ATTEMPTS = 5;
const BASE_DELAY_MS = 250;
const MAX_DELAY_MS = 10_000;
const REQUEST_TIMEOUT_MS = 30_000;
const PROBE_TIMEOUT_MS = 5_000;
/** Answers worth asking again: every write carries an idempotency key (or is a state change that repeats harmlessly). */
const RETRYABLE = new Set([408, 429, 500, 502, 503, 504]);

/**
 * The reporter's HTTP: JSON and multipart calls to `/api/v1`, each retried with backoff
 * (250 ms × 2^n, five tries, `Retry-After` honoured up to 10 s). Once a call finds the server
 * unreachable after all its tries, the server counts as down and later calls fail at once: a dead
 * server costs the test run one call's retries, not one per result.
 */
export class AttestHttp {
  down = false;
  private readonly abort = new AbortController();
  private readonly settings: Settings;

  constructor(settings: Settings) {
    this.settings = settings;
  }

  /** Stops every call in flight and every wait (the flush deadline passed). */
  stop(): void {
    this.abort.abort();
  }

  json<T>(method: string, path: string, body?: unknown): Promise<T> {
    return this.send<T>(method, path, () => (body === undefined ? undefined : JSON.stringify(body)), 'application/json');
  }

  /** A multipart post; `form` builds a fresh body for every try. */
  multipart<T>(path: string, form: () => FormData): Promise<T> {
    return this.send<T>('POST', path, form);
  }

  private headers(contentType?: string): Record<string, string> {
    const headers: Record<string, string> = { accept: 'application/json', 'service.api-token': this.settings.apiKey };
    if (contentType) headers['content-type'] = contentType;
    if (this.settings.user && isOldFormatKey(this.settings.apiKey)) headers['service.user'] = this.settings.user;
    return headers;
  }

  private async send<T>(
    method: string,
    path: string,
    body: () => string | FormData | Uint8Array | undefined,
    contentType?: string,
  ): Promise<T> {
    const where = `${method} /api/v1${path}`;
    for (let attempt = 1; ; attempt++) {
      if (this.down) throw new SendError(`${where}: the server is unreachable`, undefined, true);
      if (this.abort.signal.aborted) throw new SendError(`${where}: not sent before the flush deadline`, undefined, false, true);
      let response: Response;
      try {
        response = await fetch(`${this.settings.url}/api/v1${path}`, {
          method,
          headers: this.headers(contentType),
          body: body(),
          signal: AbortSignal.any([this.abort.signal, AbortSignal.timeout(REQUEST_TIMEOUT_MS)]),
        });
      } catch (error) {
        if (this.abort.signal.aborted) throw new SendError(`${where}: cut at the flush deadline`, undefined, false, true);
        if (attempt >= ATTEMPTS) {
          // A connection cut while sending is also how a refusal can arrive (the server answered 403
          // or 507 and closed before the body was read; a proxy may make it a reset): if the server
          // answers a health probe, it is up, and only this call failed.
          if (await this.answers()) throw new SendError(`${where}: ${errorText(error)} (the server is up; this call alone failed)`);
          this.down = true;
          throw new SendError(`${where}: ${errorText(error)}`, undefined, true);
        }
        await this.wait(backoff(attempt));
        continue;
      }
      if (response.ok) return (response.status === 204 ? undefined : await response.json()) as T;
      const text = await response.text().catch(() => '');
      if (!RETRYABLE.has(response.status) || attempt >= ATTEMPTS) {
        throw new SendError(`${where}: ${response.status} ${problemOf(text)}`, response.status);
      }
      await this.wait(retryAfterMs(response.headers.get('retry-after')) ?? backoff(attempt));
    }
  }

  /** Whether the server answers at all: `GET /health`, any HTTP status counts. */
  private async answers(): Promise<boolean> {
    try {
      const response = await fetch(`${this.settings.url}/health`, {
        headers: { accept: 'application/json' },
        signal: AbortSignal.any([this.abort.signal, AbortSignal.timeout(PROBE_TIMEOUT_MS)]),
      });
      await response.body?.cancel();
      return true;
    } catch {
      return false;
    }
  }

  /** A raw body (a spooled report) posted as it is, with the same retries. */
  raw<T>(path: string, body: Uint8Array, contentType: string): Promise<T> {
    return this.send<T>('POST', path, () => body, contentType);
  }

  /** A pause between tries that the flush deadline cuts short. */
  private wait(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, Math.min(ms, MAX_DELAY_MS));
      const signal = this.abort.signal;
      function done() {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      }
      signal.addEventListener('abort', done);
    });
  }
}

const backoff = (attempt: number) => BASE_DELAY_MS * 2 ** (attempt - 1) * (0.75 + Math.random() / 2);

function retryAfterMs(value: string | null): number | undefined {
  if (!value?.trim()) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

function errorText(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (error instanceof Error ? error.message : String(error));
}

/** The problem's code and detail (RFC 9457), or the start of whatever the server said. */
function problemOf(text: string): string {
  try {
    const problem = JSON.parse(text) as { code?: string; detail?: string; title?: string };
    return [problem.code, problem.detail ?? problem.title].filter(Boolean).join(': ');
  } catch {
    return text.slice(0, 200);
  }
}
