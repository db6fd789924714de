import { describe, expect, it } from "vitest";
import { pendingFor } from "../../projections/csi-detach-requests.ts";
import { csiVolumeKey } from "../../projections/csi-volumes.ts";
import { DetachCalls } from "../../src/csi/detach-calls.ts";
import { DetachDeadlines } from "../../src/csi/detach-deadlines.ts";
import { Unpublisher } from "../../src/csi/unpublish.ts";
import type { Draft } from "../../src/store/writer.ts";
import { VirtualClock } from "../../src/util/clock.ts";
import type { CSIVolumeClaimsUpdated } from "../../streams/csi.ts";
import {
  claimsUpdated,
  csiInfo,
  volumeClaim,
  volumeSpec,
  volumesRegistered,
} from "../projections/csi-fixtures.ts";
import {
  AT,
  alloc,
  clientUpdate,
  memoryStore,
  placed,
  registered,
  statusChange,
} from "../projections/memory-store.ts";

/**
 * A volume of plugin ebs (node plugin on n1 and n2, controller on n2) with
 * `count` write claims of allocations of n1, and clients that answer every
 * detach call at once.
 */
async function setup(count: number, options: { liveOnNode?: boolean } = {}) {
  const m = await memoryStore();
  const clock = new VirtualClock();
  const check = (outcomes: readonly { status: string }[]) => {
    for (const o of outcomes) expect(o, JSON.stringify(o)).toMatchObject({ status: "applied" });
  };
  const plugins = (controller: boolean) => ({
    CSINodePlugins: { ebs: csiInfo("ebs", "node") },
    CSIControllerPlugins: controller ? { ebs: csiInfo("ebs", "controller") } : null,
  });
  check(
    await m.write(
      // The bootstrap creates the default namespace.
      { type: "ClusterBootstrapped", v: 1, data: { ClusterID: "c1", CreateTime: AT, ServerName: "s1" } },
      registered("n1", "aa", plugins(false)),
      statusChange("n1", "initializing", "ready"),
      registered("n2", "bb", plugins(true)),
      statusChange("n2", "initializing", "ready"),
      volumesRegistered(
        volumeSpec("vol1", {
          RequestedCapabilities: [{ AccessMode: "multi-node-multi-writer", AttachmentMode: "file-system" }],
        }),
      ),
    ),
  );
  const ids = Array.from({ length: count }, (_, i) => `a${i}`);
  check(await m.write(placed(...ids.map((id) => alloc(id, "n1")))));
  const claims = ids.map((id) => ({
    ...volumeClaim(id, "n1", 1),
    AccessMode: "multi-node-multi-writer" as const,
  }));
  for (let i = 0; i < claims.length; i += 100)
    check(await m.write(claimsUpdated("vol1", ...claims.slice(i, i + 100))));
  const live = options.liveOnNode ? ids.slice(-1) : [];
  check(
    await m.write(...ids.filter((id) => !live.includes(id)).map((id) => clientUpdate(id, "n1", "complete"))),
  );
  const write = async (drafts: readonly Draft[]) => {
    const outcomes = await m.write(...drafts);
    for (const o of outcomes) if (o.status === "rejected") throw new Error(`${o.code} ${o.reason}`);
    return outcomes.at(-1)!.index;
  };
  const calls = new DetachCalls({
    change$: m.store.change$,
    clock,
    write,
    policy: { timeoutMs: 30_000, attempts: 1, backoffMs: 0 },
  });
  const deadlines = new DetachDeadlines({
    change$: m.store.change$,
    detaches: m.tables.csiDetachRequests,
    clock,
    write,
  });
  deadlines.start();
  // The clients: every pending call is answered at once, by the node it names.
  const asked: string[] = [];
  const answering = m.store.applied$.subscribe(() => {
    for (const node of ["n1", "n2"]) {
      for (const r of pendingFor(m.tables.csiDetachRequests, node)) {
        if (asked.includes(r.RequestID)) continue;
        asked.push(r.RequestID);
        void m.write({
          type: "CSIDetachAcknowledged",
          v: 1,
          data: { Namespace: "default", VolumeID: "vol1", RequestID: r.RequestID, NodeID: node, Error: "" },
        });
      }
    }
  });
  const claimRecords: CSIVolumeClaimsUpdated[] = [];
  const recording = m.store.change$.subscribe((c) => {
    if (c.table === "csi_volumes" && c.event === "CSIVolumeClaimsUpdated")
      claimRecords.push(c.envelope.data as CSIVolumeClaimsUpdated);
  });
  const unpublisher = new Unpublisher(m.tables, calls);
  const volume = () => m.tables.csiVolumes.get(csiVolumeKey("default", "vol1"))!;
  const stop = () => {
    answering.unsubscribe();
    recording.unsubscribe();
    deadlines.stop();
  };
  return { ...m, unpublisher, volume, claimRecords, asked, write, stop, claims };
}

describe("Unpublisher: the checkpointed release of claims", () => {
  it("releases 150 past claims of one volume with every checkpoint in records of at most 100 claims", async () => {
    const t = await setup(150);
    const past = t.claims.map((c) => ({ ...c, State: 4 as const }));
    await t.unpublisher.unpublishMany("default", "vol1", past, t.write);
    expect(t.volume().WriteClaims).toEqual({});
    expect(t.volume().PastClaims).toEqual({});
    expect(t.volume().AccessMode).toBe("");
    // Node-detached, controller-detached, ready-to-free: 150 claims each, as 100 + 50.
    expect(t.claimRecords.map((r) => [r.Claims.length, r.Claims[0]!.State])).toEqual([
      [100, 1],
      [50, 1],
      [100, 2],
      [50, 2],
      [100, 3],
      [50, 3],
    ]);
    // One node call per claim on n1, one controller call per claim on n2.
    const kinds = t.tables.csiDetachRequests.get(csiVolumeKey("default", "vol1"))!;
    expect(kinds.Pending).toEqual({});
    expect(t.asked).toHaveLength(300);
    expect(t.unpublisher.active).toBe(0);
    t.stop();
  });

  it("a client's unpublish: checkpointed as received, then each step; a second caller waits for the first", async () => {
    const t = await setup(2);
    const claim = { ...t.claims[0]!, State: 4 as const };
    const first = t.unpublisher.unpublish("default", "vol1", claim, t.write);
    const second = t.unpublisher.unpublish("default", "vol1", claim, t.write);
    expect(second).toBe(first);
    await first;
    expect(t.claimRecords.map((r) => r.Claims.map((c) => `${c.AllocationID}:${c.State}`))).toEqual([
      ["a0:4"],
      ["a0:1"],
      ["a0:2"],
      ["a0:3"],
    ]);
    expect(Object.keys(t.volume().WriteClaims)).toEqual(["a1"]);
    t.stop();
  });

  it("stops at node-detached while another live allocation of the node still claims the volume", async () => {
    const t = await setup(2, { liveOnNode: true });
    await t.unpublisher.unpublish("default", "vol1", { ...t.claims[0]!, State: 4 }, t.write);
    expect(t.volume().PastClaims.a0?.State).toBe(1);
    expect(t.claimRecords.map((r) => r.Claims[0]!.State)).toEqual([4, 1]);
    t.stop();
  });

  it("a detach of a node (no allocation) releases every past claim of that node", async () => {
    const t = await setup(3);
    await t.unpublisher.unpublish(
      "default",
      "vol1",
      { ...volumeClaim("", "n1", 2), AccessMode: "", AttachmentMode: "", State: 4 },
      t.write,
    );
    expect(t.volume().WriteClaims).toEqual({});
    expect(t.volume().PastClaims).toEqual({});
    // The gc claim's own checkpoint, then the three claims together at each step.
    expect(t.claimRecords.map((r) => r.Claims.length)).toEqual([1, 3, 3, 3]);
    t.stop();
  });
});
