import type { Table } from "../src/store/table.ts";
import { type AllocPlacement, type AllocsPlanApplied, isTerminalAlloc } from "../streams/allocs.ts";
import type { AllocRow } from "./allocs.ts";

/** A node part's preemptions, as plan-apply keeps them. */
export interface PartPreemptions {
  /** Live allocations the part evicts, with the placement that evicts each. */
  evictions: { row: AllocRow; by: string }[];
  /** Allocations the part counts as leaving (the evicted, and any already terminal). */
  leaving: string[];
  /** Why the part cannot apply, when a preemption no longer holds. */
  problem?: string;
}

/**
 * Assigns each of the record's preemptions to the node part of the placement
 * that makes it. A placement that does not reach a node part (its ID was
 * taken) takes its preemptions with it. A preempted allocation must still
 * exist on that node; one already terminal is not evicted again (Nomad's
 * plan applier drops it), its room being free anyway.
 */
export function assignPreemptions(
  plan: AllocsPlanApplied,
  allocs: Table<AllocRow>,
  placedOn: ReadonlyMap<string, string>,
  partOf: (nodeID: string) => { preemptions?: PartPreemptions },
): void {
  for (const d of plan.Preemptions ?? []) {
    const nodeID = placedOn.get(d.PreemptedByAllocation);
    if (nodeID === undefined) continue;
    const part = partOf(nodeID);
    part.preemptions ??= { evictions: [], leaving: [] };
    const p = part.preemptions;
    const row = allocs.get(d.ID);
    if (!row || row.NodeID !== nodeID) {
      p.problem ??= row
        ? `preempted allocation ${d.ID} is not on node ${nodeID}`
        : `preempted allocation ${d.ID} no longer exists`;
      continue;
    }
    p.leaving.push(row.ID);
    if (!isTerminalAlloc(row)) p.evictions.push({ row, by: d.PreemptedByAllocation });
  }
}

/** The node each placement of the record that reached a node part goes to. */
export function placementNodes(
  parts: Iterable<{ placements: readonly AllocPlacement[] }>,
): Map<string, string> {
  const out = new Map<string, string>();
  for (const p of parts) for (const placement of p.placements) out.set(placement.ID, placement.NodeID);
  return out;
}

/** The allocations each placement preempts (its PreemptedAllocations), from an accepted part. */
export function preemptedBy(p: PartPreemptions | undefined): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const { row, by } of p?.evictions ?? []) {
    const list = out.get(by);
    if (list) list.push(row.ID);
    else out.set(by, [row.ID]);
  }
  return out;
}

/** Nomad's DesiredDescription of a preempted allocation. */
export const preemptedDescription = (by: string) => `Preempted by alloc ID ${by}`;
