import type { Projection } from "../src/store/projection.ts";
import { Table } from "../src/store/table.ts";
import type { Actor, Envelope } from "../streams/event-schema.ts";

/**
 * One transition of one object: what changed, from what to what, at which
 * index and time, because of which event, by whom. Kept after the object
 * itself is garbage collected: history is the product.
 */
export interface HistoryEntry {
  readonly Object: string;
  readonly ObjectID: string;
  readonly Namespace: string;
  readonly Index: number;
  readonly Time: string;
  readonly Field: string;
  readonly From: unknown;
  readonly To: unknown;
  readonly Cause: Readonly<Record<string, unknown>>;
  readonly Actor: Actor;
  readonly CreateIndex: number;
  readonly ModifyIndex: number;
}

interface Tracked {
  readonly object: string;
  /** Scalar (or small object) fields whose every change is a transition. */
  readonly fields: readonly string[];
  /** Append-only lists whose new entries are transitions, with how to describe one. */
  readonly lists: Readonly<Record<string, (entry: Readonly<Record<string, unknown>>) => unknown>>;
}

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
  },
  nodes: {
    object: "node",
    fields: ["Status", "StatusDescription", "SchedulingEligibility", "Drain", "NodeClass", "Datacenter"],
    lists: { Events: (e) => ({ Message: e.Message, Subsystem: e.Subsystem }) },
  },
  jobs: { object: "job", fields: ["Status", "Stop", "Version", "Priority"], lists: {} },
  evals: {
    object: "evaluation",
    fields: ["Status", "StatusDescription", "NextEval", "BlockedEval"],
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

export const historyKey = (object: string, id: string) => `${object}\u0000${id}`;

export function historyProjection(observedTables: readonly string[]) {
  const history = new Table<HistoryEntry & { readonly Key: string }>({
    name: "history",
    key: (h) => h.Key,
    indexes: { object: (h) => historyKey(h.Object, h.ObjectID) },
  });
  const observes = new Set(observedTables.filter((t) => TRACKED[t]));

  const projection: Projection = {
    name: "history",
    version: 1,
    tables: [history],
    handles: new Set(),
    evolve() {},
    observes,
    observe(ctx, change, event) {
      const tracked = TRACKED[change.table]!;
      const before = change.before as Readonly<Record<string, unknown>> | undefined;
      const after = change.after as Readonly<Record<string, unknown>> | undefined;
      const row = (after ?? before)!;
      const id = String(row.ID ?? change.key);
      let seq = history.countBy("object", historyKey(tracked.object, id));
      const record = (Field: string, From: unknown, To: unknown) => {
        ctx.put(history, {
          Key: `${historyKey(tracked.object, id)}\u0000${String(seq++).padStart(10, "0")}`,
          Object: tracked.object,
          ObjectID: id,
          Namespace: typeof row.Namespace === "string" ? row.Namespace : "",
          Index: ctx.index,
          Time: new Date(event.at).toISOString(),
          Field,
          From,
          To,
          Cause: causeOf(event),
          Actor: actorOf(event, row),
          CreateIndex: ctx.index,
          ModifyIndex: ctx.index,
        });
      };
      if (!after) {
        record("(deleted)", null, null);
        return;
      }
      for (const field of tracked.fields) {
        const from = before?.[field] ?? null;
        const to = after[field] ?? null;
        if (!sameValue(from, to)) record(field, from, to);
      }
      for (const [field, describe] of Object.entries(tracked.lists)) {
        const was = (before?.[field] as readonly Record<string, unknown>[] | null | undefined) ?? [];
        const now = (after[field] as readonly Record<string, unknown>[] | null | undefined) ?? [];
        // Lists only grow at their end (Nomad may trim old node events from the front).
        const grown = now.length - Math.min(was.length, now.length);
        for (const entry of now.slice(now.length - grown)) record(field, null, describe(entry));
      }
    },
  };
  return { projection, history };
}

function actorOf(event: Envelope, row: Readonly<Record<string, unknown>>): Actor {
  if (REPORTED_BY_NODE.has(event.type) && typeof row.NodeID === "string")
    return { kind: "node", id: row.NodeID };
  return event.by ?? { kind: "server", id: "unknown" };
}

function causeOf(event: Envelope): Record<string, unknown> {
  const cause: Record<string, unknown> = { Event: event.type };
  const data = event.data as Readonly<Record<string, unknown>> | null;
  if (data && typeof data === "object") {
    for (const f of CAUSE_FIELDS) if (data[f] !== undefined) cause[f] = data[f];
  }
  return cause;
}

function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  return JSON.stringify(a) === JSON.stringify(b);
}
