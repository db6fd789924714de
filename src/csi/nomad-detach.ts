import type { CSIDetachRequest } from "../../streams/csi-detach.ts";
import { nodeRpc } from "../rpc/client-calls.ts";
import type { NodeSessions } from "../rpc/node-sessions.ts";

/**
 * A detach call to a Nomad client agent that holds a session on this
 * server's RPC port, as Nomad's leader makes it (nomad/csi_endpoint.go
 * nodeUnpublishVolumeImpl / controllerUnpublishVolume): ClientCSI.NodeDetachVolume
 * or ClientCSI.ControllerDetachVolume on a new stream of the session.
 * Resolves with the client's error text, "" on success; undefined when
 * this server holds no session to the node (the client answers through its
 * long poll then). Volume secrets are not sent: the log holds them sealed
 * and no plugin simulated or real here needs them for a detach.
 */
export function nomadDetachCall(sessions: NodeSessions) {
  return (request: CSIDetachRequest): Promise<string> | undefined => {
    const session = sessions.get(request.NodeID);
    if (!session) return undefined;
    const claim = request.Claim;
    const [method, args] =
      request.Kind === "node"
        ? [
            "ClientCSI.NodeDetachVolume",
            {
              PluginID: request.PluginID,
              VolumeID: request.VolumeID,
              ExternalID: request.ExternalID,
              AllocID: claim.AllocationID,
              NodeID: claim.NodeID,
              AttachmentMode: claim.AttachmentMode,
              AccessMode: claim.AccessMode,
              ReadOnly: claim.Mode === 0,
            },
          ]
        : [
            "ClientCSI.ControllerDetachVolume",
            {
              VolumeID: request.ExternalID,
              ClientCSINodeID: claim.ExternalNodeID,
              Secrets: null,
              ControllerNodeID: request.NodeID,
              PluginID: request.PluginID,
            },
          ];
    return nodeRpc(session, method, args).then(
      () => "",
      (err: Error) => err.message || `${method} failed`,
    );
  };
}
