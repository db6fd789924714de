import { describe, expect, it } from "vitest";
import { computeInProcess } from "../../../src/services/scheduler/worker.ts";
import { planApplyWorld } from "./plan-apply-world.ts";

/** A world whose one node, n1, has room for one allocation, and whose service jobs may preempt. */
async function world() {
  const w = await planApplyWorld({
    type: "SchedulerConfigSet",
    v: 1,
    data: {
      Config: {
        SchedulerAlgorithm: "binpack",
        PreemptionConfig: {
          SystemSchedulerEnabled: true,
          SysBatchSchedulerEnabled: false,
          BatchSchedulerEnabled: false,
          ServiceSchedulerEnabled: true,
        },
        MemoryOversubscriptionEnabled: false,
        RejectJobRegistration: false,
        PauseEvalBroker: false,
      },
      CAS: false,
      CASIndex: 0,
    },
  });
  await w.addNode("n1");
  return w;
}

describe("a plan's preemptions, checked again at apply", () => {
  it("applies once: a second plan computed against the same tables is refused on the node it no longer fits", async () => {
    const w = await world();
    const low = await w.register("low", 20);
    expect((await w.submit(computeInProcess(w.rt, low, 0))).fullCommit).toBe(true);
    const [victim] = w.m.tables.allocs.by("node", "n1");

    const a = await w.register("a", 80);
    const b = await w.register("b", 90);
    const passA = computeInProcess(w.rt, a, 0);
    const passB = computeInProcess(w.rt, b, 0);
    expect([...passA.outcome.plan.preemptions.keys()]).toEqual([victim!.ID]);
    expect([...passB.outcome.plan.preemptions.keys()]).toEqual([victim!.ID]);

    expect(await w.submit(passA)).toMatchObject({ fullCommit: true, refusedNodes: [] });
    const [placedA] = w.m.tables.allocs.by("eval", a.ID);
    expect(placedA?.PreemptedAllocations).toEqual([victim!.ID]);
    expect(w.m.tables.allocs.get(victim!.ID)).toMatchObject({
      DesiredStatus: "evict",
      DesiredDescription: `Preempted by alloc ID ${placedA!.ID}`,
      PreemptedByAllocation: placedA!.ID,
    });
    const evals = [...w.m.tables.evals.by("job", "default\u0000low")].filter(
      (e) => e.TriggeredBy === "preemption",
    );
    expect(evals).toHaveLength(1);
    expect(evals[0]).toMatchObject({ Status: "pending", Priority: 20, Type: "service" });

    // B's victim is already evicted: its room went to A, so B does not fit.
    expect(await w.submit(passB)).toMatchObject({ fullCommit: false, refusedNodes: ["n1"] });
    const refusal = w.m.tables.planRefusals.by("eval", b.ID)[0];
    expect(refusal?.Nodes[0]?.Reason).toBe("resources exhausted: cpu");
    expect(w.m.tables.allocs.by("eval", b.ID)).toEqual([]);
    expect(w.m.tables.allocs.get(victim!.ID)?.PreemptedByAllocation).toBe(placedA!.ID);
    // Only the applied preemption created an evaluation.
    expect(
      [...w.m.tables.evals.by("job", "default\u0000low")].filter((e) => e.TriggeredBy === "preemption"),
    ).toHaveLength(1);
  });

  it("refuses the placement when a preempted allocation no longer exists, and changes nothing", async () => {
    const w = await world();
    const low = await w.register("low", 20);
    expect((await w.submit(computeInProcess(w.rt, low, 0))).fullCommit).toBe(true);
    const [victim] = w.m.tables.allocs.by("node", "n1");
    const high = await w.register("high", 80);
    const pass = computeInProcess(w.rt, high, 0);
    const [entry] = [...pass.outcome.plan.preemptions.values()];
    pass.outcome.plan.preemptions.clear();
    pass.outcome.plan.preemptions.set("ghost", { alloc: { ...victim!, ID: "ghost" }, by: entry!.by });

    expect(await w.submit(pass)).toMatchObject({ fullCommit: false, refusedNodes: ["n1"] });
    const refusal = w.m.tables.planRefusals.by("eval", high.ID)[0];
    expect(refusal?.Nodes[0]?.Reason).toBe("preempted allocation ghost no longer exists");
    expect(w.m.tables.allocs.get(victim!.ID)?.DesiredStatus).toBe("run");
    expect(w.m.tables.allocs.by("eval", high.ID)).toEqual([]);
    expect(
      [...w.m.tables.evals.by("job", "default\u0000low")].some((e) => e.TriggeredBy === "preemption"),
    ).toBe(false);
  });

  it("places without evicting again when the preempted allocation finished meanwhile", async () => {
    const w = await world();
    const low = await w.register("low", 20);
    expect((await w.submit(computeInProcess(w.rt, low, 0))).fullCommit).toBe(true);
    const [victim] = w.m.tables.allocs.by("node", "n1");
    const high = await w.register("high", 80);
    const pass = computeInProcess(w.rt, high, 0);
    expect(pass.outcome.plan.preemptions.size).toBe(1);
    const [done] = await w.m.write({
      type: "AllocsPlanApplied",
      v: 1,
      data: {
        EvalID: low.ID,
        Placed: [],
        Updated: [],
        Stopped: [
          {
            ID: victim!.ID,
            DesiredDescription: "stopped",
            ClientStatus: "",
            FollowupEvalID: "",
            ModifyTime: 0,
          },
        ],
        Preempted: [],
      },
    });
    expect(done?.status).toBe("applied");
    expect(await w.submit(pass)).toMatchObject({ fullCommit: true });
    expect(w.m.tables.allocs.get(victim!.ID)).toMatchObject({
      DesiredStatus: "stop",
      PreemptedByAllocation: "",
    });
    expect(
      [...w.m.tables.evals.by("job", "default\u0000low")].some((e) => e.TriggeredBy === "preemption"),
    ).toBe(false);
  });
});
