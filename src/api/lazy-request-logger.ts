import type { FastifyBaseLogger } from "fastify";
import type { Bindings, ChildLoggerOptions, Logger } from "pino";

type Level = "fatal" | "error" | "warn" | "info" | "debug" | "trace";
type Write = (...args: unknown[]) => void;

/**
 * A request's logger that is pino's child (bound to the request id) only
 * once it writes a line its level lets through. fastify makes a child per
 * request, and pino's child() serializes its bindings each time: about 1%
 * of the server's CPU per job registration, for lines that are almost never
 * written (request logging is off; handlers log on errors).
 */
class LazyRequestLogger {
  private real: FastifyBaseLogger | undefined;

  constructor(
    private readonly parent: Logger,
    private readonly bindings: Bindings,
  ) {}

  get level(): string {
    return this.real?.level ?? this.parent.level;
  }

  set level(level: string) {
    this.child$().level = level;
  }

  fatal(...args: unknown[]): void {
    this.write("fatal", args);
  }
  error(...args: unknown[]): void {
    this.write("error", args);
  }
  warn(...args: unknown[]): void {
    this.write("warn", args);
  }
  info(...args: unknown[]): void {
    this.write("info", args);
  }
  debug(...args: unknown[]): void {
    this.write("debug", args);
  }
  trace(...args: unknown[]): void {
    this.write("trace", args);
  }
  silent(): void {}

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.child$().child(bindings, options);
  }

  private write(level: Level, args: unknown[]): void {
    if (!this.real && !this.parent.isLevelEnabled(level)) return;
    (this.child$()[level] as Write)(...args);
  }

  private child$(): FastifyBaseLogger {
    this.real ??= this.parent.child(this.bindings) as FastifyBaseLogger;
    return this.real;
  }
}

/**
 * fastify's childLoggerFactory: a lazy child, unless the route asks for a
 * level or serializers of its own (the child must then be pino's from the start).
 */
export function lazyChildLogger(
  logger: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildLoggerOptions,
): FastifyBaseLogger {
  if (options.level !== undefined || options.serializers !== undefined)
    return logger.child(bindings, options);
  // The server's logger is pino's (buildApi passes it as loggerInstance); the
  // class has every member FastifyBaseLogger names, with looser argument types.
  return new LazyRequestLogger(logger as unknown as Logger, bindings) as unknown as FastifyBaseLogger;
}
