import type { Projection, Refusal } from "../src/store/projection.ts";
import { Table } from "../src/store/table.ts";
import type { Envelope } from "../streams/event-schema.ts";
import type { LeadershipEvent } from "../streams/leadership.ts";

/** One established leadership epoch: who took over, and at which index. */
export interface LeadershipRow {
  readonly Epoch: number;
  readonly ServerName: string;
  readonly Address: string;
  /** Envelope time of the claim (ms): when the leader took over, as it saw it. */
  readonly EstablishedAt: number;
  readonly CreateIndex: number;
  readonly ModifyIndex: number;
}

// Zero-padded so the primary-key order is the epoch order.
const epochKey = (epoch: number) => String(epoch).padStart(12, "0");

/** The latest established epoch's row, if any leader was ever established. */
export function currentLeadership(table: Table<LeadershipRow>): LeadershipRow | undefined {
  // Epochs are dense from 1 (apply accepts only current + 1), so the last
  // one's number is the row count.
  return table.size === 0 ? undefined : table.get(epochKey(table.size));
}

/**
 * Every leadership epoch ever established, and the fence that makes them
 * matter: a record written under an epoch (Actor.epoch) is refused, for
 * every projection, once a later epoch was established before it in the log.
 */
export function leadershipProjection() {
  const leadership = new Table<LeadershipRow>({ name: "leadership", key: (r) => epochKey(r.Epoch) });
  const projection: Projection = {
    name: "leadership",
    version: 1,
    tables: [leadership],
    handles: new Set(["LeadershipEstablished"]),
    admit: (event, index) => fence(leadership, event, index),
    evolve(ctx, event) {
      const e = event as LeadershipEvent;
      const expected = leadership.size + 1;
      if (e.data.Epoch !== expected) {
        ctx.reject(409, `leadership epoch ${e.data.Epoch} was claimed, but the next epoch is ${expected}`);
        return;
      }
      ctx.put(leadership, {
        Epoch: e.data.Epoch,
        ServerName: e.data.ServerName,
        Address: e.data.Address,
        EstablishedAt: e.at,
        CreateIndex: ctx.index,
        ModifyIndex: ctx.index,
      });
    },
  };
  return { projection, leadership };
}

/**
 * Decided from the rows' CreateIndex, not from the table's latest state: a
 * projection rebuilt from the log while this table was restored from a
 * newer snapshot must see the fence as it stood at `index`, or replay would
 * refuse writes the first apply accepted.
 */
function fence(leadership: Table<LeadershipRow>, event: Envelope, index: number): Refusal | undefined {
  const epoch = event.by?.epoch;
  if (epoch === undefined) return undefined;
  const own = leadership.get(epochKey(epoch));
  if (!own || own.CreateIndex >= index) {
    return { code: 409, reason: `written under leadership epoch ${epoch}, which was never established` };
  }
  const next = leadership.get(epochKey(epoch + 1));
  if (next && next.CreateIndex < index) {
    return {
      code: 409,
      reason: `written under leadership epoch ${epoch}, superseded by epoch ${epoch + 1} (${next.ServerName}) at index ${next.CreateIndex}`,
    };
  }
  return undefined;
}
