import type { Change } from "../store/projection.ts";
import { nomadEventType, TOPICS } from "./topics.ts";

/** One event of Nomad's event stream. */
export interface StreamEvent {
  readonly Topic: string;
  readonly Type: string;
  readonly Key: string;
  readonly Namespace: string;
  readonly FilterKeys: readonly string[];
  readonly Index: number;
  readonly Payload: Readonly<Record<string, unknown>>;
}

/** All events of one log record: one NDJSON line of `/v1/event/stream`. */
export interface Frame {
  readonly Index: number;
  /**
   * When the record was written (RFC 3339). Not in Nomad's frames, whose
   * clients ignore fields they do not know; analytics need it.
   */
  readonly Time: string;
  readonly Events: readonly StreamEvent[];
}

/** The stream event for one table change, or undefined when the table is not published. */
export function eventOf(change: Change): StreamEvent | undefined {
  const spec = TOPICS[change.table];
  if (!spec) return undefined;
  const deleted = change.after === undefined;
  if (deleted && !spec.publishDeletes) return undefined;
  const type = nomadEventType(change.event, deleted, spec.topic);
  if (type === null) return undefined;
  const row = (change.after ?? change.before) as Readonly<Record<string, unknown>>;
  return {
    Topic: spec.topic,
    Type: type,
    Key: spec.key(row),
    Namespace: spec.namespace(row),
    FilterKeys: spec.filterKeys(row),
    Index: change.index,
    Payload: { [spec.wrapper]: spec.payload(row) },
  };
}

/**
 * Collects the changes of each record into one frame. The store emits a
 * record's changes together, then `flush` is called after each applied
 * batch; a change with a new index also closes the previous frame.
 */
export class FrameBuilder {
  private index = 0;
  private at = 0;
  private events: StreamEvent[] = [];

  constructor(private readonly emit: (frame: Frame) => void) {}

  add(change: Change): void {
    if (change.index !== this.index) this.flush();
    this.index = change.index;
    this.at = change.at;
    const event = eventOf(change);
    if (event) this.events.push(event);
  }

  flush(): void {
    if (this.events.length > 0) {
      this.emit({ Index: this.index, Time: new Date(this.at).toISOString(), Events: this.events });
    }
    this.events = [];
  }
}

/**
 * The encodings of the frame being delivered. A live frame reaches every
 * subscriber in one synchronous fan-out, so remembering only the latest
 * frame is enough to encode it once for all of them (one JSON.stringify and
 * one UTF-8 encoding, not one per subscriber; the same Buffer written to
 * many sockets is not copied), while holding on to one frame's bytes only.
 */
const latest: { frame?: Frame; line?: Buffer; events?: Map<StreamEvent, string> } = {};

/**
 * The NDJSON line, newline included, of `frame` carrying only `events`: the
 * subset of its events a subscriber's filter keeps.
 */
export function frameLine(frame: Frame, events: readonly StreamEvent[]): Buffer {
  if (latest.frame !== frame) {
    latest.frame = frame;
    latest.line = undefined;
    latest.events = undefined;
  }
  if (events.length === frame.Events.length) {
    latest.line ??= Buffer.from(`${JSON.stringify(frame)}\n`);
    return latest.line;
  }
  latest.events ??= new Map();
  const encoded = latest.events;
  const parts = events.map((e) => {
    let json = encoded.get(e);
    if (json === undefined) {
      json = JSON.stringify(e);
      encoded.set(e, json);
    }
    return json;
  });
  // The key order JSON.stringify({ ...frame, Events: events }) gives.
  return Buffer.from(
    `{"Index":${frame.Index},"Time":${JSON.stringify(frame.Time)},"Events":[${parts.join(",")}]}\n`,
  );
}
