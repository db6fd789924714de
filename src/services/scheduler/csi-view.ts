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
  let view = views.get(tables);
  if (!view) {
    view = newCsiView(tables);
    views.set(tables, view);
  }
  return view;
}

/**
 * One view per tables object, as the view holds nothing but them: a pass
 * made five closures, each a defineProperty of its name under tsx
 * (`__name`), 3% of a scheduler thread's busy time in the registration
 * benchmark's cold run.
 */
const views = new WeakMap<CsiTables, CsiView>();

function newCsiView(tables: CsiTables): CsiView {
  return {
    volume: (namespace, id) => tables.csiVolumes?.get(volumeWriterKey(namespace, id)),
    plugin: (id) => tables.csiPlugins?.get(id),
    alloc: (id) => tables.allocs.get(id),
    allocsOnNode: (nodeID) => tables.allocs.by("node", nodeID),
    writers: (namespace, id) => tables.allocs.by("csi_write", volumeWriterKey(namespace, id)),
  };
}
