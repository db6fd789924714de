import { afterEach, describe, expect, it } from "vitest";
import type { HistoryEntry } from "../../projections/history.ts";
import { Scenario } from "../services/scheduler/scenario.ts";

const scenarios: Scenario[] = [];
async function start(nodes: number) {
  const s = await Scenario.start();
  scenarios.push(s);
  for (let i = 0; i < nodes; i++) await s.addNode();
  return s;
}
afterEach(async () => {
  for (const s of scenarios.splice(0)) await s.stop();
});

function batchJob(id: string, count: number) {
  return {
    ID: id,
    Type: "batch",
    Datacenters: ["dc1"],
    TaskGroups: [
      {
        Name: "work",
        Count: count,
        Tasks: [{ Name: "task", Driver: "exec", Config: { command: "/bin/true" }, Resources: { CPU: 200 } }],
      },
    ],
  };
}

describe("PUT /v1/system/gc", () => {
  it("deletes a finished batch job with its evaluations and allocations, and keeps its history", async () => {
    const s = await start(1);
    await s.register(batchJob("report", 2));
    await s.idle();
    const placed = s.allocs("report");
    expect(placed).toHaveLength(2);
    await s.report(placed, "running");
    await s.report(placed, "complete");
    expect(s.job("report")?.Status).toBe("dead");
    const evalIDs = s.evals("report").map((e) => e.ID);
    expect(evalIDs.length).toBeGreaterThan(0);

    const gc = await s.call("/v1/system/gc", "PUT");
    expect(gc.status, gc.text).toBe(200);
    await s.idle();

    expect((await s.call("/v1/job/report")).status).toBe(404);
    expect(s.job("report")).toBeUndefined();
    expect(s.allocs("report")).toEqual([]);
    expect(s.evals("report")).toEqual([]);
    for (const a of placed) expect((await s.call(`/v1/allocation/${a.ID}`)).status).toBe(404);
    for (const id of evalIDs) expect((await s.call(`/v1/evaluation/${id}`)).status).toBe(404);
    expect((await s.call("/v1/job/report/summary")).status).toBe(404);
    expect((await s.call("/v1/jobs")).body).toEqual([]);

    const history = await s.call("/v1/job/report/history");
    expect(history.status, history.text).toBe(200);
    const entries = history.body as HistoryEntry[];
    expect(entries[0]).toMatchObject({ Field: "(created)" });
    // The job never went back to pending: it went from dead straight to deleted.
    const statuses = entries.filter((h) => h.Field === "Status").map((h) => h.To);
    expect(statuses.at(-1)).toBe("dead");
    expect(statuses).not.toContain("pending");
    expect(entries.at(-1)).toMatchObject({
      Field: "(deleted)",
      Cause: { Event: "GarbageCollected", Reason: "forced" },
    });
    expect(entries.at(-1)!.Index).toBe(gc.index);
    for (const a of placed) {
      const h = (await s.call(`/v1/allocation/${a.ID}/history`)).body as HistoryEntry[];
      expect(h.at(-1)).toMatchObject({ Field: "(deleted)" });
    }
  });
});
