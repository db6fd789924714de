import type { IncomingMessage, ServerResponse } from "node:http";
import type { Subscription } from "rxjs";
import { hclogLine } from "../logging/hclog-lines.ts";
import type { LogTap } from "../logging/log-tap.ts";
import type { Timer } from "../util/clock.ts";
import type { ApiContext } from "./context.ts";

/** Nomad's StreamFramer heartbeat: an empty frame this often keeps the connection open through proxies. */
const HEARTBEAT_MS = 1_000;
/** Nomad's frame size: a frame carries at most this many bytes of log. */
const FRAME_BYTES = 1_024;

export interface MonitorOptions {
  /** Lowest pino level streamed (Infinity: nothing, hclog's "off"). */
  readonly level: number;
  /** hclog JSON lines instead of text. */
  readonly json: boolean;
  /** Raw log text instead of Nomad's `{"Data": base64}` frames. */
  readonly plain: boolean;
}

/**
 * One `/v1/agent/monitor` caller, from the answer's head to the end of the
 * connection: the server's own log lines at the level asked for, formatted
 * as hclog, in Nomad's stream frames (or as plain text). Lines written in
 * the same turn of the event loop go out in one write. A caller that does
 * not read loses lines rather than grow the server's memory, and is told how
 * many, as Nomad's monitor does.
 */
export class MonitorConnection {
  private batch: string[] = [];
  private flushing = false;
  private dropped = 0;
  private closed = false;
  private timer: Timer | undefined;
  private readonly stopListening: () => void;
  private readonly closing: Subscription;

  constructor(
    private readonly ctx: ApiContext,
    tap: LogTap,
    request: IncomingMessage,
    private readonly out: ServerResponse,
    private readonly options: MonitorOptions,
  ) {
    out.writeHead(200, {
      "Content-Type": options.plain ? "text/plain" : "application/json",
      "Cache-Control": "no-cache",
    });
    out.on("drain", () => this.reportDropped());
    // Headers go out now: a client waits for them before it reads frames.
    out.flushHeaders();
    if (!options.plain) this.timer = ctx.clock.setTimeout(() => this.heartbeat(), HEARTBEAT_MS);
    this.stopListening = tap.listen(options.level, (_level, line) => this.push(line));
    this.closing = ctx.closing$.subscribe(() => this.finish());
    request.on("close", () => this.finish());
    out.on("close", () => this.finish());
  }

  /** Called from inside the logger: formats and queues, never logs. */
  private push(line: string): void {
    if (this.closed) return;
    if (this.out.writableNeedDrain) {
      this.dropped++;
      return;
    }
    this.batch.push(hclogLine(line, this.options.json));
    if (!this.flushing) {
      this.flushing = true;
      setImmediate(() => this.flush());
    }
  }

  private flush(): void {
    this.flushing = false;
    const text = this.batch.join("");
    this.batch = [];
    if (text !== "") this.send(Buffer.from(text));
  }

  private send(data: Buffer): void {
    if (this.closed) return;
    if (this.options.plain) {
      this.out.write(data);
      return;
    }
    for (let at = 0; at < data.length; at += FRAME_BYTES) {
      const chunk = data.subarray(at, at + FRAME_BYTES);
      this.out.write(`${JSON.stringify({ Data: chunk.toString("base64"), FileEvent: "log" })}\n`);
    }
  }

  private reportDropped(): void {
    if (this.dropped === 0) return;
    const note = `${new Date(this.ctx.clock.now()).toISOString()} [WARN]  monitor: Monitor dropped ${this.dropped} logs during monitor request\n`;
    this.dropped = 0;
    this.send(Buffer.from(note));
  }

  private heartbeat(): void {
    if (this.closed) return;
    this.out.write("{}\n");
    this.timer = this.ctx.clock.setTimeout(() => this.heartbeat(), HEARTBEAT_MS);
  }

  private finish(): void {
    if (this.closed) return;
    this.closed = true;
    this.stopListening();
    this.closing.unsubscribe();
    if (this.timer) this.ctx.clock.clearTimeout(this.timer);
    this.batch = [];
    if (!this.out.writableEnded) this.out.end();
  }
}
