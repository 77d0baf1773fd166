import type { FastifyBaseLogger } from 'fastify';
import type { Bindings, ChildLoggerOptions } from 'pino';

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';
type LevelAware = FastifyBaseLogger & { isLevelEnabled(level: string): boolean };

/**
 * Fastify gives every request a child logger bound to its request id. With pino and our redaction
 * rules, making one costs more than authenticating the request, and at the production level (warn)
 * almost no request ever writes a line. This stand-in makes the real child on the first call at a
 * level that is enabled, so the line is exactly what the eager child would have written; a request
 * that logs nothing costs one small object.
 */
class RequestLogger {
  private made: FastifyBaseLogger | undefined = undefined;
  private more: Bindings | undefined = undefined;

  constructor(
    private readonly parent: LevelAware,
    private readonly bindings: Bindings,
  ) {}

  /** More bindings for every line; before the first line, merged only if a line is written. */
  bind(more: Bindings): FastifyBaseLogger {
    if (this.made) return this.made.child(more);
    this.more = this.more ? { ...this.more, ...more } : more;
    return this as unknown as FastifyBaseLogger;
  }

  private real(): FastifyBaseLogger {
    this.made ??= this.parent.child(this.more ? { ...this.bindings, ...this.more } : this.bindings);
    return this.made;
  }

  private enabled(level: Level): boolean {
    return ((this.made ?? this.parent) as LevelAware).isLevelEnabled(level);
  }

  get level(): string {
    return (this.made ?? this.parent).level;
  }

  set level(level: string) {
    this.real().level = level;
  }

  // Methods on the prototype, not per-instance arrow functions: a request pays for no closures.
  fatal(...args: unknown[]) {
    this.write('fatal', args);
  }
  error(...args: unknown[]) {
    this.write('error', args);
  }
  warn(...args: unknown[]) {
    this.write('warn', args);
  }
  info(...args: unknown[]) {
    this.write('info', args);
  }
  debug(...args: unknown[]) {
    this.write('debug', args);
  }
  trace(...args: unknown[]) {
    this.write('trace', args);
  }
  silent() {}

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.real().child(bindings, options);
  }

  private write(level: Level, args: unknown[]) {
    if (this.enabled(level)) (this.real()[level] as (...a: unknown[]) => void)(...args);
  }
}

/** A request's logger with more bindings on every line it writes (a trace's ids): the lazy stand-in takes them as its own. */
export function bindRequestLogger(log: FastifyBaseLogger, more: Bindings): FastifyBaseLogger {
  return log instanceof RequestLogger ? log.bind(more) : log.child(more);
}

/**
 * Fastify's childLoggerFactory: the lazy stand-in when the parent can say which levels are enabled
 * (pino) and the route asks for no options of its own (log level, serializers); otherwise the usual
 * eager child.
 */
export function requestChildLogger(logger: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions): FastifyBaseLogger {
  const lazy = typeof (logger as Partial<LevelAware>).isLevelEnabled === 'function' && Object.keys(options).length === 0;
  return lazy ? (new RequestLogger(logger as LevelAware, bindings) as unknown as FastifyBaseLogger) : logger.child(bindings, options);
}
