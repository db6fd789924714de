import { afterEach, describe, expect, it } from "vitest";
import type { AllocRow } from "../../../projections/allocs.ts";
import { createProjections } from "../../../projections/index.ts";
import { allocNetworkUse, nodeNetworks } from "../../../projections/networks.ts";
import type { NodeRow } from "../../../projections/nodes.ts";
import type { PlanRefusalRow } from "../../../projections/plan-apply.ts";
import { seededRandom } from "../../../src/services/scheduler/rng.ts";
import { CORE_SCHEDULER, SCHEDULER_TYPES } from "../../../src/services/scheduler/worker-pool.ts";
import { writeEvents } from "../../../src/store/writer.ts";
import { type AllocsPlanApplied, isTerminalAlloc } from "../../../streams/allocs.ts";
import { replayStore } from "../../replay-store.ts";
import { networkedNode, portsJob } from "./ports-fixtures.ts";
import { Scenario } from "./scenario.ts";

const scenarios: Scenario[] = [];
afterEach(async () => {
  for (const s of scenarios.splice(0)) await s.stop();
});

/** Who holds each port of each node, kept from allocation changes; a port taken twice is recorded. */
class PortLedger {
  private readonly holders = new Map<string, string>();
  readonly twice: string[] = [];

  change(index: number, before: AllocRow | undefined, after: AllocRow | undefined): void {
    if (before && !isTerminalAlloc(before))
      for (const p of allocNetworkUse(before).ports)
        this.holders.delete(`${before.NodeID} ${p.ip}:${p.port}`);
    if (after && !isTerminalAlloc(after)) {
      for (const p of allocNetworkUse(after).ports) {
        const key = `${after.NodeID} ${p.ip}:${p.port}`;
        const holder = this.holders.get(key);
        if (holder !== undefined && holder !== after.ID)
          this.twice.push(`#${index}: ${key} ${holder} ${after.ID}`);
        this.holders.set(key, after.ID);
      }
    }
  }
}

const NODES = 4;

describe("no port is handed out twice on a node", () => {
  for (const threads of [0, 3]) {
    const where = threads === 0 ? "on the main thread" : `on ${threads} scheduler threads`;
    it(`3 racing workers ${where}, placements and stops, small dynamic ranges: never a port twice at any index`, async () => {
      const s = await Scenario.start(threads === 0 ? [] : ["--scheduler-workers", String(threads)]);
      scenarios.push(s);
      s.scheduler.setWorkerConfig({
        NumSchedulers: 3,
        EnabledSchedulers: [...SCHEDULER_TYPES, CORE_SCHEDULER],
      });
      s.scheduler.setDepth(4);
      // 16 dynamic ports per node: random picks of racing plans collide often.
      for (let i = 0; i < NODES; i++)
        await s.addNode(networkedNode({ min: 21_000, max: 21_015, reserved: "21003" }));
      const random = seededRandom(`ports-${threads}`);
      const pause = async (on: boolean) => {
        const res = await s.call("/v1/operator/scheduler/configuration", "PUT", {
          SchedulerAlgorithm: "binpack",
          PauseEvalBroker: on,
        });
        expect(res.status, res.text).toBe(200);
      };
      const jobFor = (i: number) =>
        portsJob(`p-${i}`, 1 + (i % 3), {
          ...(i % 4 === 0 ? { static: { http: 8080 } } : {}),
          dynamic: i % 2 === 0 ? ["a"] : ["a", "b"],
        });
      // Round one: every evaluation ready at once.
      await pause(true);
      const first = await Promise.all(
        Array.from({ length: 24 }, (_, i) => s.call("/v1/jobs", "PUT", { Job: jobFor(i) })),
      );
      for (const r of first) expect(r.status, r.text).toBe(200);
      await pause(false);
      await s.idle();
      // Round two: stops (ports freed), new jobs and scale changes racing them.
      await pause(true);
      const writes: Promise<{ status: number; text: string }>[] = [];
      for (let i = 0; i < 24; i++) {
        if (random() < 0.4) writes.push(s.call(`/v1/job/p-${i}`, "DELETE"));
        else if (random() < 0.5)
          writes.push(s.call("/v1/jobs", "PUT", { Job: { ...jobFor(i), Priority: 70 } }));
      }
      for (let i = 24; i < 40; i++) writes.push(s.call("/v1/jobs", "PUT", { Job: jobFor(i) }));
      for (const r of await Promise.all(writes)) expect(r.status, r.text).toBe(200);
      await pause(false);
      await s.idle();

      const allocs = s.server.store.table<AllocRow>("allocs");
      const live = [...allocs.all()].filter((a) => !isTerminalAlloc(a));
      expect(live.length).toBeGreaterThan(NODES);
      // Every live allocation's ports are on its node's address, dynamic ones in the node's range.
      for (const a of live) {
        const nets = nodeNetworks(s.server.store.table<NodeRow>("nodes").get(a.NodeID)!);
        for (const p of allocNetworkUse(a).ports) {
          expect(p.ip).toBe(nets.hostIP);
          expect(p.port === 8080 || (p.port >= 21_000 && p.port <= 21_015 && p.port !== 21_003)).toBe(true);
        }
      }
      if (threads > 0) expect(s.scheduler.counters.onThreads).toBeGreaterThan(0);

      // Replay the log; after every record, no node has a port twice among its live allocations.
      const projections = createProjections();
      const replay = replayStore(s.server.log, projections);
      const ledger = new PortLedger();
      const changes = replay.change$.subscribe((c) => {
        if (c.table === "allocs") ledger.change(c.index, c.before as AllocRow, c.after as AllocRow);
      });
      await replay.start({ until: s.server.log.lastIndex() });
      changes.unsubscribe();
      await replay.stop();
      expect(ledger.twice).toEqual([]);
      expect(replay.hash()).toBe(s.server.store.hash());
      const refusals = s.server.store.table<PlanRefusalRow>("plan_refusals");
      for (const r of refusals.all())
        for (const n of r.Nodes)
          expect(n.Reason).toMatch(/port collision|resources exhausted|not ready|not eligible/);
    });
  }

  it("apply refuses a placement whose port is held on the node at that index, and records why", async () => {
    const s = await Scenario.start();
    scenarios.push(s);
    const node = await s.addNode(networkedNode());
    await s.register(portsJob("web", 1, { static: { http: 8080 } }));
    await s.idle();
    const [held] = s.live("web");
    const ip = nodeNetworks(s.server.store.table<NodeRow>("nodes").get(node.id)!).hostIP;
    const record: AllocsPlanApplied = {
      EvalID: "race-eval",
      Placed: [],
      Updated: [],
      Stopped: [],
      Preempted: [],
      PlanID: "race-plan",
      SnapshotIndex: s.server.store.appliedIndex,
      Job: { Namespace: "default", ID: "web", Version: 0 },
      Placements: [
        {
          ID: "00000000-0000-4000-8000-000000000001",
          Name: "web.web[1]",
          TaskGroup: "web",
          NodeID: node.id,
          Ports: [{ Label: "http", Value: 8080, To: 0, HostIP: ip }],
        },
      ],
    };
    await writeEvents(s.server.store, s.clock.now(), { kind: "server", id: "test" }, [
      { type: "AllocsPlanApplied", v: 1, data: record },
    ]);
    expect(
      s.server.store.table<AllocRow>("allocs").get("00000000-0000-4000-8000-000000000001"),
    ).toBeUndefined();
    const refusal = s.server.store.table<PlanRefusalRow>("plan_refusals").get("race-plan");
    expect(refusal?.Nodes).toEqual([
      {
        NodeID: node.id,
        Reason: `reserved alloc port collision: collision when reserving port for alloc 00000000-0000-4000-8000-000000000001: [port 8080 already in use]`,
        AllocIDs: ["00000000-0000-4000-8000-000000000001"],
      },
    ]);
    expect(held).toBeDefined();
  });
});
