import type { FastifyBaseLogger } from 'fastify';

// Request logs: the per-request logger and the URL as logged.
//
// Every request gets its own logger, bound to its request id and, once authenticated, to the key and
// user ids (AUTH-9). Making pino's child and re-serialising its bindings cost about 5% of a cached
// read, for lines that at the default levels are mostly never written. So the child is made on the
// first line written at an enabled level, with every binding given until then.
//
// Fastify makes each request's logger with the application logger's `child`, unless given a factory
// of its own; but it checks the logger a custom factory returns on every request (an array and seven
// look-ups, about 2% of a cached read's CPU). So the application logger's own `child` makes the lazy
// logger (`lazyChildren`).

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';
type Bindings = Record<string, unknown>;
type PinoLogger = FastifyBaseLogger & {
  setBindings(bindings: Bindings): void;
  bindings(): Bindings;
  isLevelEnabled(level: string): boolean;
};

type PinoChild = (this: PinoLogger, bindings: Bindings, options?: object) => PinoLogger;

export class RequestLogger {
  #child: PinoLogger | undefined;

  constructor(
    private readonly parent: PinoLogger,
    private readonly pending: Bindings,
    /** pino's own `child`, which makes the real logger. */
    private readonly pinoChild: PinoChild,
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
    this.#child ??= this.pinoChild.call(this.parent, this.pending);
    return this.#child;
  }
}

/**
 * Makes `logger.child(bindings)`, and its children's, answer a lazy request logger; a child with
 * options of its own (a route's level or serializers; none has them today) is pino's at once.
 * Fastify's default child-logger factory calls it for every request.
 */
export function lazyChildren(logger: FastifyBaseLogger): void {
  const pinoChild = logger.child as unknown as PinoChild;
  (logger as unknown as { child: PinoChild }).child = function child(this: PinoLogger, bindings: Bindings, options?: object) {
    if (options !== undefined && Object.keys(options).length > 0) return pinoChild.call(this, bindings, options);
    return new RequestLogger(this, bindings, pinoChild) as unknown as PinoLogger;
  };
}

const SENSITIVE_QUERY = /key|token|secret|password|user/i;

/** Request URL for logs: query values of credential-looking parameters are masked (AUTH-9). */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) return url;
  const params = new URLSearchParams(url.slice(q + 1));
  for (const name of [...params.keys()]) if (SENSITIVE_QUERY.test(name)) params.set(name, '[redacted]');
  return `${url.slice(0, q)}?${params.toString()}`;
}
