import type { FastifyBaseLogger } from 'fastify';

// Request logs: the per-request logger and the URL as logged.
//
// Every request gets its own logger, bound to its request id and, once authenticated, to the key and
// user ids (AUTH-9). Making pino's child and re-serialising its bindings cost about 5% of a cached
// read, for lines that at the default levels are mostly never written. So the child is made on the
// first line written at an enabled level, with every binding given until then.

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
 * Fastify's `childLoggerFactory`: a lazy request logger, unless the route sets its own level or
 * serializers (none does today), which need pino's child from the start.
 */
export function requestLogger(logger: FastifyBaseLogger, bindings: Bindings, options: object): FastifyBaseLogger {
  if (Object.keys(options).length > 0) return logger.child(bindings, options);
  return new RequestLogger(logger as PinoLogger, bindings) as unknown as FastifyBaseLogger;
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
