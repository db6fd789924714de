import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { Counters } from "../../src/nodesim/counters.ts";
import { HeartbeatThread } from "../../src/nodesim/heartbeat-thread.ts";
import { type NodeSimOptions, NodeSimulator } from "../../src/nodesim/simulator.ts";
import { VirtualClock } from "../../src/util/clock.ts";
import type { TestServer } from "../server-harness.ts";
import { serve } from "./answering-server.ts";
import { allNodesReady, eventually, FAST_HEARTBEATS, nodesTable, simulatedCluster } from "./fixtures.ts";

const NODES = 40;

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

const setup = (serverArgs: string[], options: Partial<NodeSimOptions> = {}) =>
  simulatedCluster(cleanup, serverArgs, {
    nodes: NODES,
    seed: "heartbeat-thread-test",
    heartbeatThread: true,
    ...options,
  });

const allReady = (s: TestServer) => allNodesReady(s, NODES);

describe("nodesim heartbeats from a thread of their own", () => {
  it("heartbeats every node at its TTL from the thread, counted with the others' calls", async () => {
    const { s, sim } = await setup([...FAST_HEARTBEATS, "--heartbeat-grace", "3s"]);
    const thread = sim.heartbeatThread;
    expect(thread).toBeDefined();
    const before = s.log.lastIndex();
    const beats = sim.report().heartbeat.count;
    await eventually("two more heartbeats per node", () => sim.report().heartbeat.count >= beats + 2 * NODES);
    // A plain heartbeat writes nothing: every node stayed ready.
    expect(s.log.lastIndex()).toBe(before);
    expect(allReady(s)).toBe(true);
    const report = sim.report();
    expect(report.rpc["Node.UpdateStatus"]?.errors).toBe(0);
    // Every heartbeat went out from the thread; the main thread sent none.
    expect(thread!.calls).toBe(report.rpc["Node.UpdateStatus"]?.calls);
    const loop = await thread!.loopDelay();
    expect(loop.count).toBeGreaterThan(0);
  });

  it("a node whose heartbeat is answered 404 registers again and heartbeats on", async () => {
    const { s, sim } = await setup([...FAST_HEARTBEATS, "--heartbeat-grace", "3s"]);
    const node = sim.nodes[0]!;
    const res = await s.call("/v1/rpc/Node.Deregister", {
      method: "PUT",
      headers: { "content-type": "application/json", "x-nomad-token": node.secret },
      body: JSON.stringify({ NodeID: node.id }),
    });
    expect(res.status).toBe(200);
    await eventually("the node registered again", () => nodesTable(s).get(node.id)?.Status === "ready");
    expect(sim.report().errors_by_reason["Node.UpdateStatus 404"]).toBeGreaterThanOrEqual(1);
    const beats = sim.report().heartbeat.count;
    await eventually("heartbeats go on", () => sim.report().heartbeat.count >= beats + 2 * NODES);
    expect(allReady(s)).toBe(true);
  });

  it("after a disconnect wave, silenced nodes go down, come back with their three calls, and heartbeat on", async () => {
    const { s, sim } = await setup(FAST_HEARTBEATS);
    const wave = sim.disconnectWave({ share: 0.25, durationMs: 5_000 });
    const silent = sim.nodes.filter((n) => n.state === "silent").map((n) => n.id);
    expect(silent).toHaveLength(NODES / 4);
    await eventually("the silent nodes missed their heartbeats", () =>
      silent.every((id) => nodesTable(s).get(id)?.Status === "down"),
    );
    const report = await wave;
    for (const order of Object.keys(report.orders))
      expect(order.split(" > ").sort()).toEqual(["Node.Register", "Node.UpdateAlloc", "Node.UpdateStatus"]);
    await eventually("every node ready again", () => allReady(s));
    const beats = sim.report().heartbeat.count;
    await eventually("every node heartbeats on", () => sim.report().heartbeat.count >= beats + 2 * NODES);
    expect(allReady(s)).toBe(true);
  });

  it("settles: a heartbeat on its way when the node stops is answered and counted before the thread closes", async () => {
    const { server, url } = await serve(() => 150);
    const counters = new Counters();
    const thread = new HeartbeatThread(url, "json", counters, pino({ level: "silent" }));
    cleanup.push(async () => {
      await thread.close();
      server.closeAllConnections();
      server.close();
    });
    const loop = thread.factory({ index: 0, id: "n1", secret: "s1" }, "settle", () => undefined);
    const beat = loop.beat();
    loop.stop();
    await thread.settle(5_000);
    expect(thread.calls).toBe(1);
    expect(counters.snapshot().rpc["Node.UpdateStatus"]).toMatchObject({ calls: 1, errors: 0 });
    await beat;
  });

  it("refuses a heartbeat thread on a clock other than the system's", () => {
    expect(
      () =>
        new NodeSimulator({
          server: "http://127.0.0.1:1",
          nodes: 1,
          heartbeatThread: true,
          clock: new VirtualClock(),
        }),
    ).toThrow(/system clock/);
  });
});
