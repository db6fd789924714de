import type { Projection } from "../src/store/projection.ts";
import { Table } from "../src/store/table.ts";
import type { Actor, Envelope } from "../streams/event-schema.ts";
import { drainTerms, type JobDiffSummary, jobDiffSummary, newTaskEvents } from "./history-details.ts";

/**
 * One transition of one object: what changed, from what to what, at which
 * index and time, because of which event, by whom. A new object has one
 * `(created)` entry whose `To` holds its first values; a removed one ends
 * with `(deleted)`. Kept after the object is garbage collected: history is
 * the product.
 */
export interface HistoryEntry {
  readonly Index: number;
  readonly Time: string;
  readonly Field: string;
  readonly From: unknown;
  readonly To: unknown;
  /**
   * Why, in one object shared by every entry of the record:
   * - `Event`: the record's event type;
   * - the fields of its data that explain it, when it has them: `Cause`
   *   (e.g. "heartbeat-missed"), `EvalID`, `NodeID`, `TriggeredBy`,
   *   `Reason`, `PlanID`, `Filter`;
   * - when the record follows from an earlier one (the envelope's cause,
   *   set by the leader's services): `Type`, that record's event type (e.g.
   *   "NodeDrainUpdated" on a drain's migration marks); `Index`, its log
   *   index when known, which is the `Index` of that record's entries in the
   *   linked object's history; and `NodeID` / `EvalID` of the object that
   *   links them, unless the data names one itself (they are the same
   *   object then).
   */
  readonly Cause: Readonly<Record<string, unknown>>;
  readonly Actor: Actor;
  /** On a job's `Version` entry: what changed from the previous version (see JobDiffSummary). */
  readonly Diff?: JobDiffSummary;
}

/**
 * What the heap keeps of one object's history: who it is, how many entries it
 * has, and the entries its latest change added (`Latest`), which travel with
 * the change to the history store (src/history/), where every entry is kept
 * on disk. Memory is O(objects), not O(transitions).
 */
export interface HistoryRow {
  readonly Key: string;
  readonly Object: string;
  readonly ObjectID: string;
  readonly Namespace: string;
  /** Entries of the object's whole history, `Latest` included. */
  readonly Count: number;
  /** The entries the change at ModifyIndex added, in order. */
  readonly Latest: readonly HistoryEntry[];
  /** The event type of the record that created the history (its first entry's Cause.Event). */
  readonly CreateEvent: string;
  /** Nodes: the index the current drain started at (see drainStart), null when not draining. */
  readonly DrainStart: number | null;
  readonly CreateIndex: number;
  readonly ModifyIndex: number;
}

interface Tracked {
  readonly object: string;
  /** Scalar (or small object) fields whose every change is a transition. */
  readonly fields: readonly string[];
  /** Append-only lists whose new entries are transitions, with how to describe one. */
  readonly lists: Readonly<Record<string, (entry: Readonly<Record<string, unknown>>) => unknown>>;
  /**
   * Values shown under a name of their own, made from row fields: looked at
   * only when one of `from` changed (by reference), so unrelated changes
   * cost nothing.
   */
  readonly derived?: Readonly<Record<string, Derived>>;
  /** Entries beyond field changes (a job's version diff, task events), added after the rest. */
  readonly details?: (at: At, before: Row, after: Row, entries: HistoryEntry[]) => void;
  /** Its rows go only with the object's own row, whose deletion is the entry: none of their own. */
  readonly deletedWithObject?: boolean;
}

interface Derived {
  readonly from: readonly string[];
  readonly value: (row: Row) => unknown;
}

type At = Pick<HistoryEntry, "Index" | "Time" | "Cause" | "Actor">;

/** What is audited, per table, with Nomad's field names. */
export const TRACKED: Readonly<Record<string, Tracked>> = {
  allocs: {
    object: "allocation",
    fields: [
      "ClientStatus",
      "ClientDescription",
      "DesiredStatus",
      "DesiredDescription",
      "DesiredTransition",
      "NodeID",
      "FollowupEvalID",
      "NextAllocation",
    ],
    // AllocState entries mark disconnects and reconnects (seed 000): each one is a transition.
    lists: { AllocStates: (e) => ({ Field: e.Field, Value: e.Value, Time: e.Time }) },
    details: taskEventEntries,
  },
  nodes: {
    object: "node",
    fields: ["Status", "StatusDescription", "SchedulingEligibility", "NodeClass", "Datacenter"],
    lists: { Events: (e) => ({ Message: e.Message, Subsystem: e.Subsystem }) },
    // A drain's terms and message: its entry from null is the drain's start
    // (the index the drainer's marks link to), to null its end.
    derived: { DrainStrategy: { from: ["DrainStrategy", "LastDrain"], value: drainTerms } },
  },
  jobs: {
    object: "job",
    fields: ["Status", "Stop", "Version", "Priority"],
    lists: {},
    details: versionDiff,
  },
  deployments: { object: "deployment", fields: ["Status", "StatusDescription"], lists: {} },
  evals: {
    object: "evaluation",
    fields: ["Status", "StatusDescription", "NextEval", "BlockedEval"],
    lists: {},
  },
  // Who created, activated or retired which key; never its material (rows hold none).
  root_keys: { object: "root_key", fields: ["State", "Algorithm"], lists: {} },
  // Who wrote or removed which variable, and under which root key: never its
  // sealed Data, nor its items (rows hold them only sealed).
  variables: { object: "variable", fields: ["KeyID", "ModifyIndex"], lists: {} },
  // Which node registered which service of which allocation, where; and what removed it.
  service_registrations: {
    object: "service_registration",
    fields: ["ServiceName", "NodeID", "AllocID", "Address", "Port", "Tags"],
    lists: {},
  },
  // Every claim transition of a CSI volume (issue 21): who claimed it, each
  // unpublish checkpoint, the release; never its secrets (the row holds them
  // only sealed, and they are not tracked).
  csi_volumes: {
    object: "csi_volume",
    fields: ["PluginID", "ExternalID", "AccessMode", "AttachmentMode", "Capacity"],
    lists: {},
    details: claimTransitions,
  },
  // The server → client detach calls of a volume's unpublish and their answers, in the volume's own history.
  csi_detach_requests: { object: "csi_volume", fields: ["Detach"], lists: {}, deletedWithObject: true },
  // Who granted what, when (issue 17). Rows hold no secret: a token's secret is only its hash and is not tracked.
  acl_tokens: {
    object: "acl_token",
    fields: ["Name", "Type", "Policies", "Roles", "Global", "ExpirationTime"],
    lists: {},
  },
  acl_policies: { object: "acl_policy", fields: ["Description", "Rules", "JobACL"], lists: {} },
  acl_roles: { object: "acl_role", fields: ["Name", "Description", "Policies"], lists: {} },
  acl_auth_methods: {
    object: "acl_auth_method",
    fields: ["Type", "TokenLocality", "MaxTokenTTL", "Default"],
    lists: {},
  },
  acl_binding_rules: {
    object: "acl_binding_rule",
    fields: ["AuthMethod", "Selector", "BindType", "BindName", "Description"],
    lists: {},
  },
};

/** Fields of an event's data that explain why (whichever the event has). */
const CAUSE_FIELDS = ["Cause", "EvalID", "NodeID", "TriggeredBy", "Reason", "PlanID", "Filter"];

/**
 * Client updates reach the log in windows the server writes for many nodes
 * at once; the node that reported an allocation's update is its actor.
 */
const REPORTED_BY_NODE = new Set(["AllocClientUpdated"]);

/**
 * Objects whose IDs are unique within a namespace only (Nomad's jobs and
 * volumes): two namespaces may each hold a job "web", and each has its own
 * history. Every other object's ID is unique in the cluster.
 */
const PER_NAMESPACE = new Set(["job", "csi_volume"]);

/** The history row's key: the object kind and ID, and the namespace where IDs repeat across them. */
export const historyKey = (object: string, id: string, namespace = "default") =>
  PER_NAMESPACE.has(object) ? `${object}\u0000${namespace}\u0000${id}` : `${object}\u0000${id}`;

type Row = Readonly<Record<string, unknown>>;

export function historyProjection(observedTables: readonly string[]) {
  // Written on every audited change of a large cluster and never searched by
  // prefix: no sorted keys to keep up.
  const history = new Table<HistoryRow>({ name: "history", key: (h) => h.Key, sortedKeys: false });
  const observes = new Set(observedTables.filter((t) => TRACKED[t]));
  // Every change of one record shares its time and cause.
  let last: { event: Envelope; time: string; cause: Row } | undefined;
  const describe = (event: Envelope) => {
    if (last?.event !== event)
      last = { event, time: new Date(event.at).toISOString(), cause: causeOf(event) };
    return last;
  };
  // A client update record reports many allocations of each node in a row:
  // their entries share one actor, which they keep until the next change.
  let nodeActor: Actor | undefined;
  const actorFor = (event: Envelope, row: Row): Actor => {
    if (!REPORTED_BY_NODE.has(event.type) || typeof row.NodeID !== "string") return actorOf(event, row);
    // As actorOf's, made once for each run of one node's allocations.
    if (nodeActor?.id !== row.NodeID) nodeActor = { kind: "node", id: row.NodeID };
    return nodeActor;
  };

  const projection: Projection = {
    name: "history",
    // 6: variables are tracked. 7: service registrations are. 8: entries move to the history store.
    // 9: CSI volumes and their claims are tracked. 10: and their detach calls.
    // 11: job and volume keys carry their namespace.
    version: 11,
    tables: [history],
    handles: new Set(),
    evolve() {},
    observes,
    observe(ctx, change, event) {
      const tracked = TRACKED[change.table]!;
      const before = change.before as Row | undefined;
      const after = change.after as Row | undefined;
      const row = (after ?? before)!;
      if (!after && tracked.deletedWithObject) return;
      const { time, cause } = describe(event);
      const actor = actorFor(event, row);
      const at = { Index: ctx.index, Time: time, Cause: cause, Actor: actor };
      let entries: HistoryEntry[];
      if (!after) entries = [historyEntry(at, "(deleted)", null, null)];
      else if (!before) entries = [historyEntry(at, "(created)", null, firstValues(tracked, after))];
      else {
        entries = [];
        for (const field of tracked.fields) {
          const from = before[field] ?? null;
          const to = after[field] ?? null;
          if (!sameValue(from, to)) entries.push(historyEntry(at, field, from, to));
        }
        for (const field in tracked.lists) {
          const describeEntry = tracked.lists[field]!;
          const was = (before[field] as readonly Row[] | null | undefined) ?? [];
          const now = (after[field] as readonly Row[] | null | undefined) ?? [];
          // Lists only grow at their end (Nomad may trim old node events from the front).
          for (let i = Math.min(was.length, now.length); i < now.length; i++)
            entries.push(historyEntry(at, field, null, describeEntry(now[i]!)));
        }
        for (const field in tracked.derived) {
          const d = tracked.derived[field]!;
          if (!anyChanged(d.from, before, after)) continue;
          const from = d.value(before);
          const to = d.value(after);
          if (!sameValue(from, to)) entries.push(historyEntry(at, field, from, to));
        }
        tracked.details?.(at, before, after, entries);
        if (entries.length === 0) return;
        // Kept in the row until the object's next change: an array grown by
        // push holds 17 slots for its first entry (V8's growth), 128 bytes
        // more than an exact copy, which every scavenge the row survives
        // copies again and the old generation keeps.
        entries = entries.slice();
      }
      const id = String(row.ID ?? change.key);
      const namespace = typeof row.Namespace === "string" ? row.Namespace : "";
      const key = historyKey(tracked.object, id, namespace);
      const existing = history.get(key);
      ctx.put(history, {
        // The stored key string again, rather than the one just built to look it up.
        Key: existing?.Key ?? key,
        Object: tracked.object,
        ObjectID: id,
        Namespace: namespace,
        Count: (existing?.Count ?? 0) + entries.length,
        Latest: entries,
        CreateEvent: existing?.CreateEvent ?? String(entries[0]!.Cause.Event ?? ""),
        DrainStart: drainStart(existing?.DrainStart ?? null, entries),
        CreateIndex: existing?.CreateIndex ?? ctx.index,
        ModifyIndex: ctx.index,
      });
    },
  };
  return { projection, history };
}

/**
 * Where the node's current drain began, after `entries`: a DrainStrategy
 * entry from null starts a drain, one to null ends it, one between two
 * strategies updates it (the drain began further back).
 */
export function drainStart(previous: number | null, entries: readonly HistoryEntry[]): number | null {
  let start = previous;
  for (const e of entries) {
    if (e.Field !== "DrainStrategy") continue;
    if (e.To === null) start = null;
    else if (e.From === null) start = e.Index;
  }
  return start;
}

/**
 * A module function, not a closure made per change: tsx names every closure
 * it compiles, a property write per creation on the hottest path.
 */
function historyEntry(at: At, Field: string, From: unknown, To: unknown): HistoryEntry {
  return { Index: at.Index, Time: at.Time, Field, From, To, Cause: at.Cause, Actor: at.Actor };
}

/** The tracked fields of a new object that hold something, and its list entries. */
function firstValues(tracked: Tracked, row: Row): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  for (const field of tracked.fields) {
    const v = row[field];
    if (v !== undefined && v !== null && v !== "" && !(typeof v === "object" && isEmpty(v))) {
      values[field] = v;
    }
  }
  for (const field in tracked.lists) {
    const list = (row[field] as readonly Row[] | null | undefined) ?? [];
    if (list.length > 0) values[field] = list.map(tracked.lists[field]!);
  }
  for (const field in tracked.derived) {
    const v = tracked.derived[field]!.value(row);
    if (v !== null && v !== undefined) values[field] = v;
  }
  return values;
}

/** Object.keys(v).length === 0 without the array: every new object's first values ask it. */
function isEmpty(v: object): boolean {
  for (const k in v) if (Object.hasOwn(v, k)) return false;
  return true;
}

function anyChanged(fields: readonly string[], before: Row, after: Row): boolean {
  for (const f of fields) if (before[f] !== after[f]) return true;
  return false;
}

/** A job's Version entry carries the diff from the previous version; computed only when the version moves. */
function versionDiff(_at: At, before: Row, after: Row, entries: HistoryEntry[]): void {
  const i = entries.findIndex((e) => e.Field === "Version");
  if (i < 0) return;
  const diff = jobDiffSummary(before, after);
  if (diff) entries[i] = { ...entries[i]!, Diff: diff };
}

/**
 * One entry per task event a client update adds (Field `TaskEvents`, `To`
 * the event): only records of client updates carry new ones, and task states
 * that did not change are skipped by reference.
 */
function taskEventEntries(at: At, before: Row, after: Row, entries: HistoryEntry[]): void {
  if (before.TaskStates === after.TaskStates) return;
  const added = newTaskEvents(before.TaskStates as Row | null, after.TaskStates as Row | null);
  for (const e of added) entries.push(historyEntry(at, "TaskEvents", null, e));
}

/** Who made a change of `row` by `event`: the node that reported a client update, else the record's writer. */
export function actorOf(event: Pick<Envelope, "type" | "by">, row: Row): Actor {
  if (REPORTED_BY_NODE.has(event.type) && typeof row.NodeID === "string")
    return { kind: "node", id: row.NodeID };
  return event.by ?? { kind: "server", id: "unknown" };
}

/** The entry's Cause (its shape is documented on HistoryEntry). */
function causeOf(event: Envelope): Row {
  const cause: Record<string, unknown> = { Event: event.type };
  const data = event.data as Row | null;
  if (data && typeof data === "object") {
    for (const f of CAUSE_FIELDS) if (data[f] !== undefined) cause[f] = data[f];
  }
  const link = event.cause;
  if (link) {
    cause.Type = link.type;
    if (link.index !== undefined) cause.Index = link.index;
    if (link.nodeId !== undefined && cause.NodeID === undefined) cause.NodeID = link.nodeId;
    if (link.evalId !== undefined && cause.EvalID === undefined) cause.EvalID = link.evalId;
  }
  return cause;
}

function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  return JSON.stringify(a) === JSON.stringify(b);
}

const CLAIM_MODES = ["read", "write", "gc"];
const CLAIM_STATES = ["taken", "node-detached", "controller-detached", "ready-to-free", "unpublishing"];

/** A volume's claim of one allocation, as history shows it; null when it holds none. */
function claimOf(row: Row, allocID: string): Record<string, unknown> | null {
  const past = (row.PastClaims as Readonly<Record<string, Row>> | undefined)?.[allocID];
  const current =
    (row.WriteClaims as Readonly<Record<string, Row>> | undefined)?.[allocID] ??
    (row.ReadClaims as Readonly<Record<string, Row>> | undefined)?.[allocID];
  // A past claim is the latest checkpoint of a claim being released.
  const c = past ?? current;
  if (!c) return null;
  return {
    AllocationID: allocID,
    NodeID: c.NodeID,
    Mode: CLAIM_MODES[c.Mode as number] ?? c.Mode,
    State: CLAIM_STATES[c.State as number] ?? c.State,
    AccessMode: c.AccessMode,
    AttachmentMode: c.AttachmentMode,
  };
}

const claimIDs = (row: Row): string[] =>
  ["ReadClaims", "WriteClaims", "PastClaims"].flatMap((f) => Object.keys((row[f] as Row | undefined) ?? {}));

/**
 * One `Claim` entry per allocation whose claim changed: taken (from null),
 * each unpublish checkpoint, and freed (to null). Claim maps are compared
 * by reference first: most volume changes leave them as they were.
 */
function claimTransitions(at: At, before: Row, after: Row, entries: HistoryEntry[]): void {
  if (
    before.ReadClaims === after.ReadClaims &&
    before.WriteClaims === after.WriteClaims &&
    before.PastClaims === after.PastClaims
  ) {
    return;
  }
  const ids = [...new Set([...claimIDs(before), ...claimIDs(after)])].sort();
  for (const id of ids) {
    const from = claimOf(before, id);
    const to = claimOf(after, id);
    if (!sameValue(from, to)) entries.push(historyEntry(at, "Claim", from, to));
  }
}
