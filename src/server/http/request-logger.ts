import type { FastifyBaseLogger } from 'fastify';
import { UUID_PATTERN } from '../../api/common.ts';

// Request logs: the per-request logger and the URL as logged.
//
// Every request gets its own logger, bound to its request id and, once authenticated, to the key and
// user ids (AUTH-9). Making pino's child and re-serialising its bindings cost about 5% of a cached
// read, for lines that at the default levels are mostly never written. So Fastify's
// `childLoggerFactory` (`requestLogger`) answers a lazy logger: pino's child is made on the first
// line written at an enabled level, with every binding given until then. It uses pino's public
// methods only (`child`, `setBindings`, `bindings`, `isLevelEnabled`).

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';
type Bindings = Record<string, unknown>;
type PinoLogger = FastifyBaseLogger & {
  setBindings(bindings: Bindings): void;
  bindings(): Bindings;
  isLevelEnabled(level: string): boolean;
};

export class RequestLogger {
  #child: PinoLogger | undefined;

  constructor(
    private readonly parent: PinoLogger,
    private readonly pending: Bindings,
  ) {}

  get level(): string {
    return this.#child?.level ?? this.parent.level;
  }

  set level(level: string) {
    this.#real().level = level;
  }

  isLevelEnabled(level: string): boolean {
    return this.#child ? this.#child.isLevelEnabled(level) : this.parent.isLevelEnabled(level);
  }

  fatal(...args: unknown[]): void {
    this.#write('fatal', args);
  }
  error(...args: unknown[]): void {
    this.#write('error', args);
  }
  warn(...args: unknown[]): void {
    this.#write('warn', args);
  }
  info(...args: unknown[]): void {
    this.#write('info', args);
  }
  debug(...args: unknown[]): void {
    this.#write('debug', args);
  }
  trace(...args: unknown[]): void {
    this.#write('trace', args);
  }
  silent(): void {}

  child(bindings: Bindings, options?: object): FastifyBaseLogger {
    return this.#real().child(bindings, options);
  }

  /** Adds bindings to every later line; before the first line, only to a plain object. */
  setBindings(bindings: Bindings): void {
    if (this.#child) this.#child.setBindings(bindings);
    else Object.assign(this.pending, bindings);
  }

  bindings(): Bindings {
    return this.#child ? this.#child.bindings() : { ...this.parent.bindings(), ...this.pending };
  }

  #write(level: Level, args: unknown[]): void {
    if (!this.isLevelEnabled(level)) return;
    (this.#real()[level] as (...a: unknown[]) => void)(...args);
  }

  #real(): PinoLogger {
    this.#child ??= this.parent.child(this.pending) as PinoLogger;
    return this.#child;
  }
}

/**
 * Fastify's `childLoggerFactory`: each request's logger is a lazy one; a route with a level or
 * serializers of its own (none has them today) gets pino's child at once.
 */
export function requestLogger(logger: FastifyBaseLogger, bindings: Bindings, options: object): FastifyBaseLogger {
  if (Object.keys(options).length > 0) return logger.child(bindings, options);
  return new RequestLogger(logger as PinoLogger, bindings) as unknown as FastifyBaseLogger;
}

const SENSITIVE_QUERY = /key|token|secret|password|user/i;
const REDACTED = '[redacted]';

/**
 * What a key looks like (src/server/security/api-key.ts): a standard or session key, or a part of
 * one long enough to matter, and a UUID, which is the shape of an old-format key. Unanchored: a
 * key glued to other text is still a key.
 */
const STANDARD_KEY_LIKE = /at[ks]_[0-9A-Za-z]{8}/;
const UUID_LIKE = new RegExp(UUID_PATTERN);
/** Anything that might hold a key, checked on the raw URL first: most URLs skip the slow path. */
const MIGHT_HOLD_KEY = /at[ks]_|[0-9A-Fa-f]{8}-|%/;
/** Names of id parameters (`projectId`, `testRunId`, `ids`, …): their UUIDs are resource ids. */
const ID_NAME = /(Id|Ids|^ids)$/;

/** The UUIDs a route's id path parameters hold: the only UUIDs a logged path keeps. */
function idValuesOf(params: unknown): Set<string> | undefined {
  if (typeof params !== 'object' || params === null) return undefined;
  const ids = new Set<string>();
  for (const [name, value] of Object.entries(params)) {
    if (ID_NAME.test(name) && typeof value === 'string') ids.add(value);
  }
  return ids;
}

function decoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** Whether a text (a path segment or a query value, decoded) holds something shaped like a key. */
const holdsKey = (text: string, uuidIsId: boolean) => STANDARD_KEY_LIKE.test(text) || (!uuidIsId && UUID_LIKE.test(text));

/**
 * Request URL for logs, without keys (AUTH-9, SEC-2a). Keys are only taken from the header, but a
 * client may still put one in a URL by mistake, and a log must not keep it:
 * - a query parameter with a credential-looking name (`api_key`, `token`, …) is masked whatever it holds;
 * - a path segment or query value holding a standard or session key (`atk_…`, `ats_…`, even in part
 *   or percent-encoded) is masked, wherever it is;
 * - one holding a UUID, the shape of an old-format key, is masked too, unless it is the value of
 *   an id parameter: a path parameter the matched route declares (`/testruns/{testRunId}`, from
 *   `params`) or a query parameter named like one (`?jobId=`). Those UUIDs are resource ids, which
 *   the logs exist to show, unless `isOldFormatKey` knows the UUID as a stored old-format key (an
 *   old-format key pasted into an id's place): then it is masked as well.
 */
export function redactUrl(url: string, params?: unknown, isOldFormatKey: (uuid: string) => boolean = () => false): string {
  if (!MIGHT_HOLD_KEY.test(url) && !url.includes('?')) return url;
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  let loggedPath = path;
  if (MIGHT_HOLD_KEY.test(path)) {
    const ids = idValuesOf(params);
    loggedPath = path
      .split('/')
      .map((segment) => {
        const text = decoded(segment);
        const isId = ids?.has(text) === true && UUID_LIKE.exec(text)?.[0] === text && !isOldFormatKey(text);
        return holdsKey(text, isId) ? REDACTED : segment;
      })
      .join('/');
  }
  if (q < 0) return loggedPath;
  const query = url.slice(q + 1);
  const parsed = new URLSearchParams(query);
  let masked = false;
  for (const [name, value] of parsed) {
    if (maskedParameter(name, value, isOldFormatKey)) {
      masked = true;
      break;
    }
  }
  if (!masked) return `${loggedPath}?${query}`;
  const out = new URLSearchParams();
  for (const [name, value] of parsed) {
    if (holdsKey(name, false)) out.append(REDACTED, REDACTED);
    else out.append(name, maskedParameter(name, value, isOldFormatKey) ? REDACTED : value);
  }
  return `${loggedPath}?${out.toString()}`;
}

/** Whether a query parameter is logged masked: a credential's name, or a key in its name or value. */
const maskedParameter = (name: string, value: string, isOldFormatKey: (uuid: string) => boolean) =>
  SENSITIVE_QUERY.test(name) || holdsKey(name, false) || holdsKey(value, ID_NAME.test(name) && isIdList(value, isOldFormatKey));

/**
 * A value of an id query parameter: one UUID or a comma-separated list of them, nothing else glued
 * on, and none a stored old-format key.
 */
function isIdList(value: string, isOldFormatKey: (uuid: string) => boolean): boolean {
  return value.split(',').every((part) => (UUID_LIKE.exec(part)?.[0] === part && !isOldFormatKey(part)) || !UUID_LIKE.test(part));
}
