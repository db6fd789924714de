import { describe, expect, it } from "vitest";
import { nodeCapacity } from "../../projections/resources.ts";
import type { NodeSpec } from "../../streams/nodes.ts";

type Sized = Pick<NodeSpec, "NodeResources" | "ReservedResources" | "Resources" | "Reserved">;

const resources = {
  Cpu: { CpuShares: 4000 },
  Memory: { MemoryMB: 8192 },
  Disk: { DiskMB: 100_000 },
} as unknown as NodeSpec["NodeResources"];
const reserved = {
  Cpu: { CpuShares: 100 },
  Memory: { MemoryMB: 256 },
} as unknown as NodeSpec["ReservedResources"];

describe("a node's capacity", () => {
  it("is computed once for the row versions that share the node's resource objects", () => {
    const row = {
      NodeResources: resources,
      ReservedResources: reserved,
      LastAllocUpdateIndex: 1,
    } as unknown as Sized;
    const next = { ...row, LastAllocUpdateIndex: 2 } as Sized;
    const capacity = nodeCapacity(row);
    expect(capacity).toEqual({ cpu: 3900, memoryMB: 7936, diskMB: 100_000 });
    expect(nodeCapacity(next)).toBe(capacity);
  });

  it("follows any change of what it is computed from", () => {
    const row = { NodeResources: resources, ReservedResources: reserved } as Sized;
    expect(nodeCapacity(row).cpu).toBe(3900);
    const lessReserved = {
      Cpu: { CpuShares: 0 },
      Memory: { MemoryMB: 0 },
    } as unknown as NodeSpec["ReservedResources"];
    expect(nodeCapacity({ ...row, ReservedResources: lessReserved })).toEqual({
      cpu: 4000,
      memoryMB: 8192,
      diskMB: 100_000,
    });
    expect(nodeCapacity({ NodeResources: resources } as Sized).memoryMB).toBe(8192);
    // No Disk in NodeResources: the legacy Resources' DiskMB counts.
    const noDisk = {
      Cpu: { CpuShares: 1000 },
      Memory: { MemoryMB: 1024 },
    } as unknown as NodeSpec["NodeResources"];
    expect(nodeCapacity({ NodeResources: noDisk } as Sized).diskMB).toBe(Number.POSITIVE_INFINITY);
    expect(
      nodeCapacity({ NodeResources: noDisk, Resources: { DiskMB: 500 } } as unknown as Sized).diskMB,
    ).toBe(500);
    // Legacy fields only: kept by the row.
    const legacy = {
      Resources: { CPU: 2000, MemoryMB: 2048, DiskMB: 10 },
      Reserved: { CPU: 500 },
    } as unknown as Sized;
    expect(nodeCapacity(legacy)).toEqual({ cpu: 1500, memoryMB: 2048, diskMB: 10 });
    expect(nodeCapacity(row).cpu).toBe(3900);
  });
});
