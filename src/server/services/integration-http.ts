import { OutgoingError, type OutgoingRequest, sendOutgoing } from '../outgoing/request.ts';

// The calls the integrations make to code hosts and issue trackers (docs/integrations.md, FORGE-7):
// every one through `integrationFetch`, a `fetch` (Octokit takes it as its `request.fetch`) over
// `sendOutgoing` (src/server/outgoing): loopback, link-local and private addresses refused unless
// the instance allows them (the URLs are a manager's, not an admin's) with the connection pinned
// to the checked address, no redirects followed, a deadline, and a capped answer.

/** How long one call may take, connection and answer together. */
export const INTEGRATION_TIMEOUT_MS = 15_000;
/** The most of an answer read: code hosts and trackers answer small JSON documents. */
export const INTEGRATION_MAX_RESPONSE_BYTES = 2 * 1024 * 1024;

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

const METHODS = new Set(['GET', 'POST', 'PATCH', 'PUT', 'DELETE']);

/** Request headers as a record, whatever form `fetch`'s caller gave them in. */
function headerRecord(headers: ConstructorParameters<typeof Headers>[0]): Record<string, string> {
  const record: Record<string, string> = {};
  new Headers(headers).forEach((value, name) => {
    record[name] = value;
  });
  return record;
}

/**
 * A `fetch` for the integrations over `sendOutgoing`: a refused or unreachable target, a timeout
 * or an answer past the cap is an IntegrationError; any status is an answer.
 */
export function integrationFetch(options: IntegrationFetchOptions): typeof fetch {
  const maxResponseBytes = options.maxResponseBytes ?? INTEGRATION_MAX_RESPONSE_BYTES;
  return async (input, init) => {
    const url = input instanceof Request ? input.url : String(input);
    const method = (init?.method ?? 'GET').toUpperCase();
    if (!METHODS.has(method)) throw new IntegrationError(`${method} is not a method the integrations use`);
    if (init?.body !== undefined && init.body !== null && typeof init.body !== 'string') {
      throw new IntegrationError('the integrations send JSON text only');
    }
    const request: OutgoingRequest = {
      url,
      method: method as OutgoingRequest['method'],
      headers: headerRecord(init?.headers),
      body: init?.body ?? undefined,
      timeoutMs: options.timeoutMs ?? INTEGRATION_TIMEOUT_MS,
    };
    let answer: Awaited<ReturnType<typeof sendOutgoing>>;
    try {
      answer = await sendOutgoing(request, { allowPrivate: options.allowPrivate, maxResponseBytes });
    } catch (error) {
      if (error instanceof OutgoingError) {
        const message =
          error.code === 'private_address'
            ? error.message.replace('ATTEST_WEBHOOK_ALLOW_PRIVATE', 'ATTEST_INTEGRATIONS_ALLOW_PRIVATE')
            : error.message;
        throw new IntegrationError(message);
      }
      throw error;
    }
    if (answer.truncated) throw new IntegrationError(`${new URL(url).host} answered more than ${maxResponseBytes} bytes`);
    const empty = answer.text === '' && (answer.status === 204 || answer.status === 205 || answer.status === 304);
    return new Response(empty ? null : answer.text, { status: answer.status, headers: answer.headers });
  };
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
