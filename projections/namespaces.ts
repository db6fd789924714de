import type { Projection } from "../src/store/projection.ts";
import { stamped, Table } from "../src/store/table.ts";
import type { ClusterEvent } from "../streams/cluster.ts";
import type { NamespaceEvent, NamespaceSpec } from "../streams/namespaces.ts";
import { type CSIVolumeTable, namespaceVolumesRefusal } from "./csi-volumes.ts";
import { namespaceVariablesRefusal, type VariableTable } from "./variables.ts";

export type NamespaceRow = NamespaceSpec & { readonly CreateIndex: number; readonly ModifyIndex: number };

export const DEFAULT_NAMESPACE = "default";

/**
 * `variables`, and the CSI volumes given by `bind` (their table reads this
 * one): a namespace that still holds one is not deleted (Nomad's DeleteNamespaces).
 */
export function namespacesProjection(variables: VariableTable) {
  const namespaces = new Table<NamespaceRow>({ name: "namespaces", key: (n) => n.Name });
  let volumes: CSIVolumeTable | undefined;
  const projection: Projection = {
    name: "namespaces",
    // 2: a delete is refused while the namespace holds a variable; 3: or a CSI volume.
    version: 3,
    tables: [namespaces],
    // A rejected second bootstrap must not create the default namespace again.
    reads: ["cluster", "variables", "csi_volumes"],
    handles: new Set(["ClusterBootstrapped", "NamespaceUpserted", "NamespaceDeleted"]),
    evolve(ctx, event) {
      const e = event as NamespaceEvent | ClusterEvent;
      switch (e.type) {
        case "ClusterBootstrapped": {
          if (ctx.rejected || namespaces.has(DEFAULT_NAMESPACE)) return;
          ctx.put(namespaces, {
            Name: DEFAULT_NAMESPACE,
            Description: "Default shared namespace",
            Quota: "",
            Meta: null,
            Capabilities: null,
            CreateIndex: ctx.index,
            ModifyIndex: ctx.index,
          });
          return;
        }
        case "NamespaceUpserted": {
          const before = namespaces.get(e.data.Namespace.Name);
          ctx.put(namespaces, stamped(e.data.Namespace, before?.CreateIndex ?? ctx.index, ctx.index));
          return;
        }
        case "NamespaceDeleted": {
          if (e.data.Name === DEFAULT_NAMESPACE) {
            ctx.reject(400, "default namespace can not be deleted");
            return;
          }
          if (!namespaces.has(e.data.Name)) {
            ctx.reject(404, `namespace ${e.data.Name} not found`);
            return;
          }
          // Checked again here: a volume or variable may have been written since the handler looked.
          const holds =
            (volumes && namespaceVolumesRefusal(volumes, e.data.Name)) ??
            namespaceVariablesRefusal(variables, e.data.Name);
          if (holds) {
            ctx.reject(400, holds);
            return;
          }
          ctx.delete(namespaces, e.data.Name);
          return;
        }
      }
    },
  };
  return {
    projection,
    namespaces,
    bind(csiVolumes: CSIVolumeTable) {
      volumes = csiVolumes;
    },
  };
}
