/** How the client retries an idempotent call. */
export interface RetryPolicy {
  /** Tries in all, the first included (default 5). */
  attempts: number;
  /** The first backoff in milliseconds, doubled on each retry, with ±50 % jitter (default 250). */
  baseDelayMs: number;
  /** No single wait is longer, whatever `Retry-After` asks (default 30 s). */
  maxDelayMs: number;
}

const DEFAULTS: RetryPolicy = { attempts: 5, baseDelayMs: 250, maxDelayMs: 30_000 };

/** Answers worth asking again: rate limited, or the server is overloaded or starting. */
const RETRYABLE_STATUS = new Set([429, 503]);

/** `Retry-After` in milliseconds: delta-seconds or an HTTP date (RFC 9110 §10.2.3); undefined when absent or unreadable. */
export function retryAfterMs(value: string | null, now = Date.now()): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Runs `send` until it answers something other than 429/503 or the attempts run out. A network
 * error (the fetch rejects) is retried the same way, but a timeout of our own is not: the server
 * may still be working on it and waiting longer will not help.
 */
export async function retrying(send: () => Promise<Response>, options: Partial<RetryPolicy> = {}): Promise<Response> {
  const policy = { ...DEFAULTS, ...options };
  for (let attempt = 1; ; attempt++) {
    const backoff = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1) * (0.5 + Math.random()));
    let response: Response;
    try {
      response = await send();
    } catch (error) {
      if (attempt >= policy.attempts || !isNetworkError(error)) throw error;
      await sleep(backoff);
      continue;
    }
    if (!RETRYABLE_STATUS.has(response.status) || attempt >= policy.attempts) return response;
    const asked = retryAfterMs(response.headers.get('retry-after'));
    await response.body?.cancel().catch(() => {});
    await sleep(Math.min(policy.maxDelayMs, asked ?? backoff));
  }
}

function isNetworkError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  // A timeout or an abort is the caller's decision, not the network's.
  if (error.name === 'TimeoutError' || error.name === 'AbortError') return false;
  return error instanceof TypeError || 'code' in error;
}
