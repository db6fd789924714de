import type {
  CSIDetachAcknowledged,
  CSIDetachRequested,
  CSIDetachTimedOut,
} from "../../streams/csi-detach.ts";
import type { Envelope } from "../../streams/event-schema.ts";

const at = 1_763_800_000_000;
const server = { kind: "server", id: "server-1", epoch: 3 } as const;
const node = { kind: "node", id: "3c8e5d2a-1b4f-4a6e-9c7d-8e9f0a1b2c3d", name: "client-1" } as const;
const request = "0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b";

/** The golden detach records: the leader's call, the node's answer, and a timeout of a retry. */
export const csiDetachSamples: readonly (
  | Envelope<"CSIDetachRequested", CSIDetachRequested>
  | Envelope<"CSIDetachAcknowledged", CSIDetachAcknowledged>
  | Envelope<"CSIDetachTimedOut", CSIDetachTimedOut>
)[] = [
  {
    type: "CSIDetachRequested",
    v: 1,
    at,
    by: server,
    data: {
      Request: {
        RequestID: request,
        Namespace: "default",
        VolumeID: "mysql",
        ExternalID: "vol-0a1b2c3d",
        PluginID: "aws-ebs0",
        NodeID: node.id,
        Kind: "node",
        Claim: {
          AllocationID: "b4e61df9-b095-d64e-f241-23860da1375f",
          NodeID: node.id,
          ExternalNodeID: "i-0123456789abcdef0",
          Mode: 1,
          AccessMode: "single-node-writer",
          AttachmentMode: "file-system",
          State: 4,
        },
        Attempt: 1,
        Deadline: at + 30_000,
      },
    },
  },
  {
    type: "CSIDetachAcknowledged",
    v: 1,
    at: at + 120,
    by: node,
    data: { Namespace: "default", VolumeID: "mysql", RequestID: request, NodeID: node.id, Error: "" },
  },
  {
    type: "CSIDetachTimedOut",
    v: 1,
    at: at + 30_000,
    by: server,
    data: { Namespace: "default", VolumeID: "mysql", RequestID: "5a4b3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c1d" },
  },
];
