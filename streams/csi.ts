import { type Envelope, schemas } from "./event-schema.ts";

/**
 * CSI volumes and their claims (Nomad's nomad/structs/csi.go). Plugins have
 * no events of their own: the csi_plugins table derives from the nodes'
 * fingerprints (projections/csi-plugins.ts).
 */

/** Nomad's CSIVolumeAccessMode; "" is unknown (a volume nobody claims). */
export type CSIAccessMode =
  | ""
  | "single-node-reader-only"
  | "single-node-writer"
  | "multi-node-reader-only"
  | "multi-node-single-writer"
  | "multi-node-multi-writer";

export const CSI_ACCESS_MODES: readonly CSIAccessMode[] = [
  "",
  "single-node-reader-only",
  "single-node-writer",
  "multi-node-reader-only",
  "multi-node-single-writer",
  "multi-node-multi-writer",
];

/** Nomad's CSIVolumeAttachmentMode; "" is unknown. */
export type CSIAttachmentMode = "" | "block-device" | "file-system";

export const CSI_ATTACHMENT_MODES: readonly CSIAttachmentMode[] = ["", "block-device", "file-system"];

/** Nomad's CSIVolumeClaimMode, an int on the wire. */
export const CSI_CLAIM_READ = 0;
export const CSI_CLAIM_WRITE = 1;
/** No particular allocation: a core GC or `volume detach` claim; alone it only bumps the volume's ModifyIndex. */
export const CSI_CLAIM_GC = 2;
export type CSIClaimMode = typeof CSI_CLAIM_READ | typeof CSI_CLAIM_WRITE | typeof CSI_CLAIM_GC;

/** Nomad's CSIVolumeClaimState, an int on the wire: the unpublish checkpoints. */
export const CSI_CLAIM_STATE_TAKEN = 0;
export const CSI_CLAIM_STATE_NODE_DETACHED = 1;
export const CSI_CLAIM_STATE_CONTROLLER_DETACHED = 2;
export const CSI_CLAIM_STATE_READY_TO_FREE = 3;
export const CSI_CLAIM_STATE_UNPUBLISHING = 4;
export type CSIClaimState =
  | typeof CSI_CLAIM_STATE_TAKEN
  | typeof CSI_CLAIM_STATE_NODE_DETACHED
  | typeof CSI_CLAIM_STATE_CONTROLLER_DETACHED
  | typeof CSI_CLAIM_STATE_READY_TO_FREE
  | typeof CSI_CLAIM_STATE_UNPUBLISHING;

/** Names of the claim states, for history and logs. */
export const CSI_CLAIM_STATE_NAMES: readonly string[] = [
  "taken",
  "node-detached",
  "controller-detached",
  "ready-to-free",
  "unpublishing",
];

/** Nomad's CSIVolumeClaim. */
export interface CSIVolumeClaim {
  /** "" on a GC / detach claim. */
  readonly AllocationID: string;
  readonly NodeID: string;
  readonly ExternalNodeID: string;
  readonly Mode: CSIClaimMode;
  readonly AccessMode: CSIAccessMode;
  readonly AttachmentMode: CSIAttachmentMode;
  readonly State: CSIClaimState;
}

/** Nomad's CSIVolumeCapability. */
export interface CSIVolumeCapability {
  readonly AccessMode: CSIAccessMode;
  readonly AttachmentMode: CSIAttachmentMode;
}

/** Nomad's CSITopology. */
export interface CSITopology {
  readonly Segments: Readonly<Record<string, string>>;
}

/** Nomad's CSITopologyRequest. */
export interface CSITopologyRequest {
  readonly Required: readonly CSITopology[] | null;
  readonly Preferred: readonly CSITopology[] | null;
}

/** Nomad's CSIMountOptions. MountFlags may hold secrets: the API shows them redacted. */
export interface CSIMountOptions {
  readonly FSType: string;
  readonly MountFlags: readonly string[] | null;
}

/**
 * A volume's Secrets, sealed with the cluster's root key exactly as a
 * variable's items are (src/variables/variable-crypto.ts): base64 of
 * nonce ‖ AES-256-GCM ciphertext ‖ tag of the secrets as JSON, the KeyID's
 * bytes as additional data. The log never holds them in clear.
 */
export interface CSISealedSecrets {
  readonly Data: string;
  readonly KeyID: string;
}

/**
 * The user-settable part of Nomad's CSIVolume, as a register or create
 * writes it after the merge of seed 004 (the writer merges onto the stored
 * volume; apply checks the merge rules again). The server-owned fields
 * (claims, current modes, CreateIndex) are the projection's.
 */
export interface CSIVolumeSpec {
  readonly ID: string;
  readonly Name: string;
  readonly ExternalID: string;
  readonly Namespace: string;
  readonly PluginID: string;
  /** Copied from the plugin at register (Nomad's pluginValidateVolume). */
  readonly Provider: string;
  readonly ProviderVersion: string;
  readonly RequestedCapabilities: readonly CSIVolumeCapability[];
  readonly Topologies: readonly CSITopology[] | null;
  readonly RequestedTopologies: CSITopologyRequest | null;
  readonly MountOptions: CSIMountOptions | null;
  readonly Parameters: Readonly<Record<string, string>> | null;
  readonly Context: Readonly<Record<string, string>> | null;
  /** Bytes. */
  readonly Capacity: number;
  readonly RequestedCapacityMin: number;
  readonly RequestedCapacityMax: number;
  readonly CloneID: string;
  readonly SnapshotID: string;
  /** null when the volume has no secrets. */
  readonly SealedSecrets: CSISealedSecrets | null;
}

/** How a volume came to be recorded. */
export type CSIVolumeOp = "register" | "create";

/**
 * CSIVolume.Register (Raft message 35), and CSIVolume.Create, which
 * chronomad records the same way (it has no controller to call; see
 * docs/csi.md). All or nothing: apply refuses the record when any volume
 * breaks the rules.
 */
export interface CSIVolumesRegistered {
  readonly Op: CSIVolumeOp;
  readonly Volumes: readonly CSIVolumeSpec[];
}

/** CSIVolume.Deregister (Raft message 36). */
export interface CSIVolumesDeregistered {
  readonly Namespace: string;
  readonly VolumeIDs: readonly string[];
  readonly Force: boolean;
}

/** At most this many claims in one CSIVolumeClaimsUpdated. */
export const MAX_CLAIMS_PER_EVENT = 100;

/**
 * CSIVolume.Claim (Raft message 37) checkpoints of one volume, applied in
 * order with Nomad's Claim / claimRelease semantics (src/csi/claim-volume.ts).
 * All or nothing: a claim that fails refuses the whole record. A claim in
 * mode gc without an AllocationID changes nothing but the volume's
 * ModifyIndex (it wakes the volume watcher).
 */
export interface CSIVolumeClaimsUpdated {
  readonly Namespace: string;
  readonly VolumeID: string;
  readonly Claims: readonly CSIVolumeClaim[];
}

export type CSIEvent =
  | Envelope<"CSIVolumesRegistered", CSIVolumesRegistered>
  | Envelope<"CSIVolumesDeregistered", CSIVolumesDeregistered>
  | Envelope<"CSIVolumeClaimsUpdated", CSIVolumeClaimsUpdated>;

export const csiSchemas = schemas(
  { type: "CSIVolumesRegistered", version: 1 },
  { type: "CSIVolumesDeregistered", version: 1 },
  { type: "CSIVolumeClaimsUpdated", version: 1 },
);
