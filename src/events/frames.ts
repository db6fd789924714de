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
  readonly envelope: RecordHeader;
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

/**
 * What a frame's changes need of the record that made them: not its
 * envelope, whose data (a plan's thousand placements) a buffered frame
 * would otherwise keep alive.
 */
export type RecordHeader = Pick<Envelope, "type" | "v" | "by" | "cause">;

function headerOf(e: Envelope): RecordHeader {
  return { type: e.type, v: e.v, by: e.by, cause: e.cause };
}

/** The default stream's event for a change, or undefined when it carries none. */
function defaultEvent(
  spec: TopicSpec,
  before: Row | undefined,
  after: Row | undefined,
  record: RecordHeader,
  index: number,
): StreamEvent | undefined {
  if (after === undefined) return deleteEvent(spec, before!, record, index);
  const type = nomadEventType(record.type, spec.topic);
  return type === null ? undefined : streamEvent(spec, after, type, index);
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

/** A removed row's event: every delete is published, marked as one. */
function deleteEvent(spec: TopicSpec, row: Row, record: RecordHeader, index: number): StreamEvent {
  // One literal in the order a spread of streamEvent's would give (the JSON's).
  return {
    Topic: spec.topic,
    Type: spec.deleteType,
    Key: spec.key(row),
    Namespace: spec.namespace(row),
    FilterKeys: spec.filterKeys(row),
    Index: index,
    Payload: { [spec.wrapper]: spec.payload(row) },
    Op: "delete",
    Record: record.type,
  };
}

/** The stream event for one table change, or undefined when the default stream carries none. */
export function eventOf(change: Change): StreamEvent | undefined {
  const spec = TOPICS[change.table];
  if (!spec) return undefined;
  return defaultEvent(
    spec,
    change.before as Row | undefined,
    change.after as Row | undefined,
    change.envelope,
    change.index,
  );
}

/** The complete feed's event for the change at position `seq` of its frame. */
export function changeEvent(change: FrameChange, seq: number): ChangeEvent {
  const { spec, before, after, envelope } = change;
  const base = change.event ?? streamEvent(spec, (after ?? before)!, change.type, change.index);
  // Field by field rather than a spread and more keys (a slow path in V8), in the order that gave.
  return {
    Topic: base.Topic,
    Type: base.Type,
    Key: base.Key,
    Namespace: base.Namespace,
    FilterKeys: base.FilterKeys,
    Index: base.Index,
    Payload: base.Payload,
    Op: after === undefined ? "delete" : before === undefined ? "create" : "update",
    Record: envelope.type,
    Seq: seq,
    SchemaVersion: envelope.v,
    Actor: actorOf(envelope, (after ?? before)!),
    Cause: envelope.cause ?? null,
    Before: before === undefined ? null : { [spec.wrapper]: spec.payload(before) },
  };
}

const NO_EVENTS: readonly StreamEvent[] = Object.freeze([]);
const NO_CHANGES: readonly FrameChange[] = Object.freeze([]);
const NOTHING_KEPT: readonly unknown[] = Object.freeze([]);

/**
 * A record's changes as a frame keeps them: one flat array, four slots a
 * change (its topic, before, after and record header), rather than an
 * object per change.
 */
const STRIDE = 4;

/**
 * The frame of one record, kept as the record's changes only: its events
 * and the complete feed's changes are built when first asked for (by a
 * subscriber, live or reading the buffer), not for every applied record.
 * A server with no subscriber so pays per change only for keeping its rows;
 * `release` lets a buffered frame go back to that once its live
 * subscribers have had it. Rows are immutable and the building pure, so
 * what is built again is equal, field for field, to what was.
 */
export class RecordFrame implements Frame {
  private time: string | undefined;
  private events: readonly StreamEvent[] | undefined;
  private changes: readonly FrameChange[] | undefined;

  constructor(
    readonly Index: number,
    /** The envelope time (ms) of the record, or of the latest change before a progress frame. */
    private readonly at: number,
    /** The record's published changes (see STRIDE), one per object; some may be created and removed by it. */
    private readonly kept: readonly unknown[],
    /** How many changes the frame tells (Changes.length, without building them): the buffer's measure. */
    readonly size: number,
  ) {}

  get Time(): string {
    this.time ??= new Date(this.at).toISOString();
    return this.time;
  }

  get Events(): readonly StreamEvent[] {
    this.events ??= this.buildEvents();
    return this.events;
  }

  get Changes(): readonly FrameChange[] {
    this.changes ??= this.buildChanges();
    return this.changes;
  }

  /** Forgets the events and changes built, which are built again, equal, if asked for. */
  release(): void {
    this.events = undefined;
    this.changes = undefined;
  }

  private buildEvents(): readonly StreamEvent[] {
    if (this.size === 0) return NO_EVENTS;
    const events: StreamEvent[] = [];
    if (this.changes !== undefined) {
      for (const c of this.changes) if (c.event !== undefined) events.push(c.event);
      return events;
    }
    const kept = this.kept;
    for (let i = 0; i < kept.length; i += STRIDE) {
      const before = kept[i + 1] as Row | undefined;
      const after = kept[i + 2] as Row | undefined;
      // Created and removed by one record: nothing to tell.
      if (before === undefined && after === undefined) continue;
      const event = defaultEvent(
        kept[i] as TopicSpec,
        before,
        after,
        kept[i + 3] as RecordHeader,
        this.Index,
      );
      if (event !== undefined) events.push(event);
    }
    return events;
  }

  private buildChanges(): readonly FrameChange[] {
    if (this.size === 0) return NO_CHANGES;
    // The events already built are the ones the changes carry, in order.
    const events = this.events;
    let next = 0;
    const changes: FrameChange[] = [];
    const kept = this.kept;
    const index = this.Index;
    for (let i = 0; i < kept.length; i += STRIDE) {
      const before = kept[i + 1] as Row | undefined;
      const after = kept[i + 2] as Row | undefined;
      if (before === undefined && after === undefined) continue;
      const spec = kept[i] as TopicSpec;
      const record = kept[i + 3] as RecordHeader;
      let type: string;
      let event: StreamEvent | undefined;
      if (after === undefined) {
        type = spec.deleteType;
        event = events ? events[next++] : deleteEvent(spec, before!, record, index);
      } else {
        const nomad = nomadEventType(record.type, spec.topic);
        type = nomad ?? record.type;
        if (nomad !== null) event = events ? events[next++] : streamEvent(spec, after, nomad, index);
      }
      changes.push({ spec, before, after, envelope: record, index, type, event });
    }
    return changes;
  }
}

/**
 * Collects the changes of each record into one frame. The store emits a
 * record's changes together, then `flush` is called after each applied
 * batch; a change with a new index also closes the previous frame. Per
 * change it keeps four references (nothing is copied or built), merging
 * several changes of one object in one record into one, as Nomad's state
 * store reports them.
 */
export class FrameBuilder {
  private index = 0;
  private at = 0;
  /** The Index of the last frame emitted. */
  private emitted = 0;
  /**
   * The current record's changes (see STRIDE), in `kept[0..length)`: an
   * array kept from record to record, so it grows once, and each frame
   * gets an exact copy rather than an array grown push by push.
   */
  private readonly kept: unknown[] = [];
  private length = 0;
  /** Per table, the position in `kept` of each object the current record changed. */
  private readonly positions = new Map<string, Map<string, number>>();
  /** The last table's positions: a record's changes mostly come table by table. */
  private table = "";
  private keys: Map<string, number> | undefined;
  /** The envelope of the last change kept, and its header. */
  private envelope: Envelope | undefined;
  private header: RecordHeader | undefined;

  constructor(private readonly emit: (frame: RecordFrame) => void) {}

  add(change: Change): void {
    if (change.index !== this.index) this.flush();
    this.index = change.index;
    this.at = change.at;
    const spec = TOPICS[change.table];
    if (spec === undefined) return;
    if (change.table !== this.table || this.keys === undefined) {
      this.table = change.table;
      this.keys = this.positions.get(change.table);
      if (this.keys === undefined) {
        this.keys = new Map();
        this.positions.set(change.table, this.keys);
      }
    }
    const at = this.keys.get(change.key);
    if (at !== undefined) {
      // The same object again in one record: one change from its first
      // `before` to its last `after`.
      this.kept[at + 2] = change.after;
      return;
    }
    if (change.envelope !== this.envelope) {
      this.envelope = change.envelope;
      this.header = headerOf(change.envelope);
    }
    const kept = this.kept;
    const n = this.length;
    this.keys.set(change.key, n);
    kept[n] = spec;
    kept[n + 1] = change.before;
    kept[n + 2] = change.after;
    kept[n + 3] = this.header;
    this.length = n + STRIDE;
  }

  /**
   * Closes the current record's frame. `appliedTo`, the index the store has
   * applied up to, adds a progress frame when records after the last frame
   * published nothing.
   */
  flush(appliedTo?: number): void {
    const kept = this.kept;
    const n = this.length;
    if (n > 0) {
      let size = 0;
      for (let i = 0; i < n; i += STRIDE) if (kept[i + 1] !== undefined || kept[i + 2] !== undefined) size++;
      if (size > 0) {
        this.emitted = this.index;
        this.emit(new RecordFrame(this.index, this.at, kept.slice(0, n), size));
      }
      // Its rows are not kept alive by the scratch array.
      kept.fill(undefined, 0, n);
      this.length = 0;
      // V8's Map#clear allocates a fresh table even when the map is empty.
      for (const keys of this.positions.values()) if (keys.size > 0) keys.clear();
    }
    this.envelope = undefined;
    if (appliedTo !== undefined && appliedTo > this.emitted) {
      this.emitted = appliedTo;
      // A progress frame carries the time of the latest change before it.
      this.emit(new RecordFrame(appliedTo, this.at, NOTHING_KEPT, 0));
    }
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
