import type { Draft } from "../../src/store/writer.ts";
import {
  CSI_CLAIM_STATE_TAKEN,
  type CSIClaimMode,
  type CSIClaimState,
  type CSIVolumeClaim,
  type CSIVolumeSpec,
} from "../../streams/csi.ts";

/** A client's fingerprint of one CSI plugin (Nomad's CSIInfo). */
export function csiInfo(pluginID: string, kind: "controller" | "node", fields: Record<string, unknown> = {}) {
  return {
    PluginID: pluginID,
    AllocID: `plugin-alloc-${pluginID}`,
    Healthy: true,
    HealthDescription: "healthy",
    UpdateTime: "2025-11-22T08:26:40Z",
    Provider: "ebs.csi.aws.com",
    ProviderVersion: "1.2.0",
    RequiresControllerPlugin: true,
    RequiresTopologies: false,
    ControllerInfo:
      kind === "controller"
        ? { SupportsCreateDelete: true, SupportsAttachDetach: true, SupportsReadOnlyAttach: true }
        : null,
    NodeInfo: kind === "node" ? { ID: "i-0a1b2c", MaxVolumes: 25, RequiresNodeStageVolume: true } : null,
    ...fields,
  };
}

export function volumeSpec(id: string, fields: Partial<CSIVolumeSpec> = {}): CSIVolumeSpec {
  return {
    ID: id,
    Name: id,
    ExternalID: `ext-${id}`,
    Namespace: "default",
    PluginID: "ebs",
    Provider: "ebs.csi.aws.com",
    ProviderVersion: "1.2.0",
    RequestedCapabilities: [{ AccessMode: "single-node-writer", AttachmentMode: "file-system" }],
    Topologies: null,
    RequestedTopologies: null,
    MountOptions: null,
    Parameters: null,
    Context: null,
    Capacity: 0,
    RequestedCapacityMin: 0,
    RequestedCapacityMax: 0,
    CloneID: "",
    SnapshotID: "",
    SealedSecrets: null,
    ...fields,
  };
}

export const volumesRegistered = (...volumes: CSIVolumeSpec[]): Draft => ({
  type: "CSIVolumesRegistered",
  v: 1,
  data: { Op: "register", Volumes: volumes },
});

export const volumesDeregistered = (ids: string[], Force = false): Draft => ({
  type: "CSIVolumesDeregistered",
  v: 1,
  data: { Namespace: "default", VolumeIDs: ids, Force },
});

export function volumeClaim(
  allocID: string,
  nodeID: string,
  Mode: CSIClaimMode,
  State: CSIClaimState = CSI_CLAIM_STATE_TAKEN,
): CSIVolumeClaim {
  return {
    AllocationID: allocID,
    NodeID: nodeID,
    ExternalNodeID: "",
    Mode,
    AccessMode: "single-node-writer",
    AttachmentMode: "file-system",
    State,
  };
}

export const claimsUpdated = (volumeID: string, ...claims: CSIVolumeClaim[]): Draft => ({
  type: "CSIVolumeClaimsUpdated",
  v: 1,
  data: { Namespace: "default", VolumeID: volumeID, Claims: claims },
});
