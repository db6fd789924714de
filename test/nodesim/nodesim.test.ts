import { afterEach, describe, expect, it } from "vitest";
import { type NodeSimOptions, NodeSimulator } from "../../src/nodesim/simulator.ts";
import { HOUR_NS } from "../api/node-fixtures.ts";
import type { TestServer } from "../server-harness.ts";
import {
  allNodesReady,
  allocsTable,
  eventually,
  FAST_HEARTBEATS,
  nodesTable,
  placeMany,
  simJob,
  simulatedCluster,
  stopAllocs,
} from "./fixtures.ts";

const NODES = 200;
const FAST_DRIVER: NodeSimOptions["driver"] = {
  setup: { min: 5, max: 20 },
  pull: { min: 10, max: 50 },
  start: { min: 20, max: 100 },
  kill: { min: 10, max: 50 },
  failureRate: 0,
  eventInterval: 2_000,
};

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

const setup = (serverArgs: string[] = [], options: Partial<NodeSimOptions> = {}) =>
  simulatedCluster(cleanup, serverArgs, {
    nodes: NODES,
    seed: "nodesim-test",
    driver: FAST_DRIVER,
    ...options,
  });

const allReady = (s: TestServer) => allNodesReady(s, NODES);

describe("nodesim against a real server", () => {
  it("registers 200 nodes that heartbeat at the TTL they are given, and a plain heartbeat writes nothing", async () => {
    // A wider grace than the TTL: on a busy 2-core machine a node's heartbeat
    // can be late by more than 1 s, and this test counts heartbeats, not misses.
    const { s, sim } = await setup([...FAST_HEARTBEATS, "--heartbeat-grace", "3s"]);
    expect(new Set(sim.nodes.map((n) => n.id)).size).toBe(NODES);
    const before = s.log.lastIndex();
    const beats = sim.report().heartbeat.count;
    await eventually("two more heartbeats per node", () => sim.report().heartbeat.count >= beats + 2 * NODES);
    expect(s.log.lastIndex()).toBe(before);
    const report = sim.report();
    expect(report.rpc["Node.Register"]?.calls).toBe(NODES);
    expect(report.errors_by_reason).toEqual({});
    expect(report.rpc["Node.UpdateStatus"]?.errors).toBe(0);
    expect(report.heartbeat.p99_ms).toBeGreaterThan(0);
    expect(report.nodes).toMatchObject({ total: NODES, up: NODES, silent: 0 });
    expect(allReady(s)).toBe(true);
  });

  it("is deterministic from the seed: the same node IDs and names", () => {
    const a = new NodeSimulator({ server: "http://127.0.0.1:1", nodes: 5, seed: "x" });
    const b = new NodeSimulator({ server: "http://127.0.0.1:1", nodes: 5, seed: "x" });
    const c = new NodeSimulator({ server: "http://127.0.0.1:1", nodes: 5, seed: "y" });
    const ids = (sim: NodeSimulator) => sim.nodes.map((n) => `${n.id}/${n.secret}/${n.name}`);
    expect(ids(a)).toEqual(ids(b));
    expect(ids(a)).not.toEqual(ids(c));
  });

  it("runs placed allocations through pending → running → complete/failed, and stops what the server stops", async () => {
    // No periodic re-renders: a task keeps its last 10 events, and on a busy
    // machine re-renders would push the lifecycle events checked here out.
    const { s, sim } = await setup([], { driver: { ...FAST_DRIVER, eventInterval: 0 } });
    const service = simJob("web", "service", { tasks: [{ Name: "app" }, { Name: "sidecar" }] });
    const batch = simJob("report", "batch", { tasks: [{ Name: "run", Config: { run_for: "500ms" } }] });
    const failing = simJob("broken", "batch", {
      tasks: [{ Name: "run", Config: { run_for: "300ms", exit_code: 1 } }],
    });
    const nodeIDs = sim.nodes.map((n) => n.id);
    const web = await placeMany(
      s,
      nodeIDs.map((nodeID) => ({ nodeID, job: service })),
    );
    const reports = await placeMany(
      s,
      nodeIDs.slice(0, 50).map((nodeID) => ({ nodeID, job: batch })),
    );
    const broken = await placeMany(
      s,
      nodeIDs.slice(50, 60).map((nodeID) => ({ nodeID, job: failing })),
    );
    const status = (id: string) => allocsTable(s).get(id)?.ClientStatus;

    await eventually(
      "service running, batch complete, failing batch failed",
      () =>
        web.every((id) => status(id) === "running") &&
        reports.every((id) => status(id) === "complete") &&
        broken.every((id) => status(id) === "failed"),
    );
    const running = allocsTable(s).get(web[0]!)!;
    expect(Object.keys(running.TaskStates ?? {}).sort()).toEqual(["app", "sidecar"]);
    const events = (running.TaskStates!.app as { Events: { Type: string }[] }).Events.map((e) => e.Type);
    expect(events.slice(0, 4)).toEqual(["Received", "Task Setup", "Driver", "Started"]);
    const failed = allocsTable(s).get(broken[0]!)!.TaskStates!.run as {
      Failed: boolean;
      Events: { Type: string }[];
    };
    expect(failed.Failed).toBe(true);
    expect(failed.Events.at(-1)?.Type).toBe("Not Restarting");

    const stopped = web.slice(0, 100);
    await stopAllocs(s, stopped);
    await eventually("stopped allocations complete", () => stopped.every((id) => status(id) === "complete"));
    expect(web.slice(100).every((id) => status(id) === "running")).toBe(true);
    expect(sim.allocTally((job) => job === "web")).toMatchObject({ running: 100, complete: 100 });
    const report = sim.report();
    expect(report.rpc["Node.UpdateAlloc"]?.errors).toBe(0);
    // Each allocation reported at least once, and the stopped ones once more.
    expect(report.alloc_updates_sent).toBeGreaterThanOrEqual(web.length + reports.length + stopped.length);
  });

  it("after a disconnect wave, nodes come back with their three calls in random order and end ready", async () => {
    const { s, sim } = await setup(FAST_HEARTBEATS);
    const tolerant = simJob("tolerant", "service", { MaxClientDisconnect: HOUR_NS });
    const plain = simJob("plain", "service");
    const nodeIDs = sim.nodes.map((n) => n.id);
    const kept = await placeMany(
      s,
      nodeIDs.map((nodeID) => ({ nodeID, job: tolerant })),
    );
    const given = await placeMany(
      s,
      nodeIDs.map((nodeID) => ({ nodeID, job: plain })),
    );
    const row = (id: string) => allocsTable(s).get(id)!;
    await eventually("all running", () =>
      [...kept, ...given].every((id) => row(id).ClientStatus === "running"),
    );

    const wave = sim.disconnectWave({ share: 0.25, durationMs: 6_000 });
    const silent = new Set(sim.nodes.filter((n) => n.state === "silent").map((n) => n.id));
    expect(silent.size).toBe(NODES / 4);
    await eventually("the silent nodes disconnected", () =>
      [...silent].every((id) => nodesTable(s).get(id)?.Status === "disconnected"),
    );
    const report = await wave;
    expect(report.nodes).toHaveLength(NODES / 4);
    expect(Object.keys(report.orders).length).toBeGreaterThan(1);
    for (const order of Object.keys(report.orders))
      expect(order.split(" > ").sort()).toEqual(["Node.Register", "Node.UpdateAlloc", "Node.UpdateStatus"]);

    await eventually("every node ready again", () => allReady(s));
    const onSilent = (id: string) => silent.has(row(id).NodeID);
    // Reconnected: the tolerant allocations ran on, and say so with an AllocState entry.
    for (const id of kept.filter(onSilent)) {
      expect(row(id).ClientStatus).toBe("running");
      expect(row(id).AllocStates?.map((st) => st.Value)).toEqual(["unknown", "running"]);
    }
    // Given up while the node was gone: stopped by the server, and the client stopped them.
    await eventually("lost allocations stopped on their clients", () =>
      given
        .filter(onSilent)
        .every(
          (id) =>
            row(id).DesiredStatus === "stop" &&
            sim.allocTally().running === kept.length + given.length - silent.size,
        ),
    );
    const clientRunning = new Set(
      sim.nodes.flatMap((n) =>
        [...n.runners.values()].filter((r) => !r.destroyed && r.clientStatus === "running").map((r) => r.ID),
      ),
    );
    // Never both: nothing the server wants stopped still runs on a client.
    for (const a of allocsTable(s).all())
      if (a.DesiredStatus !== "run") expect(clientRunning.has(a.ID)).toBe(false);
  });
});
