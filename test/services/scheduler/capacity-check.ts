import type { AllocRow } from "../../../projections/allocs.ts";
import { createProjections } from "../../../projections/index.ts";
import type { NodeRow } from "../../../projections/nodes.ts";
import {
  addUsage,
  allocUsage,
  exhaustedDimension,
  nodeCapacity,
  type Usage,
} from "../../../projections/resources.ts";
import type { EventLog } from "../../../src/log/event-log.ts";
import type { Store } from "../../../src/store/store.ts";
import { isTerminalAlloc } from "../../../streams/allocs.ts";
import { replayStore } from "../../replay-store.ts";

/** A node small enough that a few jobs fill it. */
export const SMALL_NODE = {
  NodeResources: { Cpu: { CpuShares: 2000 }, Memory: { MemoryMB: 2048 }, Disk: { DiskMB: 4000 } },
};

/** A one-group, one-task job asking for the given resources; Priority is left out unless given. */
export function resourceJob(o: {
  id: string;
  count: number;
  cpu: number;
  mem: number;
  disk?: number;
  type?: string;
  priority?: number;
}) {
  return {
    ID: o.id,
    Type: o.type ?? "service",
    ...(o.priority === undefined ? {} : { Priority: o.priority }),
    Datacenters: ["dc1"],
    Update: { MaxParallel: 0 },
    TaskGroups: [
      {
        Name: "g",
        Count: o.count,
        EphemeralDisk: { SizeMB: o.disk ?? 100 },
        Tasks: [
          {
            Name: "t",
            Driver: "docker",
            Config: { image: o.id },
            Resources: { CPU: o.cpu, MemoryMB: o.mem },
            // Logs that fit any disk picked (Nomad wants them below the group's disk).
            LogConfig: { MaxFiles: 1, MaxFileSizeMB: 1 },
          },
        ],
      },
    ],
  };
}

/** The nodes whose allocated resources exceed what they offer, in the store as it is now. */
export function overcommitted(
  nodes: Iterable<NodeRow>,
  allocsOn: (id: string) => readonly AllocRow[],
): string[] {
  const bad: string[] = [];
  for (const n of nodes) {
    const used: Usage = { cpu: 0, memoryMB: 0, diskMB: 0 };
    for (const a of allocsOn(n.ID)) if (!isTerminalAlloc(a)) addUsage(used, allocUsage(a));
    const dim = exhaustedDimension(nodeCapacity(n), used);
    if (dim) bad.push(`${n.ID} ${dim}`);
  }
  return bad;
}

/**
 * Replays the log record by record into a fresh store and, after each
 * record, lists every over-committed node as `#index: node dimension`.
 */
export async function replayOvercommits(log: EventLog): Promise<{ violations: string[]; replay: Store }> {
  const projections = createProjections();
  const replay = replayStore(log, projections);
  const violations: string[] = [];
  for (let i = 1; i <= log.lastIndex(); i++) {
    await replay.advanceTo(i);
    for (const v of overcommitted(projections.tables.nodes.all(), (id) =>
      projections.tables.allocs.by("node", id),
    ))
      violations.push(`#${i}: ${v}`);
  }
  return { violations, replay };
}
