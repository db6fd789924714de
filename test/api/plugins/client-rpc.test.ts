import { once } from "node:events";
import type { AddressInfo } from "node:net";
import { connect } from "node:net";
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import type { AllocRow } from "../../../projections/allocs.ts";
import type { EvaluationRow } from "../../../projections/evals.ts";
import { createProjections } from "../../../projections/index.ts";
import type { NodeRow } from "../../../projections/nodes.ts";
import { replySlabsMade } from "../../../src/api/client-rpc/reply-json.ts";
import { EnvelopeCodec } from "../../../src/codec/envelope-codec.ts";
import { Store } from "../../../src/store/store.ts";
import { VirtualClock } from "../../../src/util/clock.ts";
import { ALLOC_LOST, ALLOC_UNKNOWN } from "../../../streams/allocs.ts";
import { allSchemas } from "../../../streams/index.ts";
import { startTestServer, type TestServer } from "../../server-harness.ts";
import {
  allocRow,
  HOUR_NS,
  nodeRow,
  placeAlloc,
  settle,
  TestNode,
  testJob,
  waitForNode,
} from "../node-fixtures.ts";

/** Longer than any TTL with one node (10 s + up to 10 s of stagger) plus the 10 s grace. */
const PAST_TTL_MS = 30_001;

const running: TestServer[] = [];
async function start(options: Parameters<typeof startTestServer>[0] = {}) {
  const s = await startTestServer(options);
  running.push(s);
  return s;
}
afterEach(async () => {
  for (const s of running.splice(0)) await s.stop();
});

async function readyNode(s: TestServer) {
  const node = new TestNode(s);
  expect((await node.register()).status).toBe(200);
  expect((await node.heartbeat()).status).toBe(200);
  return node;
}

function evalsFor(s: TestServer, nodeID: string): EvaluationRow[] {
  return s.store.table<EvaluationRow>("evals").by("node", nodeID);
}

describe("client RPC: register, heartbeat, missed heartbeats", () => {
  it("answers every one of concurrent first heartbeats of a node: the ones that lose the race are decided again", async () => {
    const s = await start();
    const node = new TestNode(s);
    expect((await node.register()).status).toBe(200);
    // All decide initializing -> ready from the same row; one write wins, and
    // the others find the node ready, which needs no write.
    const beats = await Promise.all(Array.from({ length: 5 }, () => node.heartbeat()));
    expect(beats.map((b) => b.status)).toEqual([200, 200, 200, 200, 200]);
    expect(nodeRow(s, node.id).Status).toBe("ready");
    // Losers' records are in the log, refused at apply; one status change took effect.
    const history = (await (await s.call(`/v1/node/${node.id}/history`)).json()) as {
      Field: string;
      From: unknown;
      To: unknown;
    }[];
    expect(history.filter((h) => h.Field === "Status").map((h) => [h.From, h.To])).toEqual([
      ["initializing", "ready"],
    ]);
  });

  it("registers a node as initializing, heartbeats it to ready, and writes nothing for a plain heartbeat", async () => {
    const clock = new VirtualClock();
    const s = await start({ deps: { clock } });
    const node = new TestNode(s);

    const reg = await node.register();
    expect(reg.status).toBe(200);
    const ttlNs = reg.body.HeartbeatTTL as number;
    // One node: the 10 s minimum plus a stagger below it.
    expect(ttlNs).toBeGreaterThanOrEqual(10_000_000_000);
    expect(ttlNs).toBeLessThan(20_000_000_000);
    expect(reg.body.NodeModifyIndex).toBe(reg.body.Index);
    expect(reg.body.NumNodes).toBe(1);

    let got = await s.call(`/v1/node/${node.id}`);
    const text = await got.text();
    expect(text).not.toContain(node.secret);
    const registered = JSON.parse(text) as NodeRow & { SecretID: string };
    expect(registered).toMatchObject({
      ID: node.id,
      Status: "initializing",
      SchedulingEligibility: "eligible",
      SecretID: "",
      CreateIndex: reg.body.Index,
      LastMissedHeartbeatIndex: 0,
    });
    expect(registered.Events.map((e) => e.Message)).toEqual(["Node registered"]);
    expect(registered.ComputedClass).toMatch(/^v1:\d+$/);

    const hb = await node.heartbeat();
    expect(hb.status).toBe(200);
    expect(hb.body.Index).toBeGreaterThan(reg.body.Index as number);
    got = await s.call(`/v1/node/${node.id}`);
    expect(await got.json()).toMatchObject({ Status: "ready", ModifyIndex: hb.body.Index });

    const before = s.log.lastIndex();
    for (let i = 0; i < 5; i++) {
      clock.advance(5_000);
      const again = await node.heartbeat();
      expect(again.status).toBe(200);
      expect(again.body.Index).toBe(0);
      expect(again.body.HeartbeatTTL as number).toBeGreaterThan(0);
    }
    expect(s.log.lastIndex()).toBe(before);
    // Kept alive by the heartbeats: 25 s of virtual time passed, more than one TTL.
    expect(nodeRow(s, node.id).Status).toBe("ready");
  });

  it("never writes a node's SecretID to the log, only its hash", async () => {
    const s = await start({ deps: { clock: new VirtualClock() } });
    const node = await readyNode(s);
    await node.rpc("Node.GetClientAllocs", { NodeID: node.id, SecretID: node.secret }, { token: null });
    for await (const batch of s.log.read(1)) {
      for (const record of batch) expect(Buffer.from(record.bytes).includes(node.secret)).toBe(false);
    }
  });

  it("marks a node that misses its heartbeat disconnected when it runs a max_client_disconnect allocation", async () => {
    const clock = new VirtualClock();
    const s = await start({ deps: { clock } });
    const node = await readyNode(s);
    const tolerant = await placeAlloc(s, {
      NodeID: node.id,
      Job: testJob({ maxClientDisconnectNs: HOUR_NS }),
    });
    const plain = await placeAlloc(s, { NodeID: node.id, JobID: "batch", Job: testJob({ id: "batch" }) });
    const pending = await placeAlloc(s, {
      NodeID: node.id,
      JobID: "late",
      Job: testJob({ id: "late", maxClientDisconnectNs: HOUR_NS }),
    });
    const up = await node.updateAllocs(clock, [
      { ID: tolerant.ID, ClientStatus: "running" },
      { ID: plain.ID, ClientStatus: "running" },
    ]);
    expect(up.status).toBe(200);

    clock.advance(PAST_TTL_MS);
    const disconnected = await waitForNode(s, node.id, (n) => n.Status !== "ready");
    expect(disconnected.Status).toBe("disconnected");
    expect(disconnected.LastMissedHeartbeatIndex).toBe(disconnected.ModifyIndex);
    expect(disconnected.Events.at(-1)).toMatchObject({
      Message: "Node heartbeat missed",
      Subsystem: "Cluster",
    });

    const a = allocRow(s, tolerant.ID);
    expect(a).toMatchObject({
      ClientStatus: "unknown",
      ClientDescription: ALLOC_UNKNOWN,
      DesiredStatus: "run",
    });
    expect(a.AllocStates).toEqual([{ Field: 0, Value: "unknown", Time: expect.any(String) }]);
    expect(a.AllocModifyIndex).toBeGreaterThan(tolerant.AllocModifyIndex);
    // Without max_client_disconnect, or not yet running: given up.
    for (const id of [plain.ID, pending.ID]) {
      expect(allocRow(s, id)).toMatchObject({
        ClientStatus: "lost",
        DesiredStatus: "stop",
        DesiredDescription: ALLOC_LOST,
      });
    }
    const evals = evalsFor(s, node.id);
    expect(evals.map((e) => e.JobID).sort()).toEqual(["batch", "late", "web"]);
    expect(evals.every((e) => e.TriggeredBy === "node-update" && e.Status === "pending")).toBe(true);

    // While the window is open the node stays disconnected, and re-checking writes nothing.
    const quiet = s.log.lastIndex();
    clock.advance(10 * 60_000);
    await s.store.caughtUp();
    expect(nodeRow(s, node.id).Status).toBe("disconnected");
    expect(s.log.lastIndex()).toBe(quiet);

    // Once max_client_disconnect has run out, nothing can reconnect: down, and the allocation is lost.
    clock.advance(HOUR_NS / 1e6);
    const down = await waitForNode(s, node.id, (n) => n.Status === "down");
    expect(down.LastMissedHeartbeatIndex).toBe(disconnected.LastMissedHeartbeatIndex);
    expect(allocRow(s, tolerant.ID)).toMatchObject({ ClientStatus: "lost", DesiredStatus: "stop" });
    expect(allocRow(s, tolerant.ID).AllocStates?.map((st) => st.Value)).toEqual(["unknown", "lost"]);
  });

  it("marks a node that misses its heartbeat down when nothing on it tolerates a disconnect, and lets it come back", async () => {
    const clock = new VirtualClock();
    const s = await start({ deps: { clock } });
    const node = await readyNode(s);
    const alloc = await placeAlloc(s, { NodeID: node.id });
    await node.updateAllocs(clock, [{ ID: alloc.ID, ClientStatus: "running" }]);

    clock.advance(PAST_TTL_MS);
    const down = await waitForNode(s, node.id, (n) => n.Status !== "ready");
    expect(down.Status).toBe("down");
    expect(down.LastMissedHeartbeatIndex).toBe(down.ModifyIndex);
    expect(allocRow(s, alloc.ID)).toMatchObject({
      ClientStatus: "lost",
      DesiredStatus: "stop",
      DesiredDescription: ALLOC_LOST,
    });
    expect(evalsFor(s, node.id).map((e) => e.TriggeredBy)).toEqual(["node-update"]);

    // A down node has no timer: more time changes nothing.
    const quiet = s.log.lastIndex();
    clock.advance(10 * PAST_TTL_MS);
    await s.store.caughtUp();
    expect(s.log.lastIndex()).toBe(quiet);

    // Registering does not change its status; a heartbeat takes it straight back to ready.
    expect((await node.register()).body.HeartbeatTTL).toBe(0);
    expect(nodeRow(s, node.id).Status).toBe("down");
    const back = await node.heartbeat();
    expect(back.status).toBe(200);
    const ready = nodeRow(s, node.id);
    expect(ready.Status).toBe("ready");
    expect(ready.LastMissedHeartbeatIndex).toBe(0);
    expect(ready.Events.at(-1)?.Message).toBe("Node reregistered by heartbeat");
  });

  it("refuses UpdateAlloc from a down node with Nomad's error, writing nothing", async () => {
    const clock = new VirtualClock();
    const s = await start({ deps: { clock } });
    const node = await readyNode(s);
    const alloc = await placeAlloc(s, { NodeID: node.id });
    clock.advance(PAST_TTL_MS);
    await waitForNode(s, node.id, (n) => n.Status === "down");

    const before = s.log.lastIndex();
    const refused = await node.updateAllocs(clock, [{ ID: alloc.ID, ClientStatus: "running" }]);
    expect(refused.status).toBe(409);
    expect(refused.text).toBe(`node ${node.id} is not allowed to update allocs while in status down`);
    expect(s.log.lastIndex()).toBe(before);
    expect(allocRow(s, alloc.ID).ClientStatus).toBe("lost");
  });
});

describe("client RPC: reconnect in every order (Nomad PR 15808)", () => {
  /** A ready node whose max_client_disconnect allocation ran, then a missed heartbeat. */
  async function disconnectedNode() {
    const clock = new VirtualClock();
    const s = await start({ deps: { clock } });
    const node = await readyNode(s);
    const alloc = await placeAlloc(s, { NodeID: node.id, Job: testJob({ maxClientDisconnectNs: HOUR_NS }) });
    expect((await node.updateAllocs(clock, [{ ID: alloc.ID, ClientStatus: "running" }])).status).toBe(200);
    clock.advance(PAST_TTL_MS);
    const missed = await waitForNode(s, node.id, (n) => n.Status === "disconnected");
    expect(allocRow(s, alloc.ID).ClientStatus).toBe("unknown");
    return { s, clock, node, alloc, missedIndex: missed.LastMissedHeartbeatIndex };
  }

  async function expectParked(s: TestServer, node: TestNode, missedIndex: number) {
    const hb = await node.heartbeat();
    expect(hb.status).toBe(200);
    const parked = nodeRow(s, node.id);
    expect(parked.Status).toBe("initializing");
    expect(parked.LastMissedHeartbeatIndex).toBe(missedIndex);
  }

  function expectReconnected(s: TestServer, node: TestNode, alloc: AllocRow) {
    const n = nodeRow(s, node.id);
    expect(n.Status).toBe("ready");
    expect(n.LastMissedHeartbeatIndex).toBe(0);
    expect(n.LastAllocUpdateIndex).toBeGreaterThan(0);
    const a = allocRow(s, alloc.ID);
    expect(a.ClientStatus).toBe("running");
    expect(a.AllocStates?.map((st) => st.Value)).toEqual(["unknown", "running"]);
    const triggers = evalsFor(s, node.id).map((e) => e.TriggeredBy);
    expect(triggers.filter((t) => t === "node-update").length).toBeGreaterThanOrEqual(3);
    const reconnect = s.store
      .table<EvaluationRow>("evals")
      .by("job", `default\u0000${a.JobID}`)
      .filter((e) => e.TriggeredBy === "reconnect");
    expect(reconnect).toHaveLength(1);
  }

  it("UpdateStatus first: parked in initializing until the allocations are reported", async () => {
    const { s, clock, node, alloc, missedIndex } = await disconnectedNode();
    await expectParked(s, node, missedIndex);
    // Heartbeating again before reporting keeps it parked, and writes nothing.
    const before = s.log.lastIndex();
    await expectParked(s, node, missedIndex);
    expect(s.log.lastIndex()).toBe(before);

    const up = await node.updateAllocs(clock, [{ ID: alloc.ID, ClientStatus: "running" }]);
    expect(up.status).toBe(200);
    const n = nodeRow(s, node.id);
    expect(n.LastAllocUpdateIndex).toBeGreaterThan(n.LastMissedHeartbeatIndex);
    expect((await node.heartbeat()).status).toBe(200);
    expectReconnected(s, node, alloc);
  });

  it("UpdateAlloc first: refused while disconnected, accepted after the heartbeat", async () => {
    const { s, clock, node, alloc, missedIndex } = await disconnectedNode();
    const before = s.log.lastIndex();
    const refused = await node.updateAllocs(clock, [{ ID: alloc.ID, ClientStatus: "running" }]);
    expect(refused.status).toBe(409);
    expect(refused.text).toBe(`node ${node.id} is not allowed to update allocs while in status disconnected`);
    expect(s.log.lastIndex()).toBe(before);

    await expectParked(s, node, missedIndex);
    expect((await node.updateAllocs(clock, [{ ID: alloc.ID, ClientStatus: "running" }])).status).toBe(200);
    expect((await node.heartbeat()).status).toBe(200);
    expectReconnected(s, node, alloc);
  });

  it("Register interleaved: never changes the status, and a repeated report adds no second entry", async () => {
    const { s, clock, node, alloc, missedIndex } = await disconnectedNode();
    expect((await node.register()).status).toBe(200);
    expect(nodeRow(s, node.id).Status).toBe("disconnected");
    await expectParked(s, node, missedIndex);
    expect((await node.register()).status).toBe(200);
    expect(nodeRow(s, node.id).Status).toBe("initializing");
    expect((await node.updateAllocs(clock, [{ ID: alloc.ID, ClientStatus: "running" }])).status).toBe(200);
    expect((await node.register()).status).toBe(200);
    expect(nodeRow(s, node.id).Status).toBe("initializing");
    expect((await node.updateAllocs(clock, [{ ID: alloc.ID, ClientStatus: "running" }])).status).toBe(200);
    expect((await node.heartbeat()).status).toBe(200);
    expect((await node.register()).status).toBe(200);
    expectReconnected(s, node, alloc);
  });

  it("rebuilds the same tables from the scenario's log in a fresh store", async () => {
    const { s, clock, node, alloc } = await disconnectedNode();
    await node.heartbeat();
    await node.register();
    await node.updateAllocs(clock, [{ ID: alloc.ID, ClientStatus: "running" }]);
    await node.heartbeat();
    expectReconnected(s, node, alloc);
    const other = await readyNode(s);
    await other.rpc("Node.Deregister", { NodeID: other.id });
    await s.store.caughtUp();
    const live = s.store.hash();

    // A second store over the same log, from index 1: the replay of a fresh server.
    const fresh = new Store({
      log: s.log,
      codec: new EnvelopeCodec(allSchemas),
      projections: createProjections().all,
      logger: pino({ level: "silent" }),
    });
    await fresh.start();
    await fresh.caughtUp();
    expect(fresh.appliedIndex).toBe(s.store.appliedIndex);
    expect(fresh.hash()).toBe(live);
    await fresh.stop();
  });
});

describe("client RPC: authentication by the node's own secret", () => {
  it("answers 403 to a wrong or missing SecretID on every call and writes nothing", async () => {
    const clock = new VirtualClock();
    const s = await start({ deps: { clock } });
    const node = await readyNode(s);
    const alloc = await placeAlloc(s, { NodeID: node.id });
    const wrong = "00000000-0000-4000-8000-000000000000";
    const calls: [string, unknown][] = [
      ["Node.UpdateStatus", { NodeID: node.id, Status: "ready" }],
      ["Node.UpdateAlloc", { Alloc: [{ ID: alloc.ID, NodeID: node.id, ClientStatus: "running" }] }],
      ["Node.GetClientAllocs", { NodeID: node.id }],
      ["Alloc.GetAllocs", { AllocIDs: [alloc.ID] }],
      ["Node.Deregister", { NodeID: node.id }],
      ["Node.EmitEvents", { NodeEvents: { [node.id]: [{ Message: "x", Subsystem: "Driver" }] } }],
    ];
    const before = s.log.lastIndex();
    for (const [method, body] of calls) {
      for (const token of [wrong, null]) {
        const res = await settle(clock, node.rpc(method, body, { token }));
        expect(res.status, `${method} with ${token ?? "no"} secret`).toBe(403);
      }
      // The secret in the body is checked the same way.
      const inBody = {
        ...(body as object),
        AuthToken: wrong,
        SecretID: method === "Node.GetClientAllocs" ? wrong : undefined,
      };
      expect((await settle(clock, node.rpc(method, inBody, { token: null }))).status).toBe(403);
    }
    // Re-registering a known node with another secret is refused.
    const impostor = new TestNode(s, { id: node.id, secret: wrong });
    const reg = await impostor.register();
    expect(reg.status).toBe(403);
    expect(reg.text).toBe("node secret ID does not match. Not registering node.");
    // A new node whose header token is not the secret it registers.
    const mismatched = new TestNode(s);
    expect((await mismatched.register({}, { token: wrong })).status).toBe(403);
    expect(s.log.lastIndex()).toBe(before);
    expect(nodeRow(s, node.id).Status).toBe("ready");
  });

  it("takes the secret from the body where Nomad's clients put it, and trusts no earlier call", async () => {
    const s = await start({ deps: { clock: new VirtualClock() } });
    const node = await readyNode(s);
    const viaBody = await node.rpc(
      "Node.UpdateStatus",
      { NodeID: node.id, Status: "ready", AuthToken: node.secret },
      { token: null },
    );
    expect(viaBody.status).toBe(200);
    const allocs = await node.rpc(
      "Node.GetClientAllocs",
      { NodeID: node.id, SecretID: node.secret },
      { token: null },
    );
    expect(allocs.status).toBe(200);
    // Same connection, no secret: refused.
    expect(
      (await node.rpc("Node.UpdateStatus", { NodeID: node.id, Status: "ready" }, { token: null })).status,
    ).toBe(403);
  });

  it("refuses a secret it accepted before once the node is gone or registered again with another", async () => {
    const s = await start({ deps: { clock: new VirtualClock() } });
    const node = await readyNode(s);
    const other = await readyNode(s);
    const alloc = await placeAlloc(s, { NodeID: other.id });
    const calls = (n: TestNode): [string, unknown][] => [
      ["Node.UpdateStatus", { NodeID: n.id, Status: "ready" }],
      ["Node.GetClientAllocs", { NodeID: n.id }],
      ["Alloc.GetAllocs", { AllocIDs: [alloc.ID] }],
    ];
    // Accepted, so remembered as proven.
    for (const [method, body] of calls(node)) {
      expect((await node.rpc(method, body)).status, method).toBe(200);
      expect((await node.rpc(method, body)).status, method).toBe(200);
    }
    expect((await node.rpc("Node.Deregister", { NodeID: node.id })).status).toBe(200);
    expect((await node.rpc("Node.UpdateStatus", { NodeID: node.id, Status: "ready" })).status).toBe(404);
    expect((await node.rpc("Alloc.GetAllocs", { AllocIDs: [alloc.ID] })).status).toBe(403);

    // The same node ID comes back with a new secret: only the new one is accepted.
    const again = new TestNode(s, { id: node.id, secret: "11111111-1111-4111-8111-111111111111" });
    expect((await again.register()).status).toBe(200);
    for (const [method, body] of calls(node)) {
      expect((await node.rpc(method, body)).status, `${method}, old secret`).toBe(403);
      expect((await again.rpc(method, body)).status, `${method}, new secret`).toBe(200);
      expect((await node.rpc(method, body)).status, `${method}, old secret after the new`).toBe(403);
    }
  });

  it("refuses an update of another node's allocation", async () => {
    const clock = new VirtualClock();
    const s = await start({ deps: { clock } });
    const a = await readyNode(s);
    const b = await readyNode(s);
    const alloc = await placeAlloc(s, { NodeID: a.id });
    const before = s.log.lastIndex();
    const res = await b.updateAllocs(clock, [{ ID: alloc.ID, ClientStatus: "failed" }]);
    expect(res.status).toBe(403);
    expect(s.log.lastIndex()).toBe(before);
  });
});

describe("client RPC: requests and replies", () => {
  it("speaks msgpack when the request does", async () => {
    const s = await start({ deps: { clock: new VirtualClock() } });
    const node = new TestNode(s);
    const reg = await node.rpc("Node.Register", { Node: node.nodeBody() }, { msgpack: true });
    expect(reg.status).toBe(200);
    expect(reg.body).toMatchObject({ NodeModifyIndex: expect.any(Number), KnownLeader: true });
    const hb = await node.rpc("Node.UpdateStatus", { NodeID: node.id, Status: "ready" }, { msgpack: true });
    expect(hb.body.HeartbeatTTL as number).toBeGreaterThan(0);
    expect(nodeRow(s, node.id).Status).toBe("ready");
  });

  it("writes Alloc.GetAllocs replies into slabs used again once the replies are written, each reply whole", async () => {
    const s = await start({ deps: { clock: new VirtualClock() } });
    const node = await readyNode(s);
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) ids.push((await placeAlloc(s, { NodeID: node.id })).ID);
    const pull = async (count: number) => {
      const res = await s.call("/v1/rpc/Alloc.GetAllocs", {
        method: "PUT",
        headers: { "content-type": "application/json", "X-Nomad-Token": node.secret },
        body: JSON.stringify({ AllocIDs: ids.slice(0, count) }),
      });
      expect(res.status).toBe(200);
      return res.text();
    };
    const expected: string[] = [];
    for (let count = 1; count <= 10; count++) expected[count] = await pull(count);
    const made = replySlabsMade();
    let bytes = 0;
    // Waves of concurrent pulls, of every size: replies of one slab finish in any order.
    for (let wave = 0; wave < 20; wave++) {
      const counts = Array.from({ length: 20 }, (_, i) => 1 + ((wave * 7 + i * 3) % 10));
      const texts = await Promise.all(counts.map((count) => pull(count)));
      for (const [i, text] of texts.entries()) {
        expect(text).toBe(expected[counts[i]!]);
        bytes += text.length;
      }
    }
    // Without reuse a slab per 128 KiB replied.
    expect(bytes / (128 * 1024)).toBeGreaterThan(15);
    expect(replySlabsMade() - made).toBeLessThan(6);
  });

  it("keeps the bytes of replies a client has not read yet while other pulls reuse slabs", async () => {
    const s = await start({ deps: { clock: new VirtualClock() } });
    const node = await readyNode(s);
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) ids.push((await placeAlloc(s, { NodeID: node.id })).ID);
    // Pulls of 1 to 10 allocations: replies of every length, so a slab written
    // again too early would show in another reply's bytes.
    const bodies = Array.from({ length: 11 }, (_, count) =>
      JSON.stringify({ AllocIDs: ids.slice(0, count) }),
    );
    const pull = async (count: number) =>
      (
        await s.call("/v1/rpc/Alloc.GetAllocs", {
          method: "PUT",
          headers: { "content-type": "application/json", "X-Nomad-Token": node.secret },
          body: bodies[count]!,
        })
      ).text();
    const expected: string[] = [];
    for (let count = 1; count <= 10; count++) expected[count] = await pull(count);
    // One connection sends many pulls and reads nothing for a while: their
    // replies wait in the socket's buffers and in the server's queue.
    const { port } = s.http.server.address() as AddressInfo;
    const slow = connect(port, "127.0.0.1");
    await once(slow, "connect");
    slow.pause();
    const pipelined = 1500;
    const countOf = (i: number) => 1 + ((i * 7) % 10);
    let requests = "";
    for (let i = 0; i < pipelined; i++) {
      const body = bodies[countOf(i)]!;
      requests += `PUT /v1/rpc/Alloc.GetAllocs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Nomad-Token: ${node.secret}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
    }
    slow.write(requests);
    await new Promise((resolve) => setTimeout(resolve, 300));
    // Meanwhile other clients pull, and their replies are written, again and again.
    for (let wave = 0; wave < 10; wave++) {
      const counts = Array.from({ length: 10 }, (_, i) => 1 + ((wave * 3 + i) % 10));
      const texts = await Promise.all(counts.map((count) => pull(count)));
      for (const [i, text] of texts.entries()) expect(text).toBe(expected[counts[i]!]);
    }
    const chunks: Buffer[] = [];
    slow.on("data", (chunk: Buffer) => chunks.push(chunk));
    slow.resume();
    const replies: string[] = [];
    while (replies.length < pipelined) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      const all = Buffer.concat(chunks);
      replies.length = 0;
      let at = 0;
      for (;;) {
        const headEnd = all.indexOf("\r\n\r\n", at);
        if (headEnd < 0) break;
        const length = Number(/content-length: (\d+)/i.exec(all.subarray(at, headEnd).toString())?.[1]);
        if (headEnd + 4 + length > all.length) break;
        replies.push(all.subarray(headEnd + 4, headEnd + 4 + length).toString());
        at = headEnd + 4 + length;
      }
    }
    slow.destroy();
    for (const [i, text] of replies.entries()) expect(text, `reply ${i}`).toBe(expected[countOf(i)]);
  });

  it("refuses malformed requests with a 400 naming the problem, and unknown methods with 404", async () => {
    const s = await start({ deps: { clock: new VirtualClock() } });
    const node = await readyNode(s);
    const before = s.log.lastIndex();
    const cases: [string, unknown, RegExp][] = [
      ["Node.UpdateStatus", { NodeID: node.id, Status: 5 }, /body\.Status must be string/],
      ["Node.UpdateStatus", { NodeID: node.id, Status: "sleeping" }, /invalid status for node/],
      ["Node.UpdateStatus", { Status: "ready" }, /missing node ID/],
      ["Node.UpdateAlloc", { Alloc: [] }, /must update at least one allocation/],
      [
        "Node.UpdateAlloc",
        { Alloc: [{ ID: "x", NodeID: node.id, ClientStatus: "unknown" }] },
        /ClientStatus "unknown"/,
      ],
      [
        "Node.UpdateAlloc",
        { Alloc: [{ ID: "x", NodeID: node.id, ClientStatus: "running" }], Evals: [{}] },
        /evals field must not be set/,
      ],
      [
        "Node.Register",
        { Node: { ...node.nodeBody(), Attributes: {} } },
        /missing attributes for client registration/,
      ],
      ["Node.Register", { Node: { ...node.nodeBody(), Datacenter: "" } }, /missing datacenter/],
    ];
    for (const [method, body, message] of cases) {
      const res = await node.rpc(method, body);
      expect(res.status, `${method} ${JSON.stringify(body)}`).toBe(400);
      expect(res.text).toMatch(message);
    }
    const unknown = await node.rpc("Node.Teleport", {});
    expect(unknown.status).toBe(404);
    expect(unknown.text).toBe("rpc: can't find method Node.Teleport");
    expect((await node.rpc("Node.UpdateStatus", { NodeID: "no-such-node", Status: "ready" })).status).toBe(
      404,
    );
    expect(s.log.lastIndex()).toBe(before);
  });

  it("accepts fields of other Nomad versions and drops them, as Nomad's codec does", async () => {
    const s = await start({ deps: { clock: new VirtualClock() } });
    const node = await readyNode(s);
    const hb = await node.rpc("Node.UpdateStatus", { NodeID: node.id, Status: "ready", Bogus: 1 });
    expect(hb.status).toBe(200);
    const reg = await node.rpc("Node.Register", { Node: { ...node.nodeBody(), Flavour: "x" } });
    expect(reg.status).toBe(200);
    expect(nodeRow(s, node.id)).not.toHaveProperty("Flavour");
  });

  it("serves GetClientAllocs as a blocking query of AllocModifyIndex, which client updates do not move", async () => {
    const clock = new VirtualClock();
    const s = await start({ deps: { clock } });
    const node = await readyNode(s);
    const first = await placeAlloc(s, { NodeID: node.id });
    const pull = await node.rpc<{ Allocs: Record<string, number>; Index: number }>("Node.GetClientAllocs", {
      NodeID: node.id,
    });
    expect(pull.body.Allocs).toEqual({ [first.ID]: first.AllocModifyIndex });
    expect(pull.body.Index).toBe(first.ModifyIndex);

    const waiting = node.rpc<{ Allocs: Record<string, number>; Index: number }>("Node.GetClientAllocs", {
      NodeID: node.id,
      MinQueryIndex: pull.body.Index,
      MaxQueryTime: 30_000_000_000,
    });
    const second = await placeAlloc(s, { NodeID: node.id });
    const woke = await waiting;
    expect(woke.body.Allocs).toEqual({
      [first.ID]: first.AllocModifyIndex,
      [second.ID]: second.AllocModifyIndex,
    });
    expect(woke.body.Index).toBe(second.ModifyIndex);

    // The client's own update moves the index but not the map: a blocked call
    // goes on waiting, and answers the next server-side change.
    const blocked = node.rpc<{ Allocs: Record<string, number>; Index: number }>("Node.GetClientAllocs", {
      NodeID: node.id,
      MinQueryIndex: woke.body.Index,
      MaxQueryTime: 30_000_000_000,
    });
    await node.updateAllocs(clock, [{ ID: first.ID, ClientStatus: "running" }]);
    const after = allocRow(s, first.ID);
    expect(after.ModifyIndex).toBeGreaterThan(first.ModifyIndex);
    expect(after.AllocModifyIndex).toBe(first.AllocModifyIndex);
    const third = await placeAlloc(s, { NodeID: node.id });
    expect(Object.keys((await blocked).body.Allocs).sort()).toEqual([first.ID, second.ID, third.ID].sort());

    // Its wait running out, it answers with the index the update moved to.
    const timedOut = await node.rpc<{ Allocs: Record<string, number>; Index: number }>(
      "Node.GetClientAllocs",
      { NodeID: node.id, MinQueryIndex: third.ModifyIndex, MaxQueryTime: 50_000_000 },
    );
    expect(timedOut.body.Index).toBe(third.ModifyIndex);

    const full = await node.rpc<{ Allocs: AllocRow[] }>("Alloc.GetAllocs", {
      AllocIDs: [first.ID, second.ID],
    });
    expect(full.status).toBe(200);
    expect(full.body.Allocs.map((a) => [a.ID, a.ClientStatus])).toEqual([
      [first.ID, "running"],
      [second.ID, "pending"],
    ]);
  });

  it("takes only what a client owns from its update", async () => {
    const clock = new VirtualClock();
    const s = await start({ deps: { clock } });
    const node = await readyNode(s);
    const alloc = await placeAlloc(s, { NodeID: node.id });
    const res = await settle(
      clock,
      node.rpc("Node.UpdateAlloc", {
        Alloc: [
          {
            ID: alloc.ID,
            NodeID: node.id,
            ClientStatus: "running",
            ClientDescription: "Tasks are running",
            TaskStates: { web: { State: "running" } },
            DesiredStatus: "stop",
            JobID: "other",
            Name: "forged",
          },
        ],
      }),
    );
    expect(res.status).toBe(200);
    expect(allocRow(s, alloc.ID)).toMatchObject({
      ClientStatus: "running",
      ClientDescription: "Tasks are running",
      TaskStates: { web: { State: "running" } },
      DesiredStatus: "run",
      JobID: "web",
      Name: alloc.Name,
    });
  });
});
