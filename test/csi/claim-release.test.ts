import { afterEach, describe, expect, it } from "vitest";
import type { AllocRow } from "../../projections/allocs.ts";
import type { CSIDetachRow } from "../../projections/csi-detach-requests.ts";
import type { CSIPluginRow } from "../../projections/csi-plugins.ts";
import { type CSIVolumeRow, csiVolumeKey } from "../../projections/csi-volumes.ts";
import { type HistoryEntry, historyKey } from "../../projections/history.ts";
import { EnvelopeCodec } from "../../src/codec/envelope-codec.ts";
import type { CSIDetachBehaviour } from "../../src/nodesim/csi-plugins.ts";
import { NodeSimulator } from "../../src/nodesim/simulator.ts";
import type { VolumeWatcher } from "../../src/services/volume-watcher.ts";
import { writeEvents } from "../../src/store/writer.ts";
import { VirtualClock } from "../../src/util/clock.ts";
import type { CSIVolumeClaimsUpdated } from "../../streams/csi.ts";
import { allSchemas } from "../../streams/index.ts";
import { eventually, FAST_DRIVER, nodesTable, placeMany, simJob, stopAllocs } from "../nodesim/fixtures.ts";
import { claimsUpdated, volumeClaim, volumeSpec, volumesRegistered } from "../projections/csi-fixtures.ts";
import { startTestServer, type TestServer } from "../server-harness.ts";

const NODES = 3;
const codec = new EnvelopeCodec(allSchemas);

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

/**
 * A real server and three simulated clients running plugin "ebs" (node and
 * controller) on one virtual clock, moved 50 ms at a time while the test
 * runs: detach deadlines and backoffs run in virtual time.
 */
async function setup(options: { detach?: CSIDetachBehaviour; args?: string[] } = {}) {
  const clock = new VirtualClock();
  const s = await startTestServer({
    args: ["--min-heartbeat-ttl", "2s", "--heartbeat-grace", "10s", ...(options.args ?? [])],
    deps: { clock },
  });
  cleanup.push(() => s.stop());
  const ticker = setInterval(() => clock.advance(50), 10);
  cleanup.push(() => clearInterval(ticker));
  const sim = new NodeSimulator({
    server: s.url,
    nodes: NODES,
    seed: "csi-release",
    initialHeartbeatStaggerMs: 500,
    driver: FAST_DRIVER,
    shape: { csiNodePlugins: ["ebs"], csiControllerPlugins: ["ebs"] },
    csiDetach: options.detach ?? "ack",
    clock,
  });
  cleanup.push(() => sim.stop());
  await sim.start();
  await eventually(
    "every node ready",
    () => nodesTable(s).size === NODES && [...nodesTable(s).all()].every((n) => n.Status === "ready"),
  );
  await eventually("plugin ebs healthy on every node", () => {
    const p = s.store.table<CSIPluginRow>("csi_plugins").get("ebs");
    return p?.NodesHealthy === NODES && p.ControllersHealthy === NODES;
  });
  const registered = await s.call("/v1/volume/csi/vol1", {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      Volumes: [
        {
          ID: "vol1",
          Name: "vol1",
          ExternalID: "ext-vol1",
          PluginID: "ebs",
          RequestedCapabilities: [{ AccessMode: "single-node-writer", AttachmentMode: "file-system" }],
        },
      ],
    }),
  });
  expect(registered.status, await registered.text()).toBe(200);
  return { s, sim, clock };
}

const volume = (s: TestServer) =>
  s.store.table<CSIVolumeRow>("csi_volumes").get(csiVolumeKey("default", "vol1"));

/** A service job of one allocation that writes volume vol1, kept off `avoid` (the scheduler checks are csi-sched's). */
function volumeJob(id: string, avoid?: string) {
  return {
    Job: {
      ID: id,
      Name: id,
      Namespace: "default",
      Type: "service",
      Priority: 50,
      Datacenters: ["dc1"],
      Update: { MaxParallel: 0 },
      // biome-ignore lint/suspicious/noTemplateCurlyInString: Nomad's interpolation syntax
      Constraints: avoid ? [{ LTarget: "${node.unique.id}", RTarget: avoid, Operand: "!=" }] : [],
      TaskGroups: [
        {
          Name: "g",
          Count: 1,
          EphemeralDisk: { SizeMB: 10 },
          Volumes: {
            data: {
              Name: "data",
              Type: "csi",
              Source: "vol1",
              ReadOnly: false,
              AccessMode: "single-node-writer",
              AttachmentMode: "file-system",
            },
          },
          Tasks: [
            {
              Name: "app",
              Driver: "mock_driver",
              Config: {},
              Resources: { CPU: 100, MemoryMB: 64 },
              LogConfig: { MaxFiles: 1, MaxFileSizeMB: 1 },
            },
          ],
        },
      ],
    },
  };
}

async function register(s: TestServer, id: string, avoid?: string): Promise<void> {
  const res = await s.call("/v1/jobs", {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(volumeJob(id, avoid)),
  });
  expect(res.status, await res.text()).toBe(200);
}

/** The claim states of vol1's claim records, in log order, for `allocID`. */
async function claimStates(s: TestServer, allocID: string): Promise<number[]> {
  const states: number[] = [];
  for await (const batch of s.log.read(1)) {
    for (const record of batch) {
      const e = codec.decode(record.bytes);
      if (e.type !== "CSIVolumeClaimsUpdated") continue;
      for (const c of (e.data as CSIVolumeClaimsUpdated).Claims)
        if (c.AllocationID === allocID) states.push(c.State);
    }
    if (batch.at(-1)!.index >= s.log.lastIndex()) break;
  }
  return states;
}

const ofAlloc = (claim: unknown, allocID: string) =>
  (claim as { AllocationID?: string }).AllocationID === allocID;

function watcherOf(s: TestServer): VolumeWatcher {
  return s.services.find((x) => x.name === "volume-watcher") as VolumeWatcher;
}

describe("CSI claims and their release, with the node simulator", () => {
  it("claims at alloc start and, when the job stops, walks taken → node-detached → controller-detached → freed; another node claims it next", async () => {
    const { s, sim } = await setup();
    await register(s, "db");
    await eventually(
      "the allocation claims vol1",
      () => Object.keys(volume(s)?.WriteClaims ?? {}).length === 1,
    );
    const [allocID] = Object.keys(volume(s)!.WriteClaims);
    const first = volume(s)!.WriteClaims[allocID!]!;
    expect(first).toMatchObject({
      Mode: 1,
      State: 0,
      AccessMode: "single-node-writer",
      ExternalNodeID: `ext-${first.NodeID}`,
    });
    expect(volume(s)!.AccessMode).toBe("single-node-writer");

    const stop = await s.call("/v1/job/db", { method: "DELETE" });
    expect(stop.status).toBe(200);
    await eventually("the claim is freed", () => {
      const v = volume(s)!;
      return Object.keys(v.WriteClaims).length === 0 && Object.keys(v.PastClaims).length === 0;
    });
    expect(volume(s)!.AccessMode).toBe("");
    // Taken, then as the client sent it (unpublishing), node-detached, controller-detached, ready-to-free.
    expect(await claimStates(s, allocID!)).toEqual([0, 4, 1, 2, 3]);

    // Every transition in the volume's history: the claim's checkpoints, and the detach calls (the node's own, then a controller's).
    const res = await s.call("/v1/volume/csi/vol1/history");
    expect(res.status).toBe(200);
    const entries = (await res.json()) as HistoryEntry[];
    const claim = entries
      .filter((e) => e.Field === "Claim" && ofAlloc(e.From ?? e.To, allocID!))
      .map((e) => (e.To as { State: string } | null)?.State ?? "freed");
    expect(claim).toEqual(["taken", "unpublishing", "node-detached", "controller-detached", "freed"]);
    const steps = entries
      .filter((e) => e.Field === "Detach")
      .map((e) => {
        const d = e.To as { Kind: string; Outcome: string; NodeID: string };
        return `${d.Kind}:${d.Outcome}`;
      });
    expect(steps).toEqual(["node:acknowledged", "controller:requested", "controller:acknowledged"]);
    const detaches = s.store.table<CSIDetachRow>("csi_detach_requests").get(csiVolumeKey("default", "vol1"))!;
    expect(detaches.Pending).toEqual({});
    const answered = sim.nodes.reduce((n, node) => n + (node.csi?.answered.acked ?? 0), 0);
    expect(answered).toBe(2);

    await register(s, "db2", first.NodeID);
    await eventually("a new job claims vol1 on another node", () => {
      const claims = Object.values(volume(s)?.WriteClaims ?? {});
      return claims.length === 1 && claims[0]!.AllocationID !== allocID;
    });
    expect(Object.values(volume(s)!.WriteClaims)[0]!.NodeID).not.toBe(first.NodeID);
    expect(watcherOf(s).releasing).toBe(0);
  });

  it("a node that never answers: each attempt times out at its deadline and is retried, all in history; the claim stays node-side until one answers", async () => {
    const { s, sim } = await setup({
      detach: "ignore",
      args: ["--csi-detach-timeout", "2s", "--csi-detach-attempts", "2", "--csi-detach-backoff", "500ms"],
    });
    await register(s, "db");
    await eventually(
      "the allocation claims vol1",
      () => Object.keys(volume(s)?.WriteClaims ?? {}).length === 1,
    );
    const [allocID] = Object.keys(volume(s)!.WriteClaims);
    await s.call("/v1/job/db", { method: "DELETE" });
    const outcomes = async () =>
      (await s.history.entriesInSlices(historyKey("csi_volume", "vol1")))
        .filter((e) => e.Field === "Detach")
        .map((e) => e.To as { Outcome: string; Attempt: number })
        .map((d) => `${d.Attempt}:${d.Outcome}`);
    await eventually(
      "two attempts timed out",
      async () => (await outcomes()).filter((o) => o.endsWith("timed-out")).length === 2,
    );
    // The first request's (created) entry holds attempt 1 as requested; then each answer and the retry.
    expect(await outcomes()).toEqual(["1:timed-out", "2:requested", "2:timed-out"]);
    // The unpublish gave up: the claim is a past claim at its last checkpoint, as received.
    await eventually("the unpublish ended", () => watcherOf(s).releasing === 0);
    expect(volume(s)!.PastClaims[allocID!]?.State).toBe(4);
    expect(sim.nodes.reduce((n, node) => n + (node.csi?.answered.ignored ?? 0), 0)).toBeGreaterThanOrEqual(2);

    // The plugin recovers; `volume detach` of that node frees the claim.
    for (const n of sim.nodes) if (n.csi) n.csi.behaviour = "ack";
    const node = volume(s)!.PastClaims[allocID!]!.NodeID;
    const detach = await s.call(`/v1/volume/csi/vol1/detach?node=${node}`, { method: "DELETE" });
    expect(detach.status, await detach.text()).toBe(200);
    expect(Object.keys(volume(s)!.PastClaims)).toEqual([]);
    expect(Object.keys(volume(s)!.WriteClaims)).toEqual([]);
  });

  it("volume detach: 400 without a node, 4xx naming a node that holds no claim, nothing appended", async () => {
    const { s } = await setup();
    const before = s.store.appliedIndex;
    const none = await s.call("/v1/volume/csi/vol1/detach", { method: "DELETE" });
    expect(none.status).toBe(400);
    expect(await none.text()).toContain("detach requires node ID");
    const other = await s.call("/v1/volume/csi/vol1/detach?node=no-such-node", { method: "DELETE" });
    expect(other.status).toBe(400);
    expect(await other.text()).toContain("node no-such-node holds no claim on volume vol1");
    const missing = await s.call("/v1/volume/csi/nope/detach?node=x", { method: "DELETE" });
    expect(missing.status).toBe(404);
    expect(s.store.appliedIndex).toBe(before);
  });

  it("a claim whose allocation was garbage collected shows as a past claim, and the GC wakes the watcher that frees it", async () => {
    const { s, sim, clock } = await setup();
    const node = sim.nodes[0]!.id;
    // An allocation whose client never unpublishes (its job declares no volume): the server claims for it.
    const [allocID] = await placeMany(s, [{ nodeID: node, job: simJob("orphan", "service") }]);
    const { outcomes } = await writeEvents(s.store, clock.now(), { kind: "server", id: "test" }, [
      claimsUpdated("vol1", volumeClaim(allocID!, node, 1)),
    ]);
    expect(outcomes[0]?.status).toBe("applied");
    await eventually(
      "the allocation runs",
      () => s.store.table<AllocRow>("allocs").get(allocID!)?.ClientStatus === "running",
    );
    await stopAllocs(s, [allocID!]);
    await eventually("the allocation is complete on its client", () => {
      const a = s.store.table<AllocRow>("allocs").get(allocID!);
      return a?.ClientStatus === "complete";
    });
    const passes = watcherOf(s).counters.passes;
    const gc = await s.call("/v1/system/gc", { method: "PUT" });
    expect(gc.status).toBe(200);
    expect(s.store.table("allocs").get(allocID!)).toBeUndefined();
    await eventually("the watcher freed the collected allocation's claim", () => {
      const v = volume(s)!;
      return Object.keys(v.WriteClaims).length === 0 && Object.keys(v.PastClaims).length === 0;
    });
    expect(watcherOf(s).counters.passes).toBeGreaterThan(passes);
    // Taken; the GC's claim (no allocation) stored its past claim as unpublishing; then the watcher's checkpoints.
    expect(await claimStates(s, allocID!)).toEqual([0, 1, 2, 3]);
  });

  it("idle volumes cost the watcher nothing once settled", async () => {
    const { s, clock } = await setup({ args: ["--csi-volume-quiescent-timeout", "1s"] });
    const specs = Array.from({ length: 50 }, (_, i) => volumeSpec(`idle-${i}`));
    const { outcomes } = await writeEvents(s.store, clock.now(), { kind: "server", id: "test" }, [
      volumesRegistered(...specs),
    ]);
    expect(outcomes[0]?.status).toBe("applied");
    const w = watcherOf(s);
    await eventually("no watcher left", () => w.watching === 0);
    const passes = w.counters.passes;
    // Other rows keep changing (heartbeats, a job's allocation, its claim of another volume): the idle volumes are not looked at,
    // and a claim taken has nothing to free, so it costs no pass either.
    await register(s, "db");
    await eventually(
      "its allocation claims vol1",
      () => Object.keys(volume(s)?.WriteClaims ?? {}).length === 1,
    );
    expect(w.counters.passes).toBe(passes);
    expect(w.watching).toBe(0);
    const metrics = await (await s.call("/v1/metrics?format=prometheus")).text();
    expect(metrics).toMatch(new RegExp(`chronomad_csi_volume_watcher_passes ${passes}\\b`));
  });
});
