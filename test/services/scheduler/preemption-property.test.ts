import { afterEach, describe, expect, it } from "vitest";
import type { AllocRow } from "../../../projections/allocs.ts";
import type { NodeRow } from "../../../projections/nodes.ts";
import { seededRandom } from "../../../src/services/scheduler/rng.ts";
import { overcommitted, replayOvercommits, resourceJob, SMALL_NODE } from "./capacity-check.ts";
import { Scenario } from "./scenario.ts";

const scenarios: Scenario[] = [];
afterEach(async () => {
  for (const s of scenarios.splice(0)) await s.stop();
});

function job(id: string, type: string, priority: number, count: number, cpu: number, mem: number) {
  return resourceJob({ id, type, priority, count, cpu, mem });
}

describe("capacity property with preemption: racing plans that evict never over-commit a node", () => {
  for (const seed of ["delta", "epsilon"]) {
    it(`holds after every applied record, and a replay agrees (seed ${seed})`, async () => {
      const random = seededRandom(seed);
      const pick = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));
      const s = await Scenario.start();
      scenarios.push(s);
      const config = await s.call("/v1/operator/scheduler/configuration", "PUT", {
        SchedulerAlgorithm: "binpack",
        PreemptionConfig: {
          SystemSchedulerEnabled: true,
          SysBatchSchedulerEnabled: true,
          BatchSchedulerEnabled: true,
          ServiceSchedulerEnabled: true,
        },
      });
      expect(config.status, config.text).toBe(200);
      for (let i = 0; i < 4; i++) await s.addNode(SMALL_NODE);

      const liveViolations: string[] = [];
      const nodesTable = s.server.store.table<NodeRow>("nodes");
      const allocsTable = s.server.store.table<AllocRow>("allocs");
      const sub = s.server.store.applied$.subscribe(() => {
        liveViolations.push(...overcommitted(nodesTable.all(), (id) => allocsTable.by("node", id)));
      });

      // More demand than room, at several priorities, all racing.
      const writes: Promise<unknown>[] = [];
      for (let i = 0; i < 10; i++) {
        const type = random() < 0.3 ? "batch" : "service";
        const body = job(
          `job-${i}`,
          type,
          [20, 40, 60, 80][pick(0, 3)]!,
          pick(1, 4),
          pick(300, 900),
          pick(128, 700),
        );
        writes.push(s.call("/v1/jobs", "PUT", { Job: body }));
        if (i === 5) writes.push(s.call("/v1/jobs", "PUT", { Job: job("agent", "system", 95, 1, 700, 256) }));
        await new Promise((r) => setImmediate(r));
      }
      const results = await Promise.all(writes);
      for (const r of results) expect((r as { status: number }).status).toBe(200);
      await s.idle();
      sub.unsubscribe();
      expect(liveViolations).toEqual([]);
      // The system job runs everywhere, which the cluster had no room for without evicting.
      expect(s.live("agent")).toHaveLength(4);
      const evicted = [...allocsTable.all()].filter((a) => a.DesiredStatus === "evict");
      expect(evicted.length).toBeGreaterThan(0);
      for (const a of evicted) {
        const by = allocsTable.get(a.PreemptedByAllocation)!;
        expect(by.NodeID).toBe(a.NodeID);
        expect(by.PreemptedAllocations).toContain(a.ID);
        expect(by.Job!.Priority - a.Job!.Priority).toBeGreaterThanOrEqual(10);
      }

      const { violations, replay } = await replayOvercommits(s.server.log);
      expect(violations).toEqual([]);
      expect(replay.hash()).toBe(s.server.store.hash());
    });
  }
});
