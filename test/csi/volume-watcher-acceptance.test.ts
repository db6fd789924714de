import { afterEach, describe, expect, it } from "vitest";
import { allocRow, placeAlloc, TestNode } from "../api/node-fixtures.ts";
import { eventually } from "../cluster/eventually.ts";
import { replayStore } from "../replay-store.ts";
import { startTestServer, type TestServer } from "../server-harness.ts";
import { ackDetaches, ebsFingerprint, ebsVolume, takeClaim, volumeWatcher } from "./csi-fleet.ts";

/*
 * Issue 21's acceptance on one real server: a claim held by an allocation
 * that was garbage-collected, and a thousand volumes nobody uses.
 */

const running: TestServer[] = [];
afterEach(async () => {
  for (const s of running.splice(0)) await s.stop();
});

/** A server with two ready nodes running plugin `ebs`, the first with its controller. */
async function setup(args: string[] = []) {
  const s = await startTestServer({ args: ["--csi-volume-quiescent-timeout", "1s", ...args] });
  running.push(s);
  const nodes = [new TestNode(s), new TestNode(s)];
  for (const [i, node] of nodes.entries()) {
    expect((await node.register(ebsFingerprint(i === 0))).status).toBe(200);
    expect((await node.heartbeat()).status).toBe(200);
  }
  return { s, nodes };
}

async function json<T = Record<string, unknown>>(
  s: TestServer,
  method: string,
  path: string,
  body?: unknown,
) {
  const res = await s.call(path, {
    method,
    ...(body === undefined
      ? {}
      : { body: JSON.stringify(body), headers: { "content-type": "application/json" } }),
  });
  const text = await res.text();
  expect(res.status, `${method} ${path}: ${text}`).toBe(200);
  return (text === "" ? {} : JSON.parse(text)) as T;
}

interface VolumeView {
  WriteAllocs: Record<string, unknown>;
  ReadAllocs: Record<string, unknown>;
  PastClaims: Record<string, { AllocationID: string; NodeID: string; State: number }>;
}

interface ClaimChange {
  Field: string;
  From: { State: string } | null;
  To: { State: string; AllocationID: string } | null;
  Cause: { Event: string };
}

describe("CSI volume watcher: acceptance on a real server", () => {
  it("shows a claim of a garbage-collected allocation as a past claim on read, and the watcher frees it", async () => {
    const { s, nodes } = await setup();
    await json(s, "PUT", "/v1/volumes", { Volumes: [ebsVolume("db")] });
    const alloc = await placeAlloc(s, { NodeID: nodes[0]!.id, JobID: "gone" });
    await takeClaim(s, "db", alloc.ID, nodes[0]!.id);
    const released = volumeWatcher(s).counters.claimsReleased;

    // The client ends the allocation and never unpublishes (it died); the core GC collects the allocation.
    const ended = await nodes[0]!.rpc("Node.UpdateAlloc", {
      Alloc: [{ ID: alloc.ID, NodeID: nodes[0]!.id, ClientStatus: "complete" }],
    });
    expect(ended.status, ended.text).toBe(200);
    await eventually(() => expect(allocRow(s, alloc.ID)?.ClientStatus).toBe("complete"), 10_000);
    await json(s, "PUT", "/v1/system/gc");
    await eventually(() => expect(allocRow(s, alloc.ID)).toBeUndefined(), 10_000);

    // On read the claim is a past claim although the allocation no longer exists.
    const read = await json<VolumeView>(s, "GET", "/v1/volume/csi/db");
    expect(read.PastClaims[alloc.ID]).toMatchObject({ AllocationID: alloc.ID, NodeID: nodes[0]!.id });
    expect(read.WriteAllocs).toEqual({ [alloc.ID]: null });

    // The watcher releases it: the node detaches, then the controller, and the claim is freed.
    await eventually(
      async () => {
        await ackDetaches(nodes[0]!);
        const v = await json<VolumeView>(s, "GET", "/v1/volume/csi/db");
        expect(v.PastClaims).toEqual({});
        expect(v.WriteAllocs).toEqual({});
      },
      30_000,
      100,
    );
    expect(volumeWatcher(s).counters.claimsReleased).toBeGreaterThan(released);

    const history = await json<ClaimChange[]>(s, "GET", "/v1/volume/csi/db/history");
    const claims = history.filter((e) => e.Field === "Claim" && (e.To ?? e.From)?.State !== undefined);
    const states = claims.map((e) => e.To?.State ?? "freed");
    expect(states[0]).toBe("taken");
    expect(states).toContain("node-detached");
    expect(states.at(-1)).toBe("freed");
    expect(history.some((e) => e.Field === "Detach")).toBe(true);

    // The volume can be written again, and replay rebuilds the same tables.
    const next = await placeAlloc(s, { NodeID: nodes[1]!.id, JobID: "next" });
    await takeClaim(s, "db", next.ID, nodes[1]!.id);
    const fresh = replayStore(s.log);
    await fresh.start();
    await fresh.caughtUp();
    expect(fresh.appliedIndex).toBe(s.store.appliedIndex);
    expect(fresh.hash()).toBe(s.store.hash());
    await fresh.stop();
  }, 60_000);

  it("does no watcher work for 1,000 idle volumes once settled, and replays them into identical tables", async () => {
    const { s, nodes } = await setup();
    const ids = Array.from({ length: 1000 }, (_, i) => `idle-${String(i).padStart(4, "0")}`);
    for (let i = 0; i < ids.length; i += 100)
      await json(s, "PUT", "/v1/volumes", { Volumes: ids.slice(i, i + 100).map(ebsVolume) });
    // One volume in use and released, so the counters are seen to move when there is work.
    await json(s, "PUT", "/v1/volumes", { Volumes: [ebsVolume("busy")] });
    const alloc = await placeAlloc(s, { NodeID: nodes[0]!.id, JobID: "busy" });
    await takeClaim(s, "busy", alloc.ID, nodes[0]!.id);
    const ended = await nodes[0]!.rpc("Node.UpdateAlloc", {
      Alloc: [{ ID: alloc.ID, NodeID: nodes[0]!.id, ClientStatus: "complete" }],
    });
    expect(ended.status, ended.text).toBe(200);
    await eventually(() => expect(allocRow(s, alloc.ID)?.ClientStatus).toBe("complete"), 10_000);
    // Nomad's force GC runs the volume claim GC too, which wakes the watcher for it.
    await json(s, "PUT", "/v1/system/gc");
    const watcher = volumeWatcher(s);
    await eventually(
      async () => {
        await ackDetaches(nodes[0]!);
        const v = await json<VolumeView>(s, "GET", "/v1/volume/csi/busy");
        expect(v.PastClaims).toEqual({});
        expect(v.WriteAllocs).toEqual({});
      },
      30_000,
      100,
    );
    expect(watcher.counters.passes).toBeGreaterThan(0);
    // Settled: the busy volume's watcher has outlived its quiescent window and gone.
    await eventually(() => expect(watcher.watching).toBe(0), 20_000, 100);
    const settled = { ...watcher.counters };

    // Every idle volume changes (a register merging new Context onto it) and the cluster goes on:
    // the watcher looks at each once and does nothing for any of them.
    for (let i = 0; i < ids.length; i += 100)
      await json(s, "PUT", "/v1/volumes", {
        Volumes: ids.slice(i, i + 100).map((id) => ({ ...ebsVolume(id), Context: { touched: "yes" } })),
      });
    await expect(nodes[1]!.heartbeat()).resolves.toMatchObject({ status: 200 });
    const last = await json<{ Context: Record<string, string> }>(s, "GET", `/v1/volume/csi/${ids.at(-1)}`);
    expect(last.Context).toEqual({ touched: "yes" });
    expect(watcher.counters).toEqual(settled);
    expect(watcher.watching).toBe(0);

    const listed = await json<unknown[]>(s, "GET", "/v1/volumes?type=csi&per_page=2000");
    expect(listed).toHaveLength(1001);

    const fresh = replayStore(s.log);
    await fresh.start();
    await fresh.caughtUp();
    expect(fresh.appliedIndex).toBe(s.store.appliedIndex);
    expect(fresh.hash()).toBe(s.store.hash());
    await fresh.stop();
  }, 120_000);
});
