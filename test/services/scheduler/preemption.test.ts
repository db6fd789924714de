import { describe, expect, it } from "vitest";
import type { AllocRow } from "../../../projections/allocs.ts";
import { DEFAULT_SCHEDULER_CONFIG } from "../../../projections/scheduler-config.ts";
import {
  basicResourceDistance,
  PRIORITY_DELTA,
  preemptForTaskGroup,
  preemptionEnabled,
  preemptionScore,
  scoreForTaskGroup,
} from "../../../src/services/scheduler/preemption.ts";
import { type AllocJob, newAllocation } from "../../../streams/allocs.ts";

/** An allocation of `job` (priority `priority`) taking `cpu` MHz, `mem` MB and `disk` MB. */
function alloc(
  id: string,
  job: string,
  priority: number,
  cpu: number,
  mem = 0,
  disk = 0,
  migrateMaxParallel?: number,
): AllocRow {
  const Job: AllocJob = {
    ID: job,
    Namespace: "default",
    Type: "service",
    Priority: priority,
    Version: 0,
    CreateIndex: 1,
    ModifyIndex: 1,
    JobModifyIndex: 1,
    TaskGroups: [
      {
        Name: "g",
        Migrate: migrateMaxParallel === undefined ? null : { MaxParallel: migrateMaxParallel },
      },
    ],
  };
  return {
    ...newAllocation({
      ID: id,
      Namespace: "default",
      JobID: job,
      TaskGroup: "g",
      NodeID: "n1",
      CreateTime: 0,
      Job,
      Resources: { CPU: cpu, MemoryMB: mem, DiskMB: disk },
    }),
    CreateIndex: 1,
    ModifyIndex: 1,
    AllocModifyIndex: 1,
  };
}

const ids = (allocs: readonly AllocRow[] | undefined) => allocs?.map((a) => a.ID).sort();
const NONE = () => 0;

describe("Nomad's preemptor (CPU, memory, disk)", () => {
  it("never evicts an allocation whose job is within 10 of the placing job's priority", () => {
    const allocs = [alloc("a", "j1", 41, 2000, 1024), alloc("b", "j2", 45, 2000, 1024)];
    const out = preemptForTaskGroup({
      priority: 50,
      remaining: { cpu: 0, memoryMB: 0, diskMB: 0 },
      ask: { cpu: 1000, memoryMB: 256, diskMB: 0 },
      allocs,
      preempted: NONE,
    });
    expect(out).toBeUndefined();
    // Exactly 10 lower is allowed.
    const at = preemptForTaskGroup({
      priority: 50,
      remaining: { cpu: 0, memoryMB: 0, diskMB: 0 },
      ask: { cpu: 1000, memoryMB: 256, diskMB: 0 },
      allocs: [alloc("c", "j3", 50 - PRIORITY_DELTA, 2000, 1024)],
      preempted: NONE,
    });
    expect(ids(at)).toEqual(["c"]);
  });

  it("leaves out the placing job's own allocations", () => {
    const out = preemptForTaskGroup({
      priority: 100,
      remaining: { cpu: 0, memoryMB: 0, diskMB: 0 },
      ask: { cpu: 500, memoryMB: 0, diskMB: 0 },
      allocs: [alloc("own", "me", 100, 4000)],
      preempted: NONE,
    });
    expect(out).toBeUndefined();
  });

  it("takes the lowest priority first, even when a higher one fits the ask better", () => {
    const allocs = [
      alloc("p40-exact", "j1", 40, 1000, 512),
      alloc("p20-big", "j2", 20, 3000, 2048),
      alloc("p30", "j3", 30, 1000, 512),
    ];
    const out = preemptForTaskGroup({
      priority: 100,
      remaining: { cpu: 0, memoryMB: 0, diskMB: 0 },
      ask: { cpu: 1000, memoryMB: 512, diskMB: 0 },
      allocs,
      preempted: NONE,
    });
    expect(ids(out)).toEqual(["p20-big"]);
  });

  it("picks the smallest sufficient set: the allocation closest to the ask over two smaller ones", () => {
    const allocs = [
      alloc("small-1", "j1", 20, 1000, 512),
      alloc("exact", "j2", 20, 2000, 1024),
      alloc("small-2", "j3", 20, 1000, 512),
    ];
    const out = preemptForTaskGroup({
      priority: 70,
      remaining: { cpu: 0, memoryMB: 0, diskMB: 0 },
      ask: { cpu: 2000, memoryMB: 1024, diskMB: 0 },
      allocs,
      preempted: NONE,
    });
    expect(ids(out)).toEqual(["exact"]);
  });

  it("counts what the node has free: only the shortfall is preempted", () => {
    const allocs = [alloc("a", "j1", 20, 1000), alloc("b", "j1", 20, 1000), alloc("c", "j1", 20, 1000)];
    const out = preemptForTaskGroup({
      priority: 70,
      remaining: { cpu: 1000, memoryMB: 8192, diskMB: 1000 },
      ask: { cpu: 3000, memoryMB: 0, diskMB: 0 },
      allocs,
      preempted: NONE,
    });
    expect(out).toHaveLength(2);
  });

  it("drops the allocations a larger later choice made unnecessary (filterSuperset)", () => {
    // The lowest priority is taken first but is too small; the next group's
    // large allocation alone covers the ask, so the small one is spared.
    const allocs = [alloc("tiny", "j1", 10, 100), alloc("large", "j2", 20, 4000)];
    const out = preemptForTaskGroup({
      priority: 90,
      remaining: { cpu: 0, memoryMB: 0, diskMB: 0 },
      ask: { cpu: 2000, memoryMB: 0, diskMB: 0 },
      allocs,
      preempted: NONE,
    });
    expect(ids(out)).toEqual(["large"]);
  });

  it("returns nothing when even every preemptible allocation would not make room", () => {
    const allocs = [alloc("low", "j1", 10, 1000, 512), alloc("high", "j2", 95, 3000, 2048)];
    const out = preemptForTaskGroup({
      priority: 100,
      remaining: { cpu: 0, memoryMB: 0, diskMB: 0 },
      ask: { cpu: 2000, memoryMB: 512, diskMB: 0 },
      allocs,
      preempted: NONE,
    });
    expect(out).toBeUndefined();
  });

  it("considers memory and disk as well as CPU", () => {
    const allocs = [alloc("cpu-heavy", "j1", 20, 2000, 64, 0), alloc("mem-heavy", "j2", 20, 100, 4096, 2000)];
    const out = preemptForTaskGroup({
      priority: 70,
      remaining: { cpu: 1000, memoryMB: 0, diskMB: 0 },
      ask: { cpu: 100, memoryMB: 2048, diskMB: 1000 },
      allocs,
      preempted: NONE,
    });
    expect(ids(out)).toEqual(["mem-heavy"]);
  });

  it("prefers a group not yet preempted beyond its migrate max_parallel", () => {
    // Same size and priority: the penalty of 50 per allocation over max_parallel decides.
    const allocs = [alloc("capped", "j1", 20, 1000, 0, 0, 1), alloc("free", "j2", 20, 1000, 0, 0, 1)];
    const out = preemptForTaskGroup({
      priority: 70,
      remaining: { cpu: 0, memoryMB: 0, diskMB: 0 },
      ask: { cpu: 1000, memoryMB: 0, diskMB: 0 },
      allocs,
      preempted: (a) => (a.JobID === "j1" ? 1 : 0),
    });
    expect(ids(out)).toEqual(["free"]);
    expect(
      scoreForTaskGroup({ cpu: 1000, memoryMB: 0, diskMB: 0 }, { cpu: 1000, memoryMB: 0, diskMB: 0 }, 1, 1),
    ).toBe(50);
    expect(
      scoreForTaskGroup({ cpu: 1000, memoryMB: 0, diskMB: 0 }, { cpu: 1000, memoryMB: 0, diskMB: 0 }, 1, 2),
    ).toBe(100);
    expect(
      scoreForTaskGroup({ cpu: 1000, memoryMB: 0, diskMB: 0 }, { cpu: 500, memoryMB: 0, diskMB: 0 }, 0, 9),
    ).toBe(0.5);
  });

  it("measures distance per dimension asked for, as Nomad's basicResourceDistance", () => {
    expect(
      basicResourceDistance(
        { cpu: 1000, memoryMB: 1000, diskMB: 0 },
        { cpu: 1000, memoryMB: 1000, diskMB: 50 },
      ),
    ).toBe(0);
    expect(
      basicResourceDistance({ cpu: 1000, memoryMB: 0, diskMB: 0 }, { cpu: 0, memoryMB: 9999, diskMB: 0 }),
    ).toBe(1);
    expect(
      basicResourceDistance({ cpu: 1000, memoryMB: 1000, diskMB: 0 }, { cpu: 0, memoryMB: 0, diskMB: 0 }),
    ).toBeCloseTo(Math.SQRT2);
  });

  it("scores a node's preemption by the net priority of what it evicts (0.5 at 2048)", () => {
    const low = preemptionScore([alloc("a", "j", 20, 1)]);
    const high = preemptionScore([alloc("b", "j", 90, 1), alloc("c", "j", 80, 1)]);
    expect(low).toBeGreaterThan(high);
    expect(low).toBeLessThan(1);
    expect(low).toBeCloseTo(1 / (1 + Math.exp(0.0048 * (21 - 2048))));
  });

  it("is enabled per scheduler as the live configuration says (Nomad's defaults: system only)", () => {
    const d = DEFAULT_SCHEDULER_CONFIG;
    expect(["system", "sysbatch", "batch", "service"].map((t) => preemptionEnabled(d, t))).toEqual([
      true,
      false,
      false,
      false,
    ]);
    const on = {
      ...d,
      PreemptionConfig: {
        SystemSchedulerEnabled: false,
        SysBatchSchedulerEnabled: true,
        BatchSchedulerEnabled: true,
        ServiceSchedulerEnabled: true,
      },
    };
    expect(["system", "sysbatch", "batch", "service"].map((t) => preemptionEnabled(on, t))).toEqual([
      false,
      true,
      true,
      true,
    ]);
  });
});
