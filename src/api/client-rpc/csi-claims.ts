import {
  type CSIVolumeRow,
  claimErrorCode,
  claimLookups,
  csiVolumeKey,
} from "../../../projections/csi-volumes.ts";
import {
  CSI_ACCESS_MODES,
  CSI_ATTACHMENT_MODES,
  CSI_CLAIM_GC,
  type CSIAccessMode,
  type CSIAttachmentMode,
  type CSIClaimMode,
  type CSIClaimState,
  type CSIVolumeClaim,
} from "../../../streams/csi.ts";
import { applyClaims } from "../../csi/claim-volume.ts";
import { DetachFailed } from "../../csi/detach-calls.ts";
import { claimsDraft } from "../../csi/unpublish.ts";
import { ApiError } from "../api-error.ts";
import { commit } from "../commit.ts";
import type { ApiContext } from "../context.ts";
import { authenticateNodeBySecret, presentedNodeSecret } from "./node-auth.ts";
import type { RpcHandler } from "./rpc-context.ts";
import { writeRequest } from "./schemas.ts";

/*
 * CSIVolume.Claim and CSIVolume.Unpublish as a client's csi hook sends them
 * (client/allocrunner/csi_hook.go): the node's secret authenticates the
 * call, and a node claims and releases for its own allocations only.
 */

const str = { type: "string" } as const;
const int = { type: "integer" } as const;

/** Nomad's CSIVolumeClaim as a client sends it. */
const claimBody = {
  type: "object",
  properties: {
    AllocationID: str,
    NodeID: str,
    ExternalNodeID: str,
    Mode: int,
    AccessMode: str,
    AttachmentMode: str,
    State: int,
  },
} as const;

/** Nomad's CSIVolumeClaimRequest: the claim's fields flattened, its mode under `Claim`. */
export const csiClaimBody = {
  type: "object",
  properties: {
    VolumeID: str,
    AllocationID: str,
    NodeID: str,
    ExternalNodeID: str,
    Claim: int,
    AccessMode: str,
    AttachmentMode: str,
    State: int,
    ...writeRequest,
  },
} as const;

/** Nomad's CSIVolumeUnpublishRequest. */
export const csiUnpublishBody = {
  type: "object",
  properties: { VolumeID: str, Claim: { ...claimBody, type: ["object", "null"] }, ...writeRequest },
} as const;

interface ClaimFields {
  AllocationID?: string;
  NodeID?: string;
  ExternalNodeID?: string;
  AccessMode?: string;
  AttachmentMode?: string;
  State?: number;
}

interface ClaimRequestBody extends ClaimFields {
  VolumeID?: string;
  Claim?: number;
  Namespace?: string;
  AuthToken?: string;
}

interface UnpublishRequestBody {
  VolumeID?: string;
  Claim?: (ClaimFields & { Mode?: number }) | null;
  Namespace?: string;
  AuthToken?: string;
}

/** A claim as the log keeps it, its modes and state checked against Nomad's values. */
export function claimFrom(fields: ClaimFields, mode: number | undefined, nodeID: string): CSIVolumeClaim {
  const m = mode ?? 0;
  if (!Number.isInteger(m) || m < 0 || m > CSI_CLAIM_GC) throw ApiError.badRequest(`unknown claim mode ${m}`);
  const state = fields.State ?? 0;
  if (!Number.isInteger(state) || state < 0 || state > 4)
    throw ApiError.badRequest(`unknown claim state ${state}`);
  const access = fields.AccessMode ?? "";
  if (!CSI_ACCESS_MODES.includes(access as CSIAccessMode))
    throw ApiError.badRequest(`unknown volume access mode ${JSON.stringify(access)}`);
  const attachment = fields.AttachmentMode ?? "";
  if (!CSI_ATTACHMENT_MODES.includes(attachment as CSIAttachmentMode))
    throw ApiError.badRequest(`unknown volume attachment mode ${JSON.stringify(attachment)}`);
  return {
    AllocationID: fields.AllocationID ?? "",
    NodeID: nodeID,
    ExternalNodeID: fields.ExternalNodeID ?? "",
    Mode: m as CSIClaimMode,
    AccessMode: access as CSIAccessMode,
    AttachmentMode: attachment as CSIAttachmentMode,
    State: state as CSIClaimState,
  };
}

function volumeOf(api: ApiContext, namespace: string, id: string | undefined): CSIVolumeRow {
  if (!id) throw ApiError.badRequest("missing volume ID");
  const volume = api.tables.csiVolumes.get(csiVolumeKey(namespace, id));
  if (!volume) throw ApiError.notFound(`volume not found: ${id}`);
  return volume;
}

/**
 * CSIVolume.Claim: the csi hook's claim for one of the node's allocations.
 * The node ID is backfilled from the allocation (Nomad), which must run on
 * the calling node; the ExternalNodeID, when the client sent none, from its
 * node plugin's fingerprint. Checked with the claim logic apply uses.
 */
export const claimVolumeRpc: RpcHandler = async ({ api }, request) => {
  const body = (request.body ?? {}) as ClaimRequestBody;
  const { node, identity } = authenticateNodeBySecret(api, presentedNodeSecret(request, body.AuthToken));
  const namespace = body.Namespace || "default";
  const volume = volumeOf(api, namespace, body.VolumeID);
  if (!body.AllocationID) throw ApiError.badRequest("missing allocation ID");
  const alloc = api.tables.allocs.get(body.AllocationID);
  if (!alloc) throw ApiError.notFound(`allocation missing: ${body.AllocationID}`);
  if (alloc.NodeID !== node.ID) {
    throw ApiError.forbidden(`allocation ${alloc.ID} does not run on node ${node.ID}`);
  }
  if (alloc.Namespace !== namespace)
    throw ApiError.badRequest(`allocation ${alloc.ID} is not in namespace ${namespace}`);
  const claim = claimFrom(body, body.Claim, alloc.NodeID);
  const external =
    claim.ExternalNodeID ||
    String(api.tables.csiPlugins.get(volume.PluginID)?.Nodes[node.ID]?.NodeInfo?.ID ?? "");
  const full = { ...claim, ExternalNodeID: external };
  const checked = applyClaims(
    volume,
    [full],
    claimLookups({ plugins: api.tables.csiPlugins, allocs: api.tables.allocs }, volume.PluginID),
  );
  if (typeof checked === "string") throw new ApiError(claimErrorCode(checked), checked);
  const index = await commit(api, identity, [claimsDraft(namespace, volume.ID, [full])]);
  // Nomad returns the controller's PublishContext (chronomad makes no ControllerPublish call) and the volume.
  return { PublishContext: null, Volume: null, Index: index, LastContact: 0, KnownLeader: true };
};

/**
 * CSIVolume.Unpublish: the csi hook's Postrun releases its allocation's
 * claim, through the checkpointed state machine (src/csi/unpublish.ts). It
 * answers once the claim is freed, or with the step that failed. A claim the
 * volume no longer holds has nothing left to release: answered at once,
 * nothing appended (a client that retries after a success).
 */
export const unpublishVolumeRpc: RpcHandler = async ({ api }, request) => {
  const body = (request.body ?? {}) as UnpublishRequestBody;
  const { node, identity } = authenticateNodeBySecret(api, presentedNodeSecret(request, body.AuthToken));
  const namespace = body.Namespace || "default";
  const volume = volumeOf(api, namespace, body.VolumeID);
  if (!body.Claim) throw ApiError.badRequest("missing claim");
  if (body.Claim.NodeID && body.Claim.NodeID !== node.ID) {
    throw ApiError.forbidden(`claim names node ${body.Claim.NodeID}, not the caller`);
  }
  const claim = claimFrom(body.Claim, body.Claim.Mode, node.ID);
  if (claim.AllocationID !== "") {
    const alloc = api.tables.allocs.get(claim.AllocationID);
    if (alloc && alloc.NodeID !== node.ID) {
      throw ApiError.forbidden(`allocation ${alloc.ID} does not run on node ${node.ID}`);
    }
    if (!holds(volume, claim.AllocationID)) return { Index: Math.max(1, volume.ModifyIndex) };
  }
  await runUnpublish(api, volume, claim, (drafts) => commit(api, identity, drafts));
  return { Index: Math.max(1, api.tables.csiVolumes.index) };
};

/** Whether the volume still holds a claim (current or past) of `allocID`. */
export function holds(volume: CSIVolumeRow, allocID: string): boolean {
  return (
    Object.hasOwn(volume.ReadClaims, allocID) ||
    Object.hasOwn(volume.WriteClaims, allocID) ||
    Object.hasOwn(volume.PastClaims, allocID)
  );
}

/** Runs an unpublish on this leader's volume watcher; a failed step is a 500 naming it, as Nomad's RPC error. */
export async function runUnpublish(
  api: ApiContext,
  volume: CSIVolumeRow,
  claim: CSIVolumeClaim,
  write: (drafts: Parameters<typeof commit>[2]) => Promise<number>,
): Promise<void> {
  const unpublisher = api.volumeWatcher?.unpublisher();
  if (!unpublisher) throw new ApiError(500, "volume watcher is not running: this server does not lead");
  try {
    await unpublisher.unpublish(volume.Namespace, volume.ID, claim, write);
  } catch (err) {
    if (err instanceof DetachFailed) throw new ApiError(500, err.message);
    throw err;
  }
}
