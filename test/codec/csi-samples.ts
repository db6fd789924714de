import type {
  CSIVolumeClaimsUpdated,
  CSIVolumesDeregistered,
  CSIVolumesRegistered,
} from "../../streams/csi.ts";
import { CSI_CLAIM_STATE_TAKEN, CSI_CLAIM_STATE_UNPUBLISHING, CSI_CLAIM_WRITE } from "../../streams/csi.ts";
import type { Envelope } from "../../streams/event-schema.ts";

const at = 1_763_800_000_000;
const operator = { kind: "token", id: "5f1c4b7e-2a3d-4e8f-9b0c-1d2e3f4a5b6c", name: "ops" } as const;
const node = { kind: "node", id: "3c8e5d2a-1b4f-4a6e-9c7d-8e9f0a1b2c3d", name: "client-1" } as const;
const allocID = "b4e61df9-b095-d64e-f241-23860da1375f";

/** The golden CSI records: a register with sealed secrets, a write claim and its release checkpoint, a forced deregister. */
export const csiSamples: readonly (
  | Envelope<"CSIVolumesRegistered", CSIVolumesRegistered>
  | Envelope<"CSIVolumesDeregistered", CSIVolumesDeregistered>
  | Envelope<"CSIVolumeClaimsUpdated", CSIVolumeClaimsUpdated>
)[] = [
  {
    type: "CSIVolumesRegistered",
    v: 1,
    at,
    by: operator,
    data: {
      Op: "register",
      Volumes: [
        {
          ID: "mysql",
          Name: "mysql",
          ExternalID: "vol-0b756b75620d63af5",
          Namespace: "default",
          PluginID: "aws-ebs0",
          Provider: "ebs.csi.aws.com",
          ProviderVersion: "1.2.0",
          RequestedCapabilities: [{ AccessMode: "single-node-writer", AttachmentMode: "file-system" }],
          Topologies: [{ Segments: { "topology.ebs.csi.aws.com/zone": "us-east-1b" } }],
          RequestedTopologies: {
            Required: [{ Segments: { "topology.ebs.csi.aws.com/zone": "us-east-1b" } }],
            Preferred: null,
          },
          MountOptions: { FSType: "ext4", MountFlags: ["noatime"] },
          Parameters: { type: "gp3" },
          Context: null,
          Capacity: 10_737_418_240,
          RequestedCapacityMin: 10_737_418_240,
          RequestedCapacityMax: 21_474_836_480,
          CloneID: "",
          SnapshotID: "",
          SealedSecrets: {
            Data: "q83vEjRWeJq8ABEiM0RVZneImaq7zN3u/wARIjNEVWZ3iJmqu8zd",
            KeyID: "6f0e3c1a-9b2d-4e5f-8a7b-0c1d2e3f4a5b",
          },
        },
      ],
    },
  },
  {
    type: "CSIVolumeClaimsUpdated",
    v: 1,
    at,
    by: node,
    data: {
      Namespace: "default",
      VolumeID: "mysql",
      Claims: [
        {
          AllocationID: allocID,
          NodeID: node.id,
          ExternalNodeID: "i-0a1b2c3d4e5f",
          Mode: CSI_CLAIM_WRITE,
          AccessMode: "single-node-writer",
          AttachmentMode: "file-system",
          State: CSI_CLAIM_STATE_TAKEN,
        },
        {
          AllocationID: allocID,
          NodeID: node.id,
          ExternalNodeID: "i-0a1b2c3d4e5f",
          Mode: CSI_CLAIM_WRITE,
          AccessMode: "single-node-writer",
          AttachmentMode: "file-system",
          State: CSI_CLAIM_STATE_UNPUBLISHING,
        },
      ],
    },
  },
  {
    type: "CSIVolumesDeregistered",
    v: 1,
    at,
    by: operator,
    data: { Namespace: "default", VolumeIDs: ["mysql"], Force: true },
  },
];
