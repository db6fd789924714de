import type { AllocRow } from "../../projections/allocs.ts";
import { type CSIPluginRow, pluginSchedulable } from "../../projections/csi-plugins.ts";
import { type CSIVolumeRow, claimAlloc } from "../../projections/csi-volumes.ts";
import type { Table } from "../store/table.ts";
import { withPastClaims } from "./claim-volume.ts";

/** Nomad's plugin fields of a volume, copied from its plugin on read. */
export interface VolumePluginFields {
  readonly Schedulable: boolean;
  readonly Provider: string;
  readonly ProviderVersion: string;
  readonly ControllerRequired: boolean;
  readonly ControllersHealthy: number;
  readonly ControllersExpected: number;
  readonly NodesHealthy: number;
  readonly NodesExpected: number;
  /** Nomad's ResourceExhausted (a time); chronomad's clients report no exhaustion. */
  readonly ResourceExhausted: null;
}

/**
 * Nomad's csiVolumeDenormalizePluginsTxn: the plugin's provider, controller
 * requirement and counts; Schedulable when a node plugin is healthy (and a
 * controller, when required). A missing plugin leaves zero counts and an
 * unschedulable volume, and the volume's own provider.
 */
export function pluginFields(volume: CSIVolumeRow, plugin: CSIPluginRow | undefined): VolumePluginFields {
  return {
    Schedulable: pluginSchedulable(plugin),
    Provider: plugin?.Provider ?? volume.Provider,
    ProviderVersion: plugin?.Version ?? volume.ProviderVersion,
    ControllerRequired: plugin?.ControllerRequired ?? false,
    ControllersHealthy: plugin?.ControllersHealthy ?? 0,
    ControllersExpected: plugin?.ControllersExpected ?? 0,
    NodesHealthy: plugin?.NodesHealthy ?? 0,
    NodesExpected: plugin?.NodesExpected ?? 0,
    ResourceExhausted: null,
  };
}

/** A volume as reads see it: plugin health, and claims of collected or terminal allocations as past claims. */
export interface DenormalizedVolume {
  readonly volume: CSIVolumeRow;
  readonly plugin: VolumePluginFields;
  /** The current allocation of each read and write claim; undefined once collected. */
  readonly allocs: ReadonlyMap<string, AllocRow | undefined>;
}

/**
 * Nomad's CSIVolumeDenormalize on read (§6.2): never changes the table.
 * A claim whose allocation is gone or terminal, and that has no past claim
 * yet, shows as a past claim in state unpublishing.
 */
export function denormalizeVolume(
  volume: CSIVolumeRow,
  tables: { readonly csiPlugins: Table<CSIPluginRow>; readonly allocs: Table<AllocRow> },
): DenormalizedVolume {
  const allocs = new Map<string, AllocRow | undefined>();
  for (const id of [...Object.keys(volume.ReadClaims), ...Object.keys(volume.WriteClaims)]) {
    allocs.set(id, tables.allocs.get(id));
  }
  const resolved = withPastClaims(volume, (id) =>
    claimAlloc(allocs.has(id) ? allocs.get(id) : tables.allocs.get(id)),
  );
  return { volume: resolved, plugin: pluginFields(volume, tables.csiPlugins.get(volume.PluginID)), allocs };
}
