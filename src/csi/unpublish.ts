import type { AllocRow } from "../../projections/allocs.ts";
import type { CSIPluginRow } from "../../projections/csi-plugins.ts";
import { type CSIVolumeRow, claimAlloc, csiVolumeKey } from "../../projections/csi-volumes.ts";
import type { NodeRow } from "../../projections/nodes.ts";
import { isTerminalAlloc } from "../../streams/allocs.ts";
import {
  CSI_CLAIM_STATE_TAKEN,
  CSI_CLAIM_STATE_UNPUBLISHING,
  type CSIVolumeClaim,
  MAX_CLAIMS_PER_EVENT,
} from "../../streams/csi.ts";
import { ApiError } from "../api/api-error.ts";
import type { Table } from "../store/table.ts";
import type { Draft } from "../store/writer.ts";
import { withPastClaims } from "./claim-volume.ts";
import type { DetachCalls } from "./detach-calls.ts";
import { advance, type ControllerNeeds, nextStep, type UnpublishStep } from "./unpublish-steps.ts";

export interface UnpublishTables {
  readonly csiVolumes: Table<CSIVolumeRow>;
  readonly csiPlugins: Table<CSIPluginRow>;
  readonly nodes: Table<NodeRow>;
  readonly allocs: Table<AllocRow>;
}

/** Appends as the caller and resolves once applied; rejects (an ApiError) when apply refused the record. */
export type CheckpointWrite = (drafts: readonly Draft[]) => Promise<number>;

/**
 * Nomad's CSIVolume.Unpublish (nomad/csi_endpoint.go), on the leader: the
 * claim is checkpointed as received, then each step of
 * src/csi/unpublish-steps.ts is done and checkpointed (one
 * CSIVolumeClaimsUpdated per at most 100 claims of the volume). A claim
 * without an allocation (`volume detach`, the core GC) unpublishes every
 * past claim of its node. A step that fails stops the claim at its last
 * checkpoint; the error is the caller's (the client's hook logs it, the
 * watcher tries again when the volume next changes).
 *
 * One unpublish of a claim at a time: a second caller for a claim already
 * under way (the watcher woken by the client's own first checkpoint) waits
 * for the first instead of asking the clients twice.
 */
export class Unpublisher {
  private readonly inFlight = new Map<string, Promise<void>>();

  constructor(
    private readonly tables: UnpublishTables,
    private readonly calls: DetachCalls,
  ) {}

  /** How many unpublishes are under way: the watcher's metrics and tests. */
  get active(): number {
    return this.inFlight.size;
  }

  unpublish(
    namespace: string,
    volumeID: string,
    claim: CSIVolumeClaim,
    write: CheckpointWrite,
  ): Promise<void> {
    const key = `${csiVolumeKey(namespace, volumeID)}\u0000${claim.AllocationID || `node:${claim.NodeID}`}`;
    const running = this.inFlight.get(key);
    if (running) return running;
    const done = this.run(namespace, volumeID, claim, write).finally(() => this.inFlight.delete(key));
    this.inFlight.set(key, done);
    return done;
  }

  /** Several past claims of one volume at once (the watcher's reap), batched at every checkpoint. */
  async unpublishMany(
    namespace: string,
    volumeID: string,
    claims: readonly CSIVolumeClaim[],
    write: CheckpointWrite,
    /** Told how many of `claims` this call releases (the others are under way already). */
    started?: (count: number) => void,
  ): Promise<void> {
    const mine = claims.filter(
      (c) => !this.inFlight.has(`${csiVolumeKey(namespace, volumeID)}\u0000${c.AllocationID}`),
    );
    started?.(mine.length);
    if (mine.length === 0) return;
    const done = this.walk(namespace, volumeID, mine, write);
    for (const c of mine)
      this.inFlight.set(`${csiVolumeKey(namespace, volumeID)}\u0000${c.AllocationID}`, done);
    try {
      await done;
    } finally {
      for (const c of mine)
        this.inFlight.delete(`${csiVolumeKey(namespace, volumeID)}\u0000${c.AllocationID}`);
    }
  }

  private async run(
    namespace: string,
    volumeID: string,
    claim: CSIVolumeClaim,
    write: CheckpointWrite,
  ): Promise<void> {
    this.volume(namespace, volumeID);
    // Nomad's client sends its claim as unpublishing; a taken claim would be a new claim, not a release.
    const received: CSIVolumeClaim =
      claim.State === CSI_CLAIM_STATE_TAKEN ? { ...claim, State: CSI_CLAIM_STATE_UNPUBLISHING } : claim;
    // Checkpoint as received. For a claim without an allocation this only
    // bumps the volume's index, and stores the past claims resolved on read.
    await write([claimsDraft(namespace, volumeID, [received])]);
    if (received.AllocationID !== "") return this.walk(namespace, volumeID, [received], write);
    const volume = this.volume(namespace, volumeID);
    const past = Object.values(this.denormalized(volume).PastClaims).filter((c) => c.NodeID === claim.NodeID);
    return this.walk(namespace, volumeID, past, write);
  }

  /** Every step of every claim until each is freed or stopped; the first failure is thrown at the end. */
  private async walk(
    namespace: string,
    volumeID: string,
    start: readonly CSIVolumeClaim[],
    write: CheckpointWrite,
  ): Promise<void> {
    let claims = start;
    let failure: Error | undefined;
    while (claims.length > 0) {
      const volume = this.volume(namespace, volumeID);
      const needs = this.controllerNeeds(volume);
      const results = await Promise.all(
        claims.map(async (c) => {
          const step = nextStep(c.State, needs);
          try {
            const done = await this.perform(step, volume, c);
            return done ? { claim: advance(c, step), step } : undefined;
          } catch (err) {
            failure ??= err as Error;
            return undefined;
          }
        }),
      );
      const advanced = results.filter((r) => r !== undefined);
      if (advanced.length === 0) break;
      const drafts: Draft[] = [];
      const next = advanced.map((r) => r.claim);
      for (let i = 0; i < next.length; i += MAX_CLAIMS_PER_EVENT) {
        drafts.push(claimsDraft(namespace, volumeID, next.slice(i, i + MAX_CLAIMS_PER_EVENT)));
      }
      await write(drafts);
      claims = advanced.filter((r) => r.step !== "release").map((r) => r.claim);
    }
    if (failure) throw failure;
  }

  /** Does `step` for one claim; false when it must wait (another live allocation of its node still claims the volume). */
  private async perform(step: UnpublishStep, volume: CSIVolumeRow, claim: CSIVolumeClaim): Promise<boolean> {
    if (step === "release") return true;
    if (step === "node-detach") {
      const node = this.tables.nodes.get(claim.NodeID);
      // Nomad: a node that is gone or down has nothing mounted to unpublish; nor has a claim of no known mode.
      if (!node || node.Status === "down" || claim.AccessMode === "") return true;
      await this.calls.call(this.target(volume, claim, "node", claim.NodeID));
      return true;
    }
    // Nomad detaches from the node only once no live allocation there still uses the volume.
    if (this.stillUsedOnNode(volume, claim)) return false;
    const controller = this.controllerNode(volume);
    if (!controller) {
      throw new ApiError(
        500,
        `no healthy controller of plugin ${volume.PluginID} to detach volume ${volume.ID}`,
      );
    }
    const withExternal = {
      ...claim,
      ExternalNodeID: claim.ExternalNodeID || this.externalNodeID(volume, claim.NodeID),
    };
    await this.calls.call(this.target(volume, withExternal, "controller", controller));
    return true;
  }

  private target(volume: CSIVolumeRow, claim: CSIVolumeClaim, kind: "node" | "controller", nodeID: string) {
    return {
      Namespace: volume.Namespace,
      VolumeID: volume.ID,
      ExternalID: volume.ExternalID || volume.ID,
      PluginID: volume.PluginID,
      NodeID: nodeID,
      Kind: kind,
      Claim: claim,
    };
  }

  private volume(namespace: string, volumeID: string): CSIVolumeRow {
    const v = this.tables.csiVolumes.get(csiVolumeKey(namespace, volumeID));
    if (!v) throw ApiError.notFound(`volume not found: ${volumeID}`);
    return v;
  }

  private denormalized(volume: CSIVolumeRow): CSIVolumeRow {
    return withPastClaims(volume, (id) => claimAlloc(this.tables.allocs.get(id)));
  }

  /** Nomad: a controller step only when the plugin requires one and its controllers can attach and detach. */
  private controllerNeeds(volume: CSIVolumeRow): ControllerNeeds {
    const plugin = this.tables.csiPlugins.get(volume.PluginID);
    if (!plugin?.ControllerRequired) return { controllerDetach: false };
    const infos = Object.values(plugin.Controllers);
    // No controller fingerprinted yet: the step is still owed (it fails until one is healthy).
    if (infos.length === 0) return { controllerDetach: true };
    return { controllerDetach: infos.some((i) => i.ControllerInfo?.SupportsAttachDetach === true) };
  }

  /** The node of the first healthy controller, in node ID order (Nomad picks any). */
  private controllerNode(volume: CSIVolumeRow): string | undefined {
    const plugin = this.tables.csiPlugins.get(volume.PluginID);
    const healthy = Object.entries(plugin?.Controllers ?? {})
      .filter(([nodeID, info]) => info.Healthy && this.tables.nodes.get(nodeID)?.Status === "ready")
      .map(([nodeID]) => nodeID)
      .sort();
    return healthy[0];
  }

  private stillUsedOnNode(volume: CSIVolumeRow, claim: CSIVolumeClaim): boolean {
    for (const claims of [volume.ReadClaims, volume.WriteClaims]) {
      for (const [id, c] of Object.entries(claims)) {
        if (id === claim.AllocationID || c.NodeID !== claim.NodeID) continue;
        const alloc = this.tables.allocs.get(id);
        if (alloc && !isTerminalAlloc(alloc)) return true;
      }
    }
    return false;
  }

  /** Nomad: the claim's ExternalNodeID, else the node plugin's NodeInfo.ID on that node. */
  private externalNodeID(volume: CSIVolumeRow, nodeID: string): string {
    const info = this.tables.csiPlugins.get(volume.PluginID)?.Nodes[nodeID];
    const id = info?.NodeInfo?.ID;
    return typeof id === "string" ? id : "";
  }
}

export function claimsDraft(namespace: string, volumeID: string, claims: readonly CSIVolumeClaim[]): Draft {
  return {
    type: "CSIVolumeClaimsUpdated",
    v: 1,
    data: { Namespace: namespace, VolumeID: volumeID, Claims: claims },
  };
}
