import type { AllocRow } from "../../../projections/allocs.ts";
import { volumeWriterKey } from "../../../projections/csi-volume-writers.ts";
import type { Table } from "../../store/table.ts";
import type { CsiPluginView, CsiView, CsiVolumeView } from "./csi-feasibility.ts";

/** The tables the CSI check reads: the volumes and plugins tables of csi-core, and the allocations. */
export interface CsiTables {
  readonly allocs: Table<AllocRow>;
  readonly csiVolumes?: { get(key: string): CsiVolumeView | undefined };
  readonly csiPlugins?: { get(id: string): CsiPluginView | undefined };
}

/** The CSI check's view of the tables (the main store's or a scheduler thread's replica). */
export function csiViewOf(tables: CsiTables): CsiView {
  return {
    volume: (namespace, id) => tables.csiVolumes?.get(volumeWriterKey(namespace, id)),
    plugin: (id) => tables.csiPlugins?.get(id),
    alloc: (id) => tables.allocs.get(id),
    allocsOnNode: (nodeID) => tables.allocs.by("node", nodeID),
    writers: (namespace, id) => tables.allocs.by("csi_write", volumeWriterKey(namespace, id)),
  };
}
