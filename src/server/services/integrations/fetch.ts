import { OutgoingError, type OutgoingRequest, sendOutgoing } from '../../outgoing/request.ts';
import { SECRET_SCANNING_REGEX } from '../../security/api-key.ts';

// The calls the integrations make to code hosts and issue trackers (docs/integrations.md, FORGE-7):
// every one through `integrationFetch`, a `fetch` (Octokit takes it as its `request.fetch`) over
// `sendOutgoing` (src/server/outgoing): loopback, link-local and private addresses refused unless
// the instance allows them (the URLs are a manager's, not an admin's) with the connection pinned
// to the checked address, no redirects followed, a deadline, and a capped answer. Each fetch is
// bound to the origin its integration's secrets were given for (FORGE-8), and the credentials it
// sends are masked out of what comes back, so an answer echoing a header cannot show them (FORGE-9).

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
  /**
   * The API URL the integration's secrets were given for. A request to any other origin is
   * refused before anything is sent, so nothing (Octokit following a `Link` header, say) carries
   * them elsewhere.
   */
  boundTo: string;
  /** The stored secrets, masked in all their forms out of every answer, beside the credentials each request sends. */
  secrets?: readonly (string | null | undefined)[];
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
 * or an answer past the cap is an IntegrationError; any status is an answer. A URL outside the
 * bound origin is refused unsent, and the answer comes back with every credential the request
 * carried (and the stored secrets) masked, in its body and its headers.
 */
export function integrationFetch(options: IntegrationFetchOptions): typeof fetch {
  const maxResponseBytes = options.maxResponseBytes ?? INTEGRATION_MAX_RESPONSE_BYTES;
  const origin = new URL(options.boundTo).origin;
  return async (input, init) => {
    const url = input instanceof Request ? input.url : String(input);
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      throw new IntegrationError('a call to a URL that is not absolute was refused');
    }
    if (target.origin !== origin) {
      throw new IntegrationError(`a call to ${target.origin} was refused: the integration's credentials are for ${origin} only`);
    }
    const method = (init?.method ?? 'GET').toUpperCase();
    if (!METHODS.has(method)) throw new IntegrationError(`${method} is not a method the integrations use`);
    if (init?.body !== undefined && init.body !== null && typeof init.body !== 'string') {
      throw new IntegrationError('the integrations send JSON text only');
    }
    const headers = headerRecord(init?.headers);
    const request: OutgoingRequest = {
      url,
      method: method as OutgoingRequest['method'],
      headers,
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
    if (answer.truncated) throw new IntegrationError(`${target.host} answered more than ${maxResponseBytes} bytes`);
    // What was sent must not come back readable: a service or a proxy echoing the request's headers
    // in its answer would otherwise put them in an error detail, a log line or a stored title.
    const sent = [...(options.secrets ?? []), ...credentialsIn(headers)];
    const answerHeaders: Record<string, string> = {};
    for (const [name, value] of Object.entries(answer.headers)) answerHeaders[name] = maskSecrets(value, sent);
    const text = maskSecrets(answer.text, sent);
    const empty = text === '' && (answer.status === 204 || answer.status === 205 || answer.status === 304);
    return new Response(empty ? null : text, { status: answer.status, headers: answerHeaders });
  };
}

/** Request headers that carry a credential, by their name (Authorization, PRIVATE-TOKEN, X-Api-Key, Cookie, …). */
const CREDENTIAL_HEADER = /auth|token|key|secret|cookie/i;

/**
 * The credentials a request sends: each credential header's value and, after a scheme (`Bearer x`,
 * `token x`, `Basic x`), the credential alone; a Basic pair is decoded, so `user:password` and the
 * password alone are masked too wherever they appear.
 */
export function credentialsIn(headers: Record<string, string>): string[] {
  const found: string[] = [];
  for (const [name, value] of Object.entries(headers)) {
    if (!CREDENTIAL_HEADER.test(name)) continue;
    found.push(value);
    const scheme = /^(\w+)\s+(\S+)$/.exec(value.trim());
    if (!scheme) continue;
    const credential = scheme[2] as string;
    found.push(credential);
    if (scheme[1]?.toLowerCase() === 'basic') {
      const pair = Buffer.from(credential, 'base64').toString('utf8');
      const colon = pair.indexOf(':');
      if (colon >= 0) found.push(pair, pair.slice(colon + 1));
    }
  }
  return found;
}

/** What a masked secret becomes, as in the request log. */
export const REDACTED = '[redacted]';
/** Shorter secrets are not masked: replacing every `abc` would hide the message, not a secret. */
const MIN_SECRET_LENGTH = 4;

/** The forms a secret may take in an answer: as given, base64 (padded or not) and base64url, percent-encoded, JSON-escaped. */
function formsOf(secret: string): string[] {
  const bytes = Buffer.from(secret, 'utf8');
  const base64 = bytes.toString('base64');
  const json = JSON.stringify(secret).slice(1, -1);
  return [
    secret,
    base64,
    base64.replace(/=+$/, ''),
    bytes.toString('base64url'),
    encodeURIComponent(secret),
    json,
    json.replaceAll('/', '\\/'),
  ];
}

/** `text` with every secret, in every form it may take (`formsOf`), replaced by `[redacted]`. */
export function maskSecrets(text: string, secrets: readonly (string | null | undefined)[]): string {
  const forms = new Set<string>();
  for (const secret of secrets) {
    if (typeof secret === 'string' && secret.length >= MIN_SECRET_LENGTH) for (const form of formsOf(secret)) forms.add(form);
  }
  let out = text;
  // Longest first: a form that holds another (the Basic pair holds the password) goes whole.
  for (const form of [...forms].sort((a, b) => b.length - a.length)) {
    if (form.length >= MIN_SECRET_LENGTH && out.includes(form)) out = out.split(form).join(REDACTED);
  }
  return out;
}

/**
 * Credentials known by their shape, whoever's they are: PEM private keys, the value after an
 * authentication scheme (12 characters or more, one at least a digit or a symbol, so `Basic
 * authentication` stays readable), PRIVATE-TOKEN and API-key headers, GitHub's and GitLab's token
 * prefixes, JWTs, and Attest's own keys (the secret-scanning pattern of docs/api-keys.md).
 */
const CREDENTIAL_SHAPES: [RegExp, string][] = [
  [/-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)/g, REDACTED],
  [/\b(Basic|Bearer|token|Digest)(\s+)(?=[A-Za-z0-9._~+/=-]*[0-9+/=_-])[A-Za-z0-9._~+/=-]{12,}/gi, `$1$2${REDACTED}`],
  [/\b(private[-_]token|x-api-key|api[-_]key)(["']?\s*[:=]\s*["']?)[^\s"',;}]+/gi, `$1$2${REDACTED}`],
  [/\b(?:gh[pousr]_[A-Za-z0-9_]{16,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{16,})/g, REDACTED],
  [/\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*/g, REDACTED],
  [new RegExp(SECRET_SCANNING_REGEX, 'g'), REDACTED],
];

/**
 * What may be shown, logged or stored of an integration's error: the secrets masked in every form
 * (`maskSecrets`), then anything shaped like a credential, then cut to `maxLength`; masked before
 * the cut, so no secret is left half shown at it.
 */
export function masked(text: string, secrets: readonly (string | null | undefined)[], maxLength = 1000): string {
  let out = maskSecrets(text, secrets);
  for (const [shape, replacement] of CREDENTIAL_SHAPES) out = out.replace(shape, replacement);
  return out.slice(0, maxLength);
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
      `${init.method} ${new URL(url).pathname} answered ${response.status}: ${masked(text, [], 300)}`,
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
