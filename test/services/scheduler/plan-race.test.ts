import { afterEach, describe, expect, it } from "vitest";
import type { AllocRow } from "../../../projections/allocs.ts";
import { createProjections } from "../../../projections/index.ts";
import type { NodeRow } from "../../../projections/nodes.ts";
import type { PlanRefusalRow } from "../../../projections/plan-apply.ts";
import {
  addUsage,
  allocUsage,
  exhaustedDimension,
  nodeCapacity,
  type Usage,
} from "../../../projections/resources.ts";
import { EnvelopeCodec } from "../../../src/codec/envelope-codec.ts";
import { CORE_SCHEDULER, SCHEDULER_TYPES } from "../../../src/services/scheduler/worker-pool.ts";
import { type AllocsPlanApplied, isTerminalAlloc } from "../../../streams/allocs.ts";
import { allSchemas } from "../../../streams/index.ts";
import { replayStore } from "../../replay-store.ts";
import { Scenario } from "./scenario.ts";

const scenarios: Scenario[] = [];
afterEach(async () => {
  for (const s of scenarios.splice(0)) await s.stop();
});

const NODES = 20;
const JOBS = 200;
/** Each node fits exactly ten of the jobs' allocations: 20 nodes hold the 200 jobs and not one more. */
const NODE = {
  NodeResources: { Cpu: { CpuShares: 4000 }, Memory: { MemoryMB: 4000 }, Disk: { DiskMB: 100_000 } },
};

function job(id: string) {
  return {
    ID: id,
    Type: "service",
    Datacenters: ["dc1"],
    Update: { MaxParallel: 0 },
    TaskGroups: [
      {
        Name: "g",
        Count: 1,
        EphemeralDisk: { SizeMB: 10 },
        Tasks: [
          {
            Name: "t",
            Driver: "docker",
            Config: { image: "race" },
            Resources: { CPU: 400, MemoryMB: 400 },
            LogConfig: { MaxFiles: 1, MaxFileSizeMB: 1 },
          },
        ],
      },
    ],
  };
}

/** Per node, what its live allocations use, kept up to date from the changes of a replay. */
class NodeLoad {
  private readonly used = new Map<string, Usage>();

  change(before: AllocRow | undefined, after: AllocRow | undefined): string {
    const row = (after ?? before)!;
    const used = this.used.get(row.NodeID) ?? { cpu: 0, memoryMB: 0, diskMB: 0 };
    if (before && !isTerminalAlloc(before)) addUsage(used, allocUsage(before), -1);
    if (after && !isTerminalAlloc(after)) addUsage(used, allocUsage(after));
    this.used.set(row.NodeID, used);
    return row.NodeID;
  }

  over(node: NodeRow): string | undefined {
    return exhaustedDimension(
      nodeCapacity(node),
      this.used.get(node.ID) ?? { cpu: 0, memoryMB: 0, diskMB: 0 },
    );
  }
}

describe("plans of racing workers", () => {
  const cases = [
    { threads: 0, depth: 1 },
    { threads: 0, depth: 4 },
    { threads: 3, depth: 4 },
  ];
  for (const { threads, depth } of cases) {
    const where = threads === 0 ? "on the main thread" : `on ${threads} scheduler threads`;
    it(`never over-commit a node: 3 workers ${where}, ${depth} in flight each, ${JOBS} jobs onto nodes that fit exactly that many`, async () => {
      const s = await Scenario.start(threads === 0 ? [] : ["--scheduler-workers", String(threads)]);
      scenarios.push(s);
      s.scheduler.setWorkerConfig({
        NumSchedulers: 3,
        EnabledSchedulers: [...SCHEDULER_TYPES, CORE_SCHEDULER],
      });
      s.scheduler.setDepth(depth);
      for (let i = 0; i < NODES; i++) await s.addNode(NODE);
      const pause = async (on: boolean) => {
        const res = await s.call("/v1/operator/scheduler/configuration", "PUT", {
          SchedulerAlgorithm: "binpack",
          PauseEvalBroker: on,
        });
        expect(res.status, res.text).toBe(200);
      };
      // Every evaluation ready at once: the workers take them as fast as they can.
      await pause(true);
      const ids = Array.from({ length: JOBS }, (_, i) => `race-${String(i).padStart(3, "0")}`);
      const registered = await Promise.all(ids.map((id) => s.call("/v1/jobs", "PUT", { Job: job(id) })));
      for (const r of registered) expect(r.status, r.text).toBe(200);
      await pause(false);
      await s.idle();

      // Every job placed, or blocked with the reason its placement failed.
      const unexplained: string[] = [];
      let placed = 0;
      for (const id of ids) {
        if (s.live(id).length === 1) {
          placed++;
          continue;
        }
        const blocked = s.evals(id).find((e) => e.Status === "blocked");
        const why = blocked?.FailedTGAllocs ?? null;
        if (!blocked || ((why === null || Object.keys(why).length === 0) && !blocked.StatusDescription))
          unexplained.push(id);
      }
      expect(unexplained).toEqual([]);
      expect(placed).toBeGreaterThan(0);
      expect(s.allocs("race-000").length).toBeLessThanOrEqual(1);
      if (threads > 0) expect(s.scheduler.counters.onThreads).toBeGreaterThanOrEqual(JOBS);

      // Replay the log; after every record, every node it changed fits what runs there.
      const projections = createProjections();
      const replay = replayStore(s.server.log, projections);
      const load = new NodeLoad();
      const violations: string[] = [];
      let pending = new Set<string>();
      let pendingIndex = 0;
      const check = () => {
        for (const id of pending) {
          const node = projections.tables.nodes.get(id);
          const over = node && load.over(node);
          if (over) violations.push(`#${pendingIndex}: node ${id} ${over}`);
        }
        pending = new Set();
      };
      let plans = 0;
      let withIndex = 0;
      const changes = replay.change$.subscribe((c) => {
        // A change of a later record: the previous record is wholly applied.
        if (c.index !== pendingIndex) check();
        pendingIndex = c.index;
        if (c.table === "allocs") pending.add(load.change(c.before as AllocRow, c.after as AllocRow));
      });
      const records = replay.applied$.subscribe(() => check());
      const codec = new EnvelopeCodec(allSchemas);
      for await (const batch of s.server.log.read(1)) {
        for (const r of batch) {
          const e = codec.decode(r.bytes);
          if (e.type !== "AllocsPlanApplied") continue;
          plans++;
          const { SnapshotIndex } = e.data as AllocsPlanApplied;
          if (SnapshotIndex !== undefined && SnapshotIndex < r.index) withIndex++;
        }
      }
      await replay.start({ until: s.server.log.lastIndex() });
      check();
      changes.unsubscribe();
      records.unsubscribe();
      await replay.stop();
      expect(violations).toEqual([]);
      expect(replay.hash()).toBe(s.server.store.hash());
      // Each plan says which index it was computed at, before the one it applies at.
      expect(withIndex).toBe(plans);
      // What raced and lost was refused at apply and planned again, not applied.
      const refusals = s.server.store.table<PlanRefusalRow>("plan_refusals");
      for (const r of refusals.all())
        for (const n of r.Nodes) expect(n.Reason).toMatch(/resources exhausted|not ready|not eligible/);
    });
  }
});
