import { describe, expect, it } from "vitest";
import { csiVolumeKey } from "../../projections/csi-volumes.ts";
import { ERR_CSI_VOLUME_MAX_CLAIMS } from "../../src/csi/claim-volume.ts";
import {
  CSI_CLAIM_STATE_NODE_DETACHED,
  CSI_CLAIM_STATE_READY_TO_FREE,
  CSI_CLAIM_STATE_UNPUBLISHING,
  CSI_CLAIM_WRITE,
} from "../../streams/csi.ts";
import { replayStore } from "../replay-store.ts";
import {
  claimsUpdated,
  csiInfo,
  volumeClaim,
  volumeSpec,
  volumesDeregistered,
  volumesRegistered,
} from "./csi-fixtures.ts";
import { AT, alloc, clientUpdate, memoryStore, placed, registered, statusChange } from "./memory-store.ts";

const fingerprint = (controller: boolean, healthy = true) => ({
  CSIControllerPlugins: controller ? { ebs: csiInfo("ebs", "controller", { Healthy: healthy }) } : null,
  CSINodePlugins: { ebs: csiInfo("ebs", "node", { Healthy: healthy }) },
});

/** Three ready nodes running plugin ebs (a controller on n1), and allocations a1 (n1), b1 (n2, another job). */
async function cluster() {
  const m = await memoryStore();
  const outcomes = await m.write(
    // The bootstrap creates the default namespace.
    { type: "ClusterBootstrapped", v: 1, data: { ClusterID: "c1", CreateTime: AT, ServerName: "s1" } },
    registered("n1", "aa", fingerprint(true)),
    statusChange("n1", "initializing", "ready"),
    registered("n2", "aa", fingerprint(false)),
    statusChange("n2", "initializing", "ready"),
    registered("n3", "aa", fingerprint(false)),
    statusChange("n3", "initializing", "ready"),
    placed(alloc("a1", "n1"), alloc("b1", "n2", { JobID: "other" })),
    clientUpdate("a1", "n1", "running"),
    clientUpdate("b1", "n2", "running"),
  );
  for (const o of outcomes) expect(o.status).toBe("applied");
  const volume = (id: string) => m.tables.csiVolumes.get(csiVolumeKey("default", id));
  return { ...m, volume };
}

describe("csi_plugins projection", () => {
  it("counts the controllers and node plugins the nodes fingerprint", async () => {
    const { tables, store } = await cluster();
    expect(tables.csiPlugins.get("ebs")).toMatchObject({
      ID: "ebs",
      Provider: "ebs.csi.aws.com",
      Version: "1.2.0",
      ControllerRequired: true,
      ControllersHealthy: 1,
      ControllersExpected: 1,
      NodesHealthy: 3,
      NodesExpected: 3,
    });
    expect(Object.keys(tables.csiPlugins.get("ebs")!.Nodes)).toEqual(["n1", "n2", "n3"]);
    await store.stop();
  });

  it("keeps a node's entry once unhealthy, drops it when the node stops fingerprinting or is removed, and the plugin with its last node", async () => {
    const { tables, store, write } = await cluster();
    await write(registered("n2", "aa", fingerprint(false, false)));
    expect(tables.csiPlugins.get("ebs")).toMatchObject({ NodesHealthy: 2, NodesExpected: 3 });
    await write(registered("n2", "aa", { CSINodePlugins: null }));
    expect(tables.csiPlugins.get("ebs")).toMatchObject({ NodesHealthy: 2, NodesExpected: 2 });
    await write({ type: "NodeDeregistered", v: 1, data: { NodeIDs: ["n1"] } });
    expect(tables.csiPlugins.get("ebs")).toMatchObject({
      ControllersHealthy: 0,
      ControllersExpected: 0,
      NodesHealthy: 1,
    });
    await write({ type: "NodeDeregistered", v: 1, data: { NodeIDs: ["n3"] } });
    expect(tables.csiPlugins.get("ebs")).toBeUndefined();
    await store.stop();
  });

  it("creates no plugin from an unhealthy fingerprint alone", async () => {
    const m = await memoryStore();
    await m.write(registered("n9", "aa", fingerprint(true, false)));
    expect(m.tables.csiPlugins.get("ebs")).toBeUndefined();
    await m.store.stop();
  });
});

describe("csi_volumes projection", () => {
  it("claims, checkpoints and frees a single-node-writer volume, refusing a second writer", async () => {
    const { write, volume, store } = await cluster();
    expect((await write(volumesRegistered(volumeSpec("v1"))))[0]?.status).toBe("applied");
    const created = volume("v1")!;
    const [taken] = await write(claimsUpdated("v1", volumeClaim("a1", "n1", CSI_CLAIM_WRITE)));
    expect(taken?.status).toBe("applied");
    expect(volume("v1")).toMatchObject({
      AccessMode: "single-node-writer",
      WriteClaims: { a1: { NodeID: "n1" } },
    });
    const [second] = await write(claimsUpdated("v1", volumeClaim("b1", "n2", CSI_CLAIM_WRITE)));
    expect(second).toMatchObject({ status: "rejected", code: 409, reason: ERR_CSI_VOLUME_MAX_CLAIMS });
    await write(
      claimsUpdated(
        "v1",
        volumeClaim("a1", "n1", CSI_CLAIM_WRITE, CSI_CLAIM_STATE_UNPUBLISHING),
        volumeClaim("a1", "n1", CSI_CLAIM_WRITE, CSI_CLAIM_STATE_NODE_DETACHED),
      ),
    );
    expect(volume("v1")?.PastClaims.a1?.State).toBe(CSI_CLAIM_STATE_NODE_DETACHED);
    await write(claimsUpdated("v1", volumeClaim("a1", "n1", CSI_CLAIM_WRITE, CSI_CLAIM_STATE_READY_TO_FREE)));
    expect(volume("v1")).toMatchObject({ AccessMode: "", WriteClaims: {}, PastClaims: {} });
    const [retaken] = await write(claimsUpdated("v1", volumeClaim("b1", "n2", CSI_CLAIM_WRITE)));
    expect(retaken?.status).toBe("applied");
    expect(volume("v1")?.CreateIndex).toBe(created.CreateIndex);
    await store.stop();
  });

  it("refuses to update a volume in use or change its identity, and keeps CreateIndex and claims on update", async () => {
    const { write, volume, store } = await cluster();
    await write(volumesRegistered(volumeSpec("v1")));
    const [identity] = await write(volumesRegistered(volumeSpec("v1", { ExternalID: "other" })));
    expect(identity).toMatchObject({
      status: "rejected",
      code: 400,
      reason: "volume identity cannot be updated: v1",
    });
    const [updated] = await write(volumesRegistered(volumeSpec("v1", { Context: { a: "b" } })));
    expect(updated?.status).toBe("applied");
    expect(volume("v1")).toMatchObject({ Context: { a: "b" }, CreateIndex: volume("v1")!.CreateIndex });
    await write(claimsUpdated("v1", volumeClaim("a1", "n1", CSI_CLAIM_WRITE)));
    const [inUse] = await write(volumesRegistered(volumeSpec("v1", { Context: null })));
    expect(inUse).toMatchObject({
      status: "rejected",
      code: 409,
      reason: "volume cannot be updated while in use",
    });
    const [ns] = await write(volumesRegistered(volumeSpec("v2", { Namespace: "nope" })));
    expect(ns).toMatchObject({ status: "rejected", reason: "volume v2 is in nonexistent namespace nope" });
    await store.stop();
  });

  it("deregisters an unused volume; in use only with force and once every claiming allocation is terminal or gone", async () => {
    const { write, volume, store } = await cluster();
    await write(volumesRegistered(volumeSpec("v1")));
    await write(claimsUpdated("v1", volumeClaim("a1", "n1", CSI_CLAIM_WRITE)));
    const [plain] = await write(volumesDeregistered(["v1"]));
    expect(plain).toMatchObject({ status: "rejected", code: 409, reason: "volume in use: v1" });
    const [live] = await write(volumesDeregistered(["v1"], true));
    expect(live).toMatchObject({ status: "rejected", code: 409 });
    await write(clientUpdate("a1", "n1", "complete"));
    const [forced] = await write(volumesDeregistered(["v1"], true));
    expect(forced?.status).toBe("applied");
    expect(volume("v1")).toBeUndefined();
    const [missing] = await write(volumesDeregistered(["v1"]));
    expect(missing).toMatchObject({ status: "rejected", code: 404, reason: "volume not found: v1" });
    await store.stop();
  });

  it("records a past claim for a terminal allocation when any claim record applies", async () => {
    const { write, volume, store } = await cluster();
    await write(
      volumesRegistered(
        volumeSpec("v1", {
          RequestedCapabilities: [{ AccessMode: "multi-node-multi-writer", AttachmentMode: "file-system" }],
        }),
      ),
    );
    await write(claimsUpdated("v1", volumeClaim("a1", "n1", CSI_CLAIM_WRITE)));
    await write(clientUpdate("a1", "n1", "failed"));
    const before = volume("v1")!.ModifyIndex;
    await write(claimsUpdated("v1", { ...volumeClaim("", "", 2, CSI_CLAIM_STATE_UNPUBLISHING) }));
    expect(volume("v1")!.ModifyIndex).toBeGreaterThan(before);
    expect(volume("v1")?.PastClaims.a1).toMatchObject({ NodeID: "n1", State: CSI_CLAIM_STATE_UNPUBLISHING });
    await store.stop();
  });

  it("replays the same log into the same tables", async () => {
    const { write, log, store, tables } = await cluster();
    await write(volumesRegistered(volumeSpec("v1"), volumeSpec("v2")));
    await write(claimsUpdated("v1", volumeClaim("a1", "n1", CSI_CLAIM_WRITE)));
    await write(claimsUpdated("v1", volumeClaim("b1", "n2", CSI_CLAIM_WRITE)));
    await write(volumesDeregistered(["v2"]));
    await write(registered("n2", "aa", fingerprint(false, false)));
    const fresh = replayStore(log);
    await fresh.start();
    expect(fresh.hash()).toBe(store.hash());
    expect([...fresh.table("csi_volumes").all()]).toHaveLength(1);
    expect([...fresh.table("csi_plugins").all()]).toEqual([tables.csiPlugins.get("ebs")]);
    await fresh.stop();
    await store.stop();
  });
});
