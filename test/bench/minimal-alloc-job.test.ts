import { describe, expect, it } from "vitest";
import type { AllocRow } from "../../projections/allocs.ts";
import { minimalAllocJob } from "../../src/bench/minimal-alloc-job.ts";
import { alloc, memoryStore, placed, registered, statusChange } from "../projections/memory-store.ts";

describe("the minimal job benchmarks give their allocations", () => {
  it("is enough for a placement written straight to the log to apply, on a job never registered", async () => {
    const { write, store } = await memoryStore();
    const ready = await write(registered("n1"), statusChange("n1", "initializing", "ready"));
    expect(ready.map((o) => o.status)).toEqual(["applied", "applied"]);
    const job = minimalAllocJob("bench-web", [{ Name: "web", Count: 2 }]);
    const outcomes = await write(
      placed(
        alloc("a1", "n1", { JobID: "bench-web", TaskGroup: "web", Name: "bench-web.web[0]", Job: job }),
        alloc("a2", "n1", { JobID: "bench-web", TaskGroup: "web", Name: "bench-web.web[1]", Job: job }),
      ),
    );
    expect(outcomes.map((o) => o.status)).toEqual(["applied"]);
    const row = store.table<AllocRow>("allocs").get("a1");
    expect(row).toMatchObject({ JobID: "bench-web", TaskGroup: "web", NodeID: "n1", DesiredStatus: "run" });
    expect(row?.Job).toMatchObject({ ID: "bench-web", Namespace: "default", Type: "service", Priority: 50 });
    expect(row?.Job?.TaskGroups).toEqual([{ Name: "web", Count: 2 }]);
    expect(store.table<AllocRow>("allocs").get("a2")?.NodeID).toBe("n1");
  });
});
