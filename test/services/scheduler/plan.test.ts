import { describe, expect, it } from "vitest";
import type { AllocRow } from "../../../projections/allocs.ts";
import type { JobRow } from "../../../projections/jobs.ts";
import { groupAllocation, groupUsage } from "../../../projections/resources.ts";
import { Plan, type PlannedAlloc } from "../../../src/services/scheduler/plan.ts";
import type { Table } from "../../../src/store/table.ts";
import type { TaskGroupSpec } from "../../../streams/jobs.ts";

const tg = {
  Name: "web",
  Count: 3,
  EphemeralDisk: { SizeMB: 300 },
  Tasks: [
    { Name: "a", Driver: "mock", Resources: { CPU: 100, MemoryMB: 64, MemoryMaxMB: 128 } },
    { Name: "b", Driver: "mock", Resources: { CPU: 250, MemoryMB: 32 } },
  ],
} as unknown as TaskGroupSpec;

/** A node `n1` already running one allocation of another job (usage 500 MHz, 256 MB, 0 disk). */
const running = {
  ID: "r1",
  NodeID: "n1",
  JobID: "other",
  TaskGroup: "g",
  DesiredStatus: "run",
  ClientStatus: "running",
  AllocatedResources: {
    Tasks: { t: { Cpu: { CpuShares: 500 }, Memory: { MemoryMB: 256 } } },
    Shared: { DiskMB: 0 },
  },
} as unknown as AllocRow;

// Only `by("node", id)` is read by a plan's proposed use.
const allocs = {
  by: (_index: string, nodeID: string) => (nodeID === "n1" ? [running] : []),
} as unknown as Table<AllocRow>;

const placed = (id: string, nodeID: string): PlannedAlloc => ({
  ID: id,
  Name: `job.web[${id}]`,
  TaskGroup: "web",
  NodeID: nodeID,
  tg,
});

describe("a plan's proposed use of a node", () => {
  it("counts the plan's placements made on the node before it was first asked about", () => {
    const plan = new Plan("e1", { ID: "job" } as JobRow, allocs, 0);
    plan.appendPlacement(placed("p1", "n1"));
    plan.appendPlacement(placed("p2", "n2"));
    plan.appendPlacement(placed("p3", "n1"));
    const n1 = plan.proposed("n1");
    expect(n1.used).toEqual({ cpu: 500 + 2 * 350, memoryMB: 256 + 2 * 96, diskMB: 600 });
    expect(n1.count("job", "web")).toBe(2);
    expect(n1.count("other")).toBe(1);
    // Asked again, and after a placement made once it was known: counted once each.
    plan.appendPlacement(placed("p4", "n1"));
    expect(plan.proposed("n1")).toBe(n1);
    expect(n1.count("job", "web")).toBe(3);
    expect(n1.used.cpu).toBe(500 + 3 * 350);
    const n2 = plan.proposed("n2");
    expect(n2.used).toEqual({ cpu: 350, memoryMB: 96, diskMB: 300 });
    expect(n2.count("job")).toBe(1);
    expect(plan.proposed("n3").used).toEqual({ cpu: 0, memoryMB: 0, diskMB: 0 });
  });
});

describe("a task group's usage", () => {
  it("is its allocation's usage, one object whichever is asked first", () => {
    const fresh = { ...tg } as TaskGroupSpec;
    const usage = groupUsage(fresh);
    expect(usage).toEqual({ cpu: 350, memoryMB: 96, diskMB: 300 });
    expect(groupAllocation(fresh).usage).toBe(usage);
    const other = { ...tg } as TaskGroupSpec;
    expect(groupUsage(other)).toBe(groupAllocation(other).usage);
    expect(groupAllocation(other).Resources).toMatchObject({
      CPU: 350,
      MemoryMB: 96,
      MemoryMaxMB: 160,
      DiskMB: 300,
    });
  });
});
