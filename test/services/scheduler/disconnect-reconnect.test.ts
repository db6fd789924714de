import { afterEach, describe, expect, it } from "vitest";
import type { AllocRow } from "../../../projections/allocs.ts";
import type { NodeRow } from "../../../projections/nodes.ts";
import { ALLOC_LOST, ALLOC_UNKNOWN } from "../../../streams/allocs.ts";
import type { TestNode } from "../../api/node-fixtures.ts";
import { Scenario, serviceJob } from "./scenario.ts";

const HOUR_NS = 3_600_000_000_000;
const ALLOC_RECONNECTED = "alloc not needed due to disconnected client reconnect";
const ALLOC_NOT_NEEDED = "alloc not needed due to job update";

const scenarios: Scenario[] = [];
afterEach(async () => {
  for (const s of scenarios.splice(0)) await s.stop();
});

const tolerantJob = (extra: Record<string, unknown> = {}) =>
  serviceJob("web", 3, { Update: { MaxParallel: 0 }, ...extra }, { MaxClientDisconnect: HOUR_NS });

/**
 * Seeds 000/001: three nodes run a count-3 job whose group tolerates a one
 * hour disconnect; the node of one allocation stops talking. Returns once
 * the server has marked it disconnected and the scheduler answered.
 */
async function disconnected() {
  const s = await Scenario.start();
  scenarios.push(s);
  for (let i = 0; i < 3; i++) await s.addNode();
  await s.register(tolerantJob());
  await s.idle();
  await s.report(s.allocs("web"), "running");
  const original = s.allocs("web")[0]!;
  const node = s.nodes.find((n) => n.id === original.NodeID)!;
  s.silent.add(node.id);
  await s.advance(35_000);

  expect(nodeRow(s, node).Status).toBe("disconnected");
  const all = s.allocs("web");
  // One replacement, nothing else.
  expect(all).toHaveLength(4);
  const a1 = alloc(s, original.ID);
  expect(a1).toMatchObject({
    ClientStatus: "unknown",
    ClientDescription: ALLOC_UNKNOWN,
    DesiredStatus: "run",
  });
  expect(a1.AllocStates?.map((st) => st.Value)).toEqual(["unknown"]);
  const r1 = all.find((a) => a.PreviousAllocation === a1.ID)!;
  expect(r1).toBeDefined();
  expect(r1.NodeID).not.toBe(node.id);
  expect(r1.Name).toBe(a1.Name);
  expect(r1.RescheduleTracker?.Events).toHaveLength(1);
  expect(a1.NextAllocation).toBe(r1.ID);
  const timeout = s.evals("web").find((e) => e.ID === a1.FollowupEvalID)!;
  expect(timeout).toMatchObject({
    TriggeredBy: "max-disconnect-timeout",
    Status: "pending",
    StatusDescription: "created for delayed disconnect timeout",
  });
  expect(Date.parse(timeout.WaitUntil) - s.clock.now()).toBeGreaterThan(HOUR_NS / 1e6 - 60_000);
  return { s, node, a1, r1 };
}

function alloc(s: Scenario, id: string): AllocRow {
  return s.allocs("web").find((a) => a.ID === id)!;
}

function nodeRow(s: Scenario, node: TestNode): NodeRow {
  return s.server.store.table<NodeRow>("nodes").get(node.id)!;
}

type Call = "register" | "status" | "alloc";
const ORDERS: Call[][] = [
  ["status", "alloc", "register"],
  ["status", "register", "alloc"],
  ["alloc", "status", "register"],
  ["alloc", "register", "status"],
  ["register", "status", "alloc"],
  ["register", "alloc", "status"],
];

/**
 * The client comes back and makes its three calls in `order`, as a real
 * client does, concurrently with the scheduler: an UpdateAlloc refused while
 * the node is still disconnected is sent again after the next heartbeat.
 * After every call there must never be more than the four allocations.
 */
async function reconnect(s: Scenario, node: TestNode, a1: AllocRow, order: readonly Call[], placed = 4) {
  let reported = false;
  const sendAllocs = async () => {
    const res = await s.updateAllocs(node, [a1], "running");
    if (res.status === 200) reported = true;
    else {
      expect(res.status).toBe(409);
      expect(res.text).toBe(`node ${node.id} is not allowed to update allocs while in status disconnected`);
    }
    await s.idle();
  };
  for (const call of order) {
    if (call === "register") expect((await s.reRegister(node)).status).toBe(200);
    if (call === "status") expect((await node.heartbeat()).status).toBe(200);
    if (call === "alloc") await sendAllocs();
    await s.idle();
    expect(s.allocs("web")).toHaveLength(placed);
  }
  if (!reported) await sendAllocs();
  expect(reported).toBe(true);
  expect((await node.heartbeat()).status).toBe(200);
  s.silent.delete(node.id);
  await s.idle();
  expect(nodeRow(s, node).Status).toBe("ready");
}

describe("disconnect and reconnect (seeds 000/001)", () => {
  for (const order of ORDERS) {
    it(`keeps exactly one of original and replacement when the client comes back: ${order.join(", ")}`, async () => {
      const { s, node, a1, r1 } = await disconnected();
      await reconnect(s, node, a1, order);

      // The original runs and is kept (the replacement never started: Nomad prefers the original).
      expect(alloc(s, a1.ID)).toMatchObject({ ClientStatus: "running", DesiredStatus: "run" });
      expect(alloc(s, r1.ID)).toMatchObject({ DesiredStatus: "stop", DesiredDescription: ALLOC_RECONNECTED });
      // Exactly one reconnect entry.
      expect(alloc(s, a1.ID).AllocStates?.map((st) => st.Value)).toEqual(["unknown", "running"]);
      // One placement in all (the replacement), one stop (the replacement), nothing more, later either.
      expect(s.allocs("web")).toHaveLength(4);
      expect(s.live("web")).toHaveLength(3);
      await s.advance(HOUR_NS / 1e6 + 60_000, 10_000);
      expect(s.allocs("web")).toHaveLength(4);
      expect(
        s
          .live("web")
          .map((a) => a.ID)
          .sort(),
      ).toEqual(
        s
          .allocs("web")
          .filter((a) => a.ID !== r1.ID)
          .map((a) => a.ID)
          .sort(),
      );
      const timeout = s.evals("web").find((e) => e.ID === a1.FollowupEvalID)!;
      expect(timeout.Status).toBe("complete");
    });
  }

  it("keeps the replacement when it runs a newer version of the job, and stops the original", async () => {
    const { s, node, a1 } = await disconnected();
    // A new version while the node is away: every reachable allocation is replaced, the unknown one is left alone.
    const update = tolerantJob();
    update.TaskGroups[0]!.Tasks[0]!.Config = { image: "nginx:2" };
    await s.register(update);
    await s.idle();
    expect(alloc(s, a1.ID)).toMatchObject({ ClientStatus: "unknown", DesiredStatus: "run" });
    const placedBefore = s.allocs("web").length;
    expect(placedBefore).toBe(7);
    await reconnect(s, node, a1, ["status", "alloc", "register"], placedBefore);
    expect(alloc(s, a1.ID)).toMatchObject({ DesiredStatus: "stop", DesiredDescription: ALLOC_NOT_NEEDED });
    expect(s.allocs("web")).toHaveLength(placedBefore);
    const live = s.live("web");
    expect(live).toHaveLength(3);
    expect(live.every((a) => a.Job?.Version === 1)).toBe(true);
  });

  it("marks the allocation lost when the node never comes back, and places nothing more", async () => {
    const { s, node, a1, r1 } = await disconnected();
    await s.advance(HOUR_NS / 1e6 + 60_000, 10_000);
    expect(nodeRow(s, node).Status).toBe("down");
    expect(alloc(s, a1.ID)).toMatchObject({
      ClientStatus: "lost",
      DesiredStatus: "stop",
      DesiredDescription: ALLOC_LOST,
    });
    expect(alloc(s, a1.ID).AllocStates?.map((st) => st.Value)).toEqual(["unknown", "lost"]);
    expect(alloc(s, r1.ID).DesiredStatus).toBe("run");
    expect(s.allocs("web")).toHaveLength(4);
    expect(s.live("web")).toHaveLength(3);
  });
});

describe("a node that goes down", () => {
  it("has its allocations lost and each replaced once, naming its predecessor", async () => {
    const s = await Scenario.start();
    scenarios.push(s);
    for (let i = 0; i < 3; i++) await s.addNode();
    await s.register(serviceJob("plain", 3, { Update: { MaxParallel: 0 } }));
    await s.idle();
    await s.report(s.allocs("plain"), "running");
    const gone = s.allocs("plain")[0]!;
    s.silent.add(gone.NodeID);
    await s.advance(35_000);
    expect(s.server.store.table<NodeRow>("nodes").get(gone.NodeID)?.Status).toBe("down");
    await s.advance(60_000);
    const all = s.allocs("plain");
    expect(all).toHaveLength(4);
    expect(all.find((a) => a.ID === gone.ID)).toMatchObject({ DesiredStatus: "stop", ClientStatus: "lost" });
    const replacement = all.find((a) => a.PreviousAllocation === gone.ID)!;
    expect(replacement).toMatchObject({ Name: gone.Name, DesiredStatus: "run" });
    expect(replacement.NodeID).not.toBe(gone.NodeID);
    expect(s.live("plain")).toHaveLength(3);
  });
});
