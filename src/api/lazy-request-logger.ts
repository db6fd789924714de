import type { FastifyBaseLogger } from "fastify";
import type { Bindings, ChildLoggerOptions } from "pino";

type LogArgs = Parameters<FastifyBaseLogger["info"]>;

/**
 * A request's logger that becomes the pino child fastify would have made
 * (the same bindings and options, so the same lines) the first time
 * something is logged through it. fastify makes one logger per request;
 * with request logging off almost no request logs anything, and a pino
 * child with options costs its formatters and the bindings' JSON on every
 * call, heartbeats included.
 */
export class LazyRequestLogger implements FastifyBaseLogger {
  private made: FastifyBaseLogger | undefined;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {}

  private get logger(): FastifyBaseLogger {
    this.made ??= this.parent.child(this.bindings, this.options);
    return this.made;
  }

  get level(): string {
    return this.made?.level ?? this.options.level ?? this.parent.level;
  }

  set level(level: string) {
    this.logger.level = level;
  }

  fatal(...args: LogArgs): void {
    this.logger.fatal(...args);
  }
  error(...args: LogArgs): void {
    this.logger.error(...args);
  }
  warn(...args: LogArgs): void {
    this.logger.warn(...args);
  }
  info(...args: LogArgs): void {
    this.logger.info(...args);
  }
  debug(...args: LogArgs): void {
    this.logger.debug(...args);
  }
  trace(...args: LogArgs): void {
    this.logger.trace(...args);
  }
  silent(...args: LogArgs): void {
    this.logger.silent(...args);
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.logger.child(bindings, options);
  }
}

/**
 * `log` as fastify's logger instance, so that each request's logger is a
 * LazyRequestLogger made by fastify's own child logger factory: a request's
 * logger from any other factory is checked on every request (fastify's
 * validateLogger: an array and a lookup per method, about 1.5 µs). fastify
 * makes its own logger once, as a child of this one (its serializers
 * added); that child, as pino's children are, is an object whose prototype
 * is the logger it came from, and its `child` makes the lazy ones.
 */
export function lazyRequestLoggers(log: FastifyBaseLogger): FastifyBaseLogger {
  const instance: FastifyBaseLogger = Object.create(log);
  instance.child = (bindings, options) => {
    const own = log.child(bindings, options);
    const requests: FastifyBaseLogger = Object.create(own);
    requests.child = (requestBindings, requestOptions) =>
      new LazyRequestLogger(own, requestBindings, requestOptions ?? {});
    return requests;
  };
  return instance;
}
