import type { Projection } from "../src/store/projection.ts";
import type { Table } from "../src/store/table.ts";
import { isClientTerminal } from "../streams/allocs.ts";
import { isTerminalEvalStatus } from "../streams/evals.ts";
import type { GcEvent } from "../streams/gc.ts";
import type { AllocRow } from "./allocs.ts";
import type { EvaluationRow } from "./evals.ts";

/**
 * Garbage collection of evaluations and allocations: what the collector
 * chose is removed only if it is still terminal when the record applies (a
 * rescheduled or reconnected allocation is not). The tables belong to the
 * evals and allocs projections; collection is kept here, in one place, and
 * rebuilt with them.
 */
export function gcProjection(evals: Table<EvaluationRow>, allocs: Table<AllocRow>) {
  const projection: Projection = {
    name: "gc",
    version: 1,
    tables: [],
    reads: ["evals", "allocs"],
    handles: new Set(["GarbageCollected"]),
    evolve(ctx, event) {
      const { data } = event as GcEvent;
      for (const id of data.AllocIDs) {
        const a = allocs.get(id);
        if (a && isCollectable(a)) ctx.delete(allocs, id);
      }
      for (const id of data.EvalIDs) {
        const e = evals.get(id);
        if (e && isTerminalEvalStatus(e.Status) && allocs.countBy("eval", id) === 0) ctx.delete(evals, id);
      }
    },
  };
  return { projection };
}

/**
 * An allocation nothing will run again (Nomad's allocGCEligible, without the
 * time thresholds, which the collector applies): the client is done with it,
 * and a failed one that may still be rescheduled is kept until its
 * replacement exists, since the replacement's reschedule tracker points at it.
 */
export function isCollectable(
  a: Pick<AllocRow, "ClientStatus" | "DesiredStatus" | "NextAllocation">,
): boolean {
  if (!isClientTerminal(a)) return false;
  return !(a.ClientStatus === "failed" && a.DesiredStatus === "run" && a.NextAllocation === "");
}
