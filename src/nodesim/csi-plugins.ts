/*
 * The node simulator's CSI side: plugin fingerprints as a Nomad client
 * reports them (Node.CSIControllerPlugins / CSINodePlugins, Nomad's
 * structs.CSIInfo), and what the simulated plugins do when the server asks
 * for a detach.
 */

/** What a simulated node's CSI plugins do with a detach call (the server's ClientCSI.*DetachVolume). */
export type CSIDetachBehaviour = "ack" | "fail" | "ignore";

export const CSI_DETACH_BEHAVIOURS: readonly CSIDetachBehaviour[] = ["ack", "fail", "ignore"];

/** The error text a failing simulated plugin answers with. */
export const SIMULATED_DETACH_ERROR = "rpc error: code = Internal desc = simulated plugin failure";

/** Nomad's CSIInfo of one plugin on one node, as its client fingerprints it. */
function csiInfo(pluginID: string, time: string, role: "node" | "controller", nodeID: string) {
  return {
    PluginID: pluginID,
    AllocID: `${pluginID}-plugin-alloc-${nodeID.slice(0, 8)}`,
    Healthy: true,
    HealthDescription: "healthy",
    UpdateTime: time,
    Provider: `${pluginID}.csi.example.com`,
    ProviderVersion: "1.0.0",
    RequiresControllerPlugin: true,
    RequiresTopologies: false,
    ControllerInfo:
      role === "controller"
        ? {
            SupportsReadOnlyAttach: true,
            SupportsAttachDetach: true,
            SupportsListVolumes: true,
            SupportsListVolumesAttachedNodes: false,
            SupportsCreateDelete: true,
            SupportsClone: false,
            SupportsExpand: false,
            SupportsCondition: false,
            SupportsGet: false,
            SupportsGetCapacity: false,
            SupportsCreateDeleteSnapshot: false,
            SupportsListSnapshots: false,
          }
        : null,
    NodeInfo:
      role === "node"
        ? {
            ID: externalNodeID(nodeID),
            MaxVolumes: 64,
            AccessibleTopology: null,
            RequiresNodeStageVolume: true,
            SupportsCondition: false,
            SupportsExpand: false,
            SupportsStats: false,
          }
        : null,
  };
}

/** The fingerprint fields of a node running these plugins (null when none, as a Nomad client without them sends). */
export function csiFingerprints(
  nodeID: string,
  plugins: { readonly node: readonly string[]; readonly controller: readonly string[] },
  time: string,
): { CSIControllerPlugins: Record<string, unknown> | null; CSINodePlugins: Record<string, unknown> | null } {
  const of = (ids: readonly string[], role: "node" | "controller") =>
    ids.length === 0 ? null : Object.fromEntries(ids.map((id) => [id, csiInfo(id, time, role, nodeID)]));
  return {
    CSIControllerPlugins: of(plugins.controller, "controller"),
    CSINodePlugins: of(plugins.node, "node"),
  };
}

/** The provider's ID of this node, as the simulated node plugin reports it (NodeInfo.ID). */
export function externalNodeID(nodeID: string): string {
  return `ext-${nodeID}`;
}
