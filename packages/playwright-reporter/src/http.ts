import { isOldFormatKey, type Settings } from './options.ts';

/** A call that did not succeed; `unreachable` when the server never answered (network error or time-out). */
export class SendError extends Error {
  readonly status: number | undefined;
  readonly unreachable: boolean;

  constructor(message: string, status?: number, unreachable = false) {
    super(message);
    this.name = 'SendError';
    this.status = status;
    this.unreachable = unreachable;
  }
}

const ATTEMPTS = 5;
const BASE_DELAY_MS = 250;
const MAX_DELAY_MS = 10_000;
const REQUEST_TIMEOUT_MS = 30_000;
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

  private async send<T>(method: string, path: string, body: () => string | FormData | undefined, contentType?: string): Promise<T> {
    const where = `${method} /api/v1${path}`;
    for (let attempt = 1; ; attempt++) {
      if (this.down) throw new SendError(`${where}: the server is unreachable`, undefined, true);
      if (this.abort.signal.aborted) throw new SendError(`${where}: not sent before the flush deadline`);
      let response: Response;
      try {
        response = await fetch(`${this.settings.url}/api/v1${path}`, {
          method,
          headers: this.headers(contentType),
          body: body(),
          signal: AbortSignal.any([this.abort.signal, AbortSignal.timeout(REQUEST_TIMEOUT_MS)]),
        });
      } catch (error) {
        if (this.abort.signal.aborted) throw new SendError(`${where}: cut at the flush deadline`);
        if (attempt >= ATTEMPTS) {
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
