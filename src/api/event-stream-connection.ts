import type { IncomingMessage, ServerResponse } from "node:http";
import type { Observable, Observer, Subscription } from "rxjs";
import { changeEvents, changesLine, type Frame, frameLine, type StreamEvent } from "../events/frames.ts";
import type { Timer } from "../util/clock.ts";
import type { ApiContext } from "./context.ts";

/** Nomad sends `{}` this often so idle connections stay open through proxies. */
const HEARTBEAT_MS = 30_000;

/** Topic -> keys a subscriber asked for; `*` for any. */
export type TopicFilter = ReadonlyMap<string, ReadonlySet<string>>;

/**
 * One subscriber of `/v1/event/stream`, from its first `{}` to the end of
 * the response. A class rather than a handler's closures: a server holds
 * one per open stream, mostly idle, and methods on the prototype cost
 * nothing per connection, while each named closure tsx compiles also gets
 * its own `name` property (~300 bytes). The few callbacks handed out are
 * anonymous arrows, which it leaves alone.
 */
export class EventStreamConnection implements Observer<Frame> {
  private queued = 0;
  private closed = false;
  private lastSent: number;
  private timer: Timer;
  private readonly subscription: Subscription;
  private readonly closing: Subscription;

  constructor(
    private readonly ctx: ApiContext,
    request: IncomingMessage,
    private readonly out: ServerResponse,
    private readonly topics: TopicFilter,
    private readonly namespace: string,
    after: number,
    /** The complete change feed (`changes=all`) rather than Nomad's events. */
    private readonly allChanges: boolean,
    /** Emits why the subscriber may no longer read (its token deleted, changed or expired): the stream then ends with that error. */
    revoked$?: Observable<string>,
  ) {
    this.lastSent = after;
    out.writeHead(200, { "Content-Type": "application/json", "Cache-Control": "no-cache" });
    out.on("drain", () => {
      this.queued = 0;
    });
    this.timer = ctx.clock.setTimeout(() => this.heartbeat(), HEARTBEAT_MS);
    this.write("{}\n");
    this.subscription = ctx.events.framesAfter(after, () => this.drained()).subscribe(this);
    this.closing = ctx.closing$.subscribe(() => this.finish());
    if (revoked$) this.closing.add(revoked$.subscribe((reason) => this.finish({ Error: reason })));
    request.on("close", () => this.finish());
  }

  next(frame: Frame): void {
    if (this.allChanges) {
      // Every frame, even with nothing kept: the subscriber's position moves on with the log.
      this.write(changesLine(frame, keptPositions(changeEvents(frame), this.topics, this.namespace)));
    } else if (frame.Events.length > 0) {
      const events = kept(frame.Events, this.topics, this.namespace);
      if (events.length > 0) this.write(frameLine(frame, events));
    }
    this.lastSent = frame.Index;
    // What was written still reaches the client before the end; the cursor
    // in the final frame picks up right after it. A subscriber that does not
    // read is closed rather than let its backlog grow the server's memory
    // without bound.
    const max = this.ctx.config.eventStreamMaxQueued;
    if (this.queued > max) {
      this.finish({
        Error: `subscriber too slow: more than ${max} frames waiting; resubscribe with index=${this.lastSent}`,
      });
    }
  }

  error(err: Error): void {
    this.finish({ Error: err.message });
  }

  complete(): void {
    this.finish();
  }

  /** Resolves once what was written has left for the socket (at once when nothing waits), or the stream ended. */
  private drained(): Promise<void> {
    if (this.queued === 0 || this.closed) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        this.out.off("drain", done);
        this.out.off("close", done);
        resolve();
      };
      this.out.once("drain", done);
      this.out.once("close", done);
    });
  }

  private write(line: string | Buffer): void {
    if (this.closed) return;
    if (!this.out.write(line)) this.queued++;
  }

  private heartbeat(): void {
    this.write("{}\n");
    this.timer = this.ctx.clock.setTimeout(() => this.heartbeat(), HEARTBEAT_MS);
  }

  private finish(final?: Record<string, unknown>): void {
    if (this.closed) return;
    if (final) this.write(`${JSON.stringify(final)}\n`);
    this.closed = true;
    this.ctx.clock.clearTimeout(this.timer);
    // The subscription may end the stream while subscribe() is still running.
    this.subscription?.unsubscribe();
    this.closing?.unsubscribe();
    this.out.end();
  }
}

/**
 * The events of a frame a subscriber's filter keeps: the frame's own array
 * when it keeps them all (the usual case), so nothing is allocated per
 * subscriber. Loops rather than closures: this runs per frame per subscriber.
 */
function kept(
  events: readonly StreamEvent[],
  topics: TopicFilter,
  namespace: string,
): readonly StreamEvent[] {
  let i = 0;
  while (i < events.length && matches(events[i]!, topics, namespace)) i++;
  if (i === events.length) return events;
  const some = events.slice(0, i);
  for (i++; i < events.length; i++) if (matches(events[i]!, topics, namespace)) some.push(events[i]!);
  return some;
}

/** The positions of the events a subscriber's filter keeps. */
function keptPositions(
  events: readonly StreamEvent[],
  topics: TopicFilter,
  namespace: string,
): readonly number[] {
  const positions: number[] = [];
  for (let i = 0; i < events.length; i++) if (matches(events[i]!, topics, namespace)) positions.push(i);
  return positions;
}

/** Nomad's subscription filter (nomad/stream/subscription.go). */
function matches(e: StreamEvent, topics: TopicFilter, namespace: string): boolean {
  if (namespace !== "*" && e.Namespace !== "" && e.Namespace !== namespace) return false;
  return keyMatches(e, topics.get("*")) || keyMatches(e, topics.get(e.Topic));
}

function keyMatches(e: StreamEvent, keys: ReadonlySet<string> | undefined): boolean {
  if (keys === undefined) return false;
  if (keys.has("*") || keys.has(e.Key)) return true;
  for (const k of e.FilterKeys) if (keys.has(k)) return true;
  return false;
}
