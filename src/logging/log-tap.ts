import { type DestinationStream, type Logger, type LoggerOptions, pino } from "pino";

/** Receives each line written at or above the level it subscribed with. Must not log through the tapped logger. */
export type LogListener = (level: number, line: string) => void;

/** The part of a pino destination the tap passes flushes on to. */
interface Flushable extends DestinationStream {
  flush?(cb?: (err?: Error) => void): void;
  flushSync?(): void;
}

const SILENT = Number.POSITIVE_INFINITY;

/**
 * The server's pino logger, with a tap for `/v1/agent/monitor`. pino decides
 * whether a call logs from its level before it builds the line, so a monitor
 * asking for more detail than the configured level lowers the logger's level
 * while it listens; the destination then writes only what the configured
 * level allows, and the listeners get the rest. Child loggers made without a
 * level of their own follow the root's level (pino children inherit the
 * level methods through their prototype), so the whole server's logging
 * follows. With nobody listening the level is the configured one and each
 * line costs one comparison more than a bare destination.
 */
export class LogTap {
  readonly logger: Logger;
  private readonly baseLevel: number;
  private readonly listeners = new Map<LogListener, number>();
  /** The lowest level any listener asked for (Infinity with none). */
  private listening = SILENT;
  private readonly sink: TapDestination;

  constructor(
    level: string,
    options: Omit<LoggerOptions, "level"> = {},
    private readonly destination: Flushable = pino.destination({ dest: 1 }),
  ) {
    this.baseLevel = levelValue(level);
    this.sink = new TapDestination((line) => this.write(line), destination);
    this.logger = pino({ ...options, level }, this.sink);
  }

  /** Starts passing lines at `level` or above to `listener`; returns the unsubscribe. */
  listen(level: number, listener: LogListener): () => void {
    this.listeners.set(listener, level);
    this.relevel();
    return () => {
      if (this.listeners.delete(listener)) this.relevel();
    };
  }

  get listenerCount(): number {
    return this.listeners.size;
  }

  private relevel(): void {
    this.listening = SILENT;
    for (const level of this.listeners.values()) this.listening = Math.min(this.listening, level);
    const lowest = Math.min(this.baseLevel, this.listening);
    this.logger.level = lowest === SILENT ? "silent" : (pino.levels.labels[lowest] ?? "trace");
  }

  private write(line: string): void {
    const level = this.sink.lastLevel;
    if (level >= this.baseLevel) this.destination.write(line);
    if (level < this.listening) return;
    for (const [listener, min] of this.listeners) {
      if (level < min) continue;
      try {
        listener(level, line);
      } catch {
        // A monitor's failure must not reach the code that logged.
      }
    }
  }
}

/**
 * The destination pino writes to. Marked as wanting metadata, so pino sets
 * `lastLevel` before each write (as it does for its multistream) and the
 * tap filters by level without parsing the line.
 */
class TapDestination implements DestinationStream {
  readonly [pino.symbols.needsMetadataGsym] = true;
  lastLevel = 0;
  lastTime = "";
  lastMsg = "";
  lastObj: object = {};
  lastLogger: Logger | undefined;

  constructor(
    readonly write: (line: string) => void,
    private readonly destination: Flushable,
  ) {}

  /** pino's logger.flush() lands here. */
  flush(cb?: (err?: Error) => void): void {
    if (this.destination.flush) this.destination.flush(cb);
    else cb?.();
  }

  flushSync(): void {
    this.destination.flushSync?.();
  }
}

/** pino's numeric value of a level name; "silent" is above every level. */
export function levelValue(level: string): number {
  if (level === "silent") return SILENT;
  const value = pino.levels.values[level];
  if (value === undefined) throw new Error(`unknown log level "${level}"`);
  return value;
}
