import type { Table, TableSum } from "../src/store/table.ts";
import { isTerminalAlloc } from "../streams/allocs.ts";
import type { AllocRow } from "./allocs.ts";
import { addUsage, allocUsage, type Usage } from "./resources.ts";

/** The allocs table's sum of each node's live allocations: cpu, memory, disk. */
export const NODE_USAGE = "node_usage";

const amountsOf = new WeakMap<Readonly<Usage>, readonly number[]>();

/**
 * What each node's live (non-terminal) allocations take, kept by the
 * allocs table as rows change (TableSum): the plan applier's node check
 * reads it instead of summing every allocation on the node for every plan
 * record, which made a plan cost more the smaller its records were.
 * Counted with allocUsage, as the scheduler and the check count.
 */
export const nodeUsageSum: TableSum<AllocRow> = {
  dimensions: 3,
  group: (a) => (isTerminalAlloc(a) ? undefined : a.NodeID),
  amounts: (a) => {
    // One array per usage object (itself one per AllocatedResources), so an
    // update that keeps the resources is recognised by reference.
    const usage = allocUsage(a);
    let amounts = amountsOf.get(usage);
    if (!amounts) {
      amounts = [usage.cpu, usage.memoryMB, usage.diskMB];
      amountsOf.set(usage, amounts);
    }
    return amounts;
  },
};

/**
 * What the live allocations on `nodeID` take: the kept total, or their sum
 * when the total is not exact (an amount that is not a small integer).
 * A new object, the caller's to change.
 */
export function nodeLiveUsage(allocs: Table<AllocRow>, nodeID: string): Usage {
  const kept = allocs.sum(NODE_USAGE, nodeID);
  if (kept) return { cpu: kept[0]!, memoryMB: kept[1]!, diskMB: kept[2]! };
  const used: Usage = { cpu: 0, memoryMB: 0, diskMB: 0 };
  // A sum: any order gives it.
  for (const a of allocs.eachBy("node", nodeID)) if (!isTerminalAlloc(a)) addUsage(used, allocUsage(a));
  return used;
}
