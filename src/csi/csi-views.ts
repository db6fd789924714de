import type { AllocRow } from "../../projections/allocs.ts";
import type { CSIInfo, CSIPluginRow } from "../../projections/csi-plugins.ts";
import type { CSIVolumeRow } from "../../projections/csi-volumes.ts";
import type { CSIMountOptions, CSIVolumeClaim } from "../../streams/csi.ts";
import { allocStub } from "../api/node-views.ts";
import type { Table } from "../store/table.ts";
import { type DenormalizedVolume, denormalizeVolume, pluginFields } from "./denormalize.ts";

type Json = Record<string, unknown>;

/** Nomad's csiVolumeExt: mount flags may hold secrets, so the API never shows them. */
function redactedMountOptions(m: CSIMountOptions | null): CSIMountOptions | null {
  if (!m) return null;
  return {
    FSType: m.FSType,
    MountFlags: m.MountFlags && m.MountFlags.length > 0 ? ["[REDACTED]"] : m.MountFlags,
  };
}

const nulls = (claims: Readonly<Record<string, CSIVolumeClaim>>): Record<string, null> => {
  const out: Record<string, null> = {};
  for (const id of Object.keys(claims).sort()) out[id] = null;
  return out;
};

/**
 * Nomad's volume JSON (nomad/structs/extensions.go csiVolumeExt): ReadAllocs
 * and WriteAllocs as maps of allocation ID → null, the live allocations as
 * AllocListStubs, Secrets null, mount flags redacted, the plugin's health.
 * The read and write claim maps are hidden as in Nomad; PastClaims, the
 * claims being released (a claim of a collected allocation among them), are
 * shown: chronomad's addition, so an operator sees what the watcher frees.
 */
export function volumeView(d: DenormalizedVolume): Json {
  const v = d.volume;
  const allocations = [...d.allocs.values()]
    .filter((a): a is AllocRow => a !== undefined)
    .map((a) => allocStub(a, { resources: false, taskStates: true }));
  return {
    ID: v.ID,
    Name: v.Name,
    ExternalID: v.ExternalID,
    Namespace: v.Namespace,
    Topologies: v.Topologies,
    AccessMode: v.AccessMode,
    AttachmentMode: v.AttachmentMode,
    MountOptions: redactedMountOptions(v.MountOptions),
    Secrets: null,
    Parameters: v.Parameters,
    Context: v.Context,
    Capacity: v.Capacity,
    RequestedCapacityMin: v.RequestedCapacityMin,
    RequestedCapacityMax: v.RequestedCapacityMax,
    RequestedCapabilities: v.RequestedCapabilities,
    CloneID: v.CloneID,
    SnapshotID: v.SnapshotID,
    RequestedTopologies: v.RequestedTopologies,
    ReadAllocs: nulls(v.ReadClaims),
    WriteAllocs: nulls(v.WriteClaims),
    Allocations: allocations,
    PastClaims: v.PastClaims,
    PluginID: v.PluginID,
    ...d.plugin,
    CreateIndex: v.CreateIndex,
    ModifyIndex: v.ModifyIndex,
  };
}

/** Nomad's CSIVolListStub: plugin fields denormalized, allocations only counted. */
export function volumeStub(v: CSIVolumeRow, plugin: CSIPluginRow | undefined): Json {
  const p = pluginFields(v, plugin);
  return {
    ID: v.ID,
    Namespace: v.Namespace,
    Name: v.Name,
    ExternalID: v.ExternalID,
    Topologies: v.Topologies,
    AccessMode: v.AccessMode,
    AttachmentMode: v.AttachmentMode,
    CurrentReaders: Object.keys(v.ReadClaims).length,
    CurrentWriters: Object.keys(v.WriteClaims).length,
    Schedulable: p.Schedulable,
    PluginID: v.PluginID,
    Provider: p.Provider,
    ControllerRequired: p.ControllerRequired,
    ControllersHealthy: p.ControllersHealthy,
    ControllersExpected: p.ControllersExpected,
    NodesHealthy: p.NodesHealthy,
    NodesExpected: p.NodesExpected,
    ResourceExhausted: null,
    CreateIndex: v.CreateIndex,
    ModifyIndex: v.ModifyIndex,
  };
}

/** The volume of `row` fully denormalized, in Nomad's JSON. */
export function volumeJson(
  row: CSIVolumeRow,
  tables: { readonly csiPlugins: Table<CSIPluginRow>; readonly allocs: Table<AllocRow> },
): Json {
  return volumeView(denormalizeVolume(row, tables));
}

/** Nomad's CSIPluginListStub. */
export function pluginStub(p: CSIPluginRow): Json {
  return {
    ID: p.ID,
    Provider: p.Provider,
    ControllerRequired: p.ControllerRequired,
    ControllersHealthy: p.ControllersHealthy,
    ControllersExpected: p.ControllersExpected,
    NodesHealthy: p.NodesHealthy,
    NodesExpected: p.NodesExpected,
    CreateIndex: p.CreateIndex,
    ModifyIndex: p.ModifyIndex,
  };
}

/**
 * Nomad's CSIPlugin JSON: Controllers and Nodes maps of node ID → CSIInfo,
 * the plugin's allocations (from the infos' AllocIDs, Nomad's
 * CSIPluginDenormalize) as AllocListStubs, and the counts.
 */
export function pluginView(p: CSIPluginRow, allocs: Table<AllocRow>): Json {
  const ids = new Set<string>();
  for (const info of [...Object.values(p.Controllers), ...Object.values(p.Nodes)] as CSIInfo[]) {
    if (info.AllocID) ids.add(info.AllocID);
  }
  const Allocations = [...ids]
    .sort()
    .map((id) => allocs.get(id))
    .filter((a): a is AllocRow => a !== undefined)
    .map((a) => allocStub(a, { resources: false, taskStates: true }));
  return {
    ID: p.ID,
    Provider: p.Provider,
    Version: p.Version,
    ControllerRequired: p.ControllerRequired,
    Controllers: p.Controllers,
    Nodes: p.Nodes,
    Allocations,
    ControllersHealthy: p.ControllersHealthy,
    ControllersExpected: p.ControllersExpected,
    NodesHealthy: p.NodesHealthy,
    NodesExpected: p.NodesExpected,
    CreateIndex: p.CreateIndex,
    ModifyIndex: p.ModifyIndex,
  };
}
