import { afterEach, describe, expect, it } from "vitest";
import { NodeSimulator } from "../../src/nodesim/simulator.ts";
import { startTestServer } from "../server-harness.ts";
import {
  allocsTable,
  eventually,
  FAST_DRIVER,
  nodesTable,
  placeMany,
  simJob,
  stopAllocs,
} from "./fixtures.ts";

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

describe("nodesim: an allocation stopped before its node pulled it", () => {
  it("is reported complete, its tasks dead without having started, as a Nomad client reports it", async () => {
    const s = await startTestServer();
    cleanup.push(() => s.stop());
    const sim = new NodeSimulator({
      server: s.url,
      nodes: 2,
      seed: "stopped-before-pull",
      initialHeartbeatStaggerMs: 200,
      driver: FAST_DRIVER,
    });
    cleanup.push(() => sim.stop());
    await sim.start();
    await eventually(
      "both nodes ready",
      () => nodesTable(s).size === 2 && [...nodesTable(s).all()].every((n) => n.Status === "ready"),
    );
    // Cut off from the server, the node cannot pull what is placed on it meanwhile.
    const node = sim.nodes[0]!;
    node.silence();
    const [stopped, kept] = await placeMany(s, [
      { nodeID: node.id, job: simJob("early-stop", "service") },
      { nodeID: node.id, job: simJob("kept", "service") },
    ]);
    await stopAllocs(s, [stopped!]);
    const row = (id: string) => allocsTable(s).get(id)!;
    expect(row(stopped!)).toMatchObject({ DesiredStatus: "stop", ClientStatus: "pending" });

    await node.reconnect();
    await eventually(
      "the stopped allocation complete, the other running",
      () => row(stopped!).ClientStatus === "complete" && row(kept!).ClientStatus === "running",
    );
    const main = row(stopped!).TaskStates!.main as {
      State: string;
      Failed: boolean;
      StartedAt: string;
      Events: { Type: string }[];
    };
    expect(main).toMatchObject({ State: "dead", Failed: false, StartedAt: "0001-01-01T00:00:00Z" });
    expect(main.Events.map((e) => e.Type)).toEqual(["Received"]);
    expect(sim.allocTally((job) => job === "early-stop")).toMatchObject({
      pending: 0,
      running: 0,
      complete: 1,
    });
  });
});
