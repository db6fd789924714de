import { expect } from "vitest";
import { writeEvents } from "../../src/store/writer.ts";
import { CSI_CLAIM_STATE_TAKEN, CSI_CLAIM_WRITE } from "../../streams/csi.ts";
import type { RpcResult } from "../api/node-fixtures.ts";
import { csiInfo } from "../projections/csi-fixtures.ts";
import type { TestServer } from "../server-harness.ts";

/*
 * What the CSI acceptance tests share: a node that runs plugin `ebs`, the
 * volume bodies they register, the client's side of the server's detach
 * calls, and the volume watcher's counters.
 */

/** Anything that makes Nomad client RPCs as one node (TestNode, or Cluster.client). */
export interface CSIClient {
  readonly id: string;
  readonly secret: string;
  rpc<T = Record<string, unknown>>(method: string, body: unknown): Promise<RpcResult<T>>;
}

/** The fingerprint of a node running plugin `ebs`'s node plugin, and its controller when `controller`. */
export function ebsFingerprint(controller: boolean): Record<string, unknown> {
  return {
    CSIControllerPlugins: controller ? { ebs: csiInfo("ebs", "controller") } : null,
    CSINodePlugins: { ebs: csiInfo("ebs", "node") },
  };
}

/** A single-node-writer volume of plugin `ebs`, as `PUT /v1/volumes` takes it. */
export function ebsVolume(id: string): Record<string, unknown> {
  return {
    ID: id,
    Name: id,
    ExternalID: `vol-${id}`,
    PluginID: "ebs",
    RequestedCapabilities: [{ AccessMode: "single-node-writer", AttachmentMode: "file-system" }],
  };
}

interface PendingDetach {
  RequestID: string;
  Namespace: string;
  VolumeID: string;
  Kind: string;
}

/** The detach calls waiting for `node` now (a non-blocking ClientCSI.PendingDetaches). */
export async function pendingDetaches(node: CSIClient): Promise<PendingDetach[]> {
  const res = await node.rpc<{ Requests?: PendingDetach[] | null }>("ClientCSI.PendingDetaches", {
    NodeID: node.id,
    SecretID: node.secret,
  });
  expect(res.status, res.text).toBe(200);
  return res.body.Requests ?? [];
}

/** Answers every detach call waiting for `node` with success; returns how many it answered. */
export async function ackDetaches(node: CSIClient): Promise<number> {
  const pending = await pendingDetaches(node);
  for (const r of pending) {
    const res = await node.rpc("ClientCSI.AckDetach", {
      NodeID: node.id,
      SecretID: node.secret,
      Namespace: r.Namespace,
      VolumeID: r.VolumeID,
      RequestID: r.RequestID,
      Error: "",
    });
    // A call the server has just timed out or retried answers 4xx: the next one is acked.
    if (res.status !== 200 && res.status !== 409 && res.status !== 404)
      expect(res.status, res.text).toBe(200);
  }
  return pending.length;
}

/** A write claim of `allocID` on `volumeID` in state taken, as the client's CSIVolume.Claim records it. */
export async function takeClaim(s: TestServer, volumeID: string, allocID: string, nodeID: string) {
  const { outcomes } = await writeEvents(s.store, Date.now(), { kind: "node", id: nodeID }, [
    {
      type: "CSIVolumeClaimsUpdated",
      v: 1,
      data: {
        Namespace: "default",
        VolumeID: volumeID,
        Claims: [
          {
            AllocationID: allocID,
            NodeID: nodeID,
            ExternalNodeID: `ext-${nodeID}`,
            Mode: CSI_CLAIM_WRITE,
            AccessMode: "single-node-writer",
            AttachmentMode: "file-system",
            State: CSI_CLAIM_STATE_TAKEN,
          },
        ],
      },
    },
  ]);
  expect(outcomes[0]?.status, JSON.stringify(outcomes[0])).toBe("applied");
}

/** The volume watcher's counters (src/services/volume-watcher.ts), read from the leader's running service. */
export interface WatcherView {
  readonly counters: { readonly passes: number; readonly claimsReleased: number };
  readonly watching: number;
}

export function volumeWatcher(s: TestServer): WatcherView {
  const service = s.services.find((x) => x.name === "volume-watcher");
  expect(service, "the server runs the volume-watcher leader service").toBeDefined();
  return service as unknown as WatcherView;
}
