import { actorOf } from "../../projections/history.ts";
import type { Actor, Cause, Envelope } from "../../streams/event-schema.ts";
import type { Change } from "../store/projection.ts";
import { nomadEventType, TOPICS, type TopicSpec } from "./topics.ts";

type Row = Readonly<Record<string, unknown>>;

/** One event of Nomad's event stream. */
export interface StreamEvent {
  readonly Topic: string;
  readonly Type: string;
  readonly Key: string;
  readonly Namespace: string;
  readonly FilterKeys: readonly string[];
  readonly Index: number;
  readonly Payload: Readonly<Record<string, unknown>>;
  /**
   * chronomad's detail, on every event of the complete feed and on deletes
   * of the default stream (Nomad's clients ignore fields they do not know):
   * whether the object was created, updated or removed.
   */
  readonly Op?: ChangeOp;
  /** The record that made the change (e.g. `GarbageCollected` for a collected evaluation). */
  readonly Record?: string;
}

export type ChangeOp = "create" | "update" | "delete";

/**
 * An event of the complete change feed (`/v1/event/stream?changes=all`):
 * the Nomad event, and what a consumer needs to mirror and audit it.
 */
export interface ChangeEvent extends StreamEvent {
  readonly Op: ChangeOp;
  readonly Record: string;
  /** The position of the change within its index: with Index, a total order. */
  readonly Seq: number;
  /** The schema version of the record (its envelope's `v`). */
  readonly SchemaVersion: number;
  readonly Actor: Actor;
  readonly Cause: Cause | null;
  /** The object before the change, shaped as the payload is; null for a creation. */
  readonly Before: Readonly<Record<string, unknown>> | null;
}

/**
 * One published table's change within a frame. Every change of a record to
 * a published table is one (several changes of one object in one record
 * are merged into one, as Nomad's state store reports them); `event` is set
 * when Nomad's own stream carries it, and the complete feed's event is
 * built only when a subscriber asks for it.
 */
export interface FrameChange {
  readonly spec: TopicSpec;
  readonly before: Row | undefined;
  readonly after: Row | undefined;
  readonly envelope: Envelope;
  readonly index: number;
  /** The Type in the complete feed: Nomad's, or the record's name when Nomad publishes nothing for it. */
  readonly type: string;
  /** The event the default stream carries, if it carries one. */
  readonly event: StreamEvent | undefined;
}

/** All events of one log record: one NDJSON line of `/v1/event/stream`. */
export interface Frame {
  readonly Index: number;
  /**
   * When the record was written (RFC 3339). Not in Nomad's frames, whose
   * clients ignore fields they do not know; analytics need it.
   */
  readonly Time: string;
  /** What Nomad's stream carries (plus deletes). */
  readonly Events: readonly StreamEvent[];
  /**
   * Every change to a published table, for the complete feed; never
   * serialized as such. A frame with no change at all marks progress: the
   * log was applied up to its Index (records that changed nothing
   * published, or were rejected), so a consumer's position moves on.
   */
  readonly Changes: readonly FrameChange[];
}

/** The default stream's event for a change, or undefined when it carries none. */
function defaultEvent(spec: TopicSpec, change: FrameChangeDraft): StreamEvent | undefined {
  if (change.after === undefined) {
    const row = change.before!;
    return {
      ...streamEvent(spec, row, spec.deleteType, change.index),
      Op: "delete",
      Record: change.envelope.type,
    };
  }
  const type = nomadEventType(change.envelope.type, spec.topic);
  return type === null ? undefined : streamEvent(spec, change.after, type, change.index);
}

function streamEvent(spec: TopicSpec, row: Row, type: string, index: number): StreamEvent {
  return {
    Topic: spec.topic,
    Type: type,
    Key: spec.key(row),
    Namespace: spec.namespace(row),
    FilterKeys: spec.filterKeys(row),
    Index: index,
    Payload: { [spec.wrapper]: spec.payload(row) },
  };
}

interface FrameChangeDraft {
  before: Row | undefined;
  after: Row | undefined;
  readonly envelope: Envelope;
  readonly index: number;
}

/** The stream event for one table change, or undefined when the default stream carries none. */
export function eventOf(change: Change): StreamEvent | undefined {
  const spec = TOPICS[change.table];
  if (!spec) return undefined;
  return defaultEvent(spec, {
    before: change.before as Row | undefined,
    after: change.after as Row | undefined,
    envelope: change.envelope,
    index: change.index,
  });
}

/** The complete feed's event for the change at position `seq` of its frame. */
export function changeEvent(change: FrameChange, seq: number): ChangeEvent {
  const { spec, before, after, envelope } = change;
  const base = change.event ?? streamEvent(spec, (after ?? before)!, change.type, change.index);
  return {
    ...base,
    Op: after === undefined ? "delete" : before === undefined ? "create" : "update",
    Record: envelope.type,
    Seq: seq,
    SchemaVersion: envelope.v,
    Actor: actorOf(envelope, (after ?? before)!),
    Cause: envelope.cause ?? null,
    Before: before === undefined ? null : { [spec.wrapper]: spec.payload(before) },
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
  /** The Index of the last frame emitted. */
  private emitted = 0;
  private changes: (FrameChangeDraft & { spec: TopicSpec })[] = [];
  /** Position in `changes` of each object changed by the current record. */
  private positions = new Map<string, number>();

  constructor(private readonly emit: (frame: Frame) => void) {}

  add(change: Change): void {
    if (change.index !== this.index) this.flush();
    this.index = change.index;
    this.at = change.at;
    const spec = TOPICS[change.table];
    if (!spec) return;
    const id = `${change.table}\u0000${change.key}`;
    const at = this.positions.get(id);
    if (at !== undefined) {
      // The same object again in one record: one change from its first
      // `before` to its last `after`.
      this.changes[at]!.after = change.after as Row | undefined;
      return;
    }
    this.positions.set(id, this.changes.length);
    this.changes.push({
      spec,
      before: change.before as Row | undefined,
      after: change.after as Row | undefined,
      envelope: change.envelope,
      index: change.index,
    });
  }

  /**
   * Closes the current record's frame. `appliedTo`, the index the store has
   * applied up to, adds a progress frame when records after the last frame
   * published nothing.
   */
  flush(appliedTo?: number): void {
    if (this.changes.length > 0) {
      const events: StreamEvent[] = [];
      const changes: FrameChange[] = [];
      for (const c of this.changes) {
        // Created and removed by one record: nothing to tell.
        if (c.before === undefined && c.after === undefined) continue;
        const event = defaultEvent(c.spec, c);
        if (event) events.push(event);
        const type =
          c.after === undefined
            ? c.spec.deleteType
            : (event?.Type ?? nomadEventType(c.envelope.type, c.spec.topic) ?? c.envelope.type);
        changes.push({ ...c, type, event });
      }
      if (changes.length > 0) this.frame(this.index, events, changes);
    }
    this.changes = [];
    if (this.positions.size > 0) this.positions = new Map();
    if (appliedTo !== undefined && appliedTo > this.emitted) this.frame(appliedTo, [], []);
  }

  private frame(index: number, events: StreamEvent[], changes: FrameChange[]): void {
    this.emitted = index;
    // A progress frame carries the time of the latest change before it.
    this.emit({ Index: index, Time: new Date(this.at).toISOString(), Events: events, Changes: changes });
  }
}

/**
 * The encodings of the frame being delivered. A live frame reaches every
 * subscriber in one synchronous fan-out, so remembering only the latest
 * frame is enough to encode it once for all of them (one JSON.stringify and
 * one UTF-8 encoding, not one per subscriber; the same Buffer written to
 * many sockets is not copied), while holding on to one frame's bytes only.
 */
const latest: {
  frame?: Frame;
  line?: Buffer;
  events?: Map<StreamEvent, string>;
  changes?: ChangeEvent[];
  changeJson?: Map<number, string>;
  changesLine?: Buffer;
} = {};

function latestOf(frame: Frame): typeof latest {
  if (latest.frame !== frame) {
    latest.frame = frame;
    latest.line = undefined;
    latest.events = undefined;
    latest.changes = undefined;
    latest.changeJson = undefined;
    latest.changesLine = undefined;
  }
  return latest;
}

function line(frame: Frame, parts: readonly string[]): Buffer {
  return Buffer.from(
    `{"Index":${frame.Index},"Time":${JSON.stringify(frame.Time)},"Events":[${parts.join(",")}]}\n`,
  );
}

/**
 * The NDJSON line, newline included, of `frame` carrying only `events`: the
 * subset of its events a subscriber's filter keeps.
 */
export function frameLine(frame: Frame, events: readonly StreamEvent[]): Buffer {
  const cache = latestOf(frame);
  const whole = events.length === frame.Events.length;
  if (whole && cache.line) return cache.line;
  cache.events ??= new Map();
  const encoded = cache.events;
  const parts = events.map((e) => {
    let json = encoded.get(e);
    if (json === undefined) {
      json = JSON.stringify(e);
      encoded.set(e, json);
    }
    return json;
  });
  const bytes = line(frame, parts);
  if (whole) cache.line = bytes;
  return bytes;
}

/** The complete feed's events of `frame`, built once per frame for all its subscribers. */
export function changeEvents(frame: Frame): readonly ChangeEvent[] {
  const cache = latestOf(frame);
  cache.changes ??= frame.Changes.map(changeEvent);
  return cache.changes;
}

/** The complete feed's NDJSON line of `frame` carrying the changes at `kept` positions. */
export function changesLine(frame: Frame, kept: readonly number[]): Buffer {
  const cache = latestOf(frame);
  const all = changeEvents(frame);
  const whole = kept.length === all.length;
  if (whole && cache.changesLine) return cache.changesLine;
  cache.changeJson ??= new Map();
  const encoded = cache.changeJson;
  const parts = kept.map((i) => {
    let json = encoded.get(i);
    if (json === undefined) {
      json = JSON.stringify(all[i]);
      encoded.set(i, json);
    }
    return json;
  });
  const bytes = line(frame, parts);
  if (whole) cache.changesLine = bytes;
  return bytes;
}
