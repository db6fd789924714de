import type { ApplyContext, Change, Projection } from "../src/store/projection.ts";
import { Table } from "../src/store/table.ts";
import type { JsonObject } from "../streams/nodes.ts";
import type { NodeRow } from "./nodes.ts";

/**
 * Nomad's CSIInfo: what a client fingerprints of one plugin it runs, in its
 * node's `CSIControllerPlugins` / `CSINodePlugins` maps (keyed by plugin ID).
 * ControllerInfo / NodeInfo are kept as the client sent them
 * (CSIControllerInfo: SupportsCreateDelete, SupportsAttachDetach,
 * SupportsReadOnlyAttach, ...; CSINodeInfo: ID, MaxVolumes,
 * AccessibleTopology, ...).
 */
export interface CSIInfo {
  readonly PluginID: string;
  readonly AllocID: string;
  readonly Healthy: boolean;
  readonly HealthDescription: string;
  /** As the client sent it (Go's time.Time in RFC 3339). */
  readonly UpdateTime: string;
  readonly Provider: string;
  readonly ProviderVersion: string;
  readonly RequiresControllerPlugin: boolean;
  readonly RequiresTopologies: boolean;
  readonly ControllerInfo: JsonObject | null;
  readonly NodeInfo: JsonObject | null;
}

/** Nomad's CSIPlugin as stored: Allocations are resolved on read from the infos' AllocIDs. */
export interface CSIPluginRow {
  readonly ID: string;
  readonly Provider: string;
  readonly Version: string;
  readonly ControllerRequired: boolean;
  /** Node ID → the controller that node runs. */
  readonly Controllers: Readonly<Record<string, CSIInfo>>;
  /** Node ID → the node plugin that node runs. */
  readonly Nodes: Readonly<Record<string, CSIInfo>>;
  readonly ControllersHealthy: number;
  readonly ControllersExpected: number;
  readonly NodesHealthy: number;
  readonly NodesExpected: number;
  readonly CreateIndex: number;
  readonly ModifyIndex: number;
}

export type CSIPluginTable = Table<CSIPluginRow>;

/** Nomad's CSIPluginType. */
export type CSIPluginKind = "controller" | "node";

/**
 * The CSIInfos of `kind` a node fingerprints, by plugin ID. As Nomad's
 * CSIPlugin.AddPlugin, a controller entry counts only with a ControllerInfo
 * and a node entry only with a NodeInfo. Fields are read defensively: the
 * node row keeps the fingerprint as the client sent it.
 */
export function nodePluginInfos(node: NodeRow | undefined, kind: CSIPluginKind): Map<string, CSIInfo> {
  const out = new Map<string, CSIInfo>();
  const raw = kind === "controller" ? node?.CSIControllerPlugins : node?.CSINodePlugins;
  if (!raw) return out;
  for (const key of Object.keys(raw).sort()) {
    const info = toInfo(key, raw[key]);
    if (!info) continue;
    if (kind === "controller" ? info.ControllerInfo === null : info.NodeInfo === null) continue;
    out.set(info.PluginID, info);
  }
  return out;
}

function toInfo(key: string, value: unknown): CSIInfo | undefined {
  if (!isObject(value)) return undefined;
  const str = (v: unknown) => (typeof v === "string" ? v : "");
  const PluginID = str(value.PluginID) || key;
  if (PluginID === "") return undefined;
  return {
    PluginID,
    AllocID: str(value.AllocID),
    Healthy: value.Healthy === true,
    HealthDescription: str(value.HealthDescription),
    UpdateTime: str(value.UpdateTime),
    Provider: str(value.Provider),
    ProviderVersion: str(value.ProviderVersion),
    RequiresControllerPlugin: value.RequiresControllerPlugin === true,
    RequiresTopologies: value.RequiresTopologies === true,
    ControllerInfo: isObject(value.ControllerInfo) ? value.ControllerInfo : null,
    NodeInfo: isObject(value.NodeInfo) ? value.NodeInfo : null,
  };
}

function isObject(v: unknown): v is Readonly<Record<string, unknown>> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * Nomad's csi_plugins table, derived from the nodes table: within the record
 * that registers, updates or removes a node, each plugin the node
 * fingerprints (or did) gets the node's entry as Nomad's
 * upsertNodeCSIPlugins / deleteNodeCSIPlugins write it:
 * - a plugin is created only by a healthy fingerprint (an unhealthy one of a
 *   plugin nobody runs is ignored, as Nomad's);
 * - a node's entry is kept while it fingerprints the plugin, healthy or not,
 *   once it has been healthy (Nomad's `prev != nil || info.Healthy`);
 * - a node that stops fingerprinting it, or is removed (deregistered,
 *   collected), loses its entry; a plugin left without controllers or nodes
 *   is deleted (Nomad's updateOrGCPlugin).
 * A node that goes down keeps its entries, as in Nomad: the client's next
 * fingerprint says whether its plugins are healthy; the scheduler checks the
 * node's own status.
 *
 * Counts: Healthy as Nomad's. Expected: Nomad counts the plugin jobs'
 * allocations (UpdateExpectedWithJob); chronomad's plugins come from
 * fingerprints, not from tracked plugin jobs, so Expected is the number of
 * nodes with an entry for the plugin (healthy or not), which makes "healthy
 * of expected" read as Nomad's does for a plugin whose jobs are all placed.
 * No event is needed: replay rebuilds the table from the node records.
 */
export function csiPluginsProjection() {
  const plugins = new Table<CSIPluginRow>({ name: "csi_plugins", key: (p) => p.ID });

  const updateNode = (
    ctx: ApplyContext,
    nodeID: string,
    before: NodeRow | undefined,
    after: NodeRow | undefined,
  ) => {
    const next = {
      controller: nodePluginInfos(after, "controller"),
      node: nodePluginInfos(after, "node"),
    };
    const ids = new Set<string>([...next.controller.keys(), ...next.node.keys()]);
    for (const kind of ["controller", "node"] as const) {
      for (const id of nodePluginInfos(before, kind).keys()) ids.add(id);
    }
    for (const id of [...ids].sort()) {
      const row = plugins.get(id);
      const controllers = nextEntries(row?.Controllers, nodeID, next.controller.get(id));
      const nodes = nextEntries(row?.Nodes, nodeID, next.node.get(id));
      if (!row) {
        const healthy = next.controller.get(id)?.Healthy === true || next.node.get(id)?.Healthy === true;
        if (!healthy) continue;
      }
      if (Object.keys(controllers).length === 0 && Object.keys(nodes).length === 0) {
        if (row) ctx.delete(plugins, id);
        continue;
      }
      const latest = next.controller.get(id) ?? next.node.get(id);
      const updated = pluginRow(id, controllers, nodes, latest, row, ctx.index);
      if (row && samePlugin(row, updated)) continue;
      ctx.put(plugins, updated);
    }
  };

  const projection: Projection = {
    name: "csi_plugins",
    version: 1,
    tables: [plugins],
    reads: ["nodes"],
    handles: new Set(),
    evolve() {},
    observes: new Set(["nodes"]),
    observe(ctx, change: Change) {
      if (change.table !== "nodes") return;
      const before = change.before as NodeRow | undefined;
      const after = change.after as NodeRow | undefined;
      // Most node changes (heartbeats, status, drain) carry the same fingerprint objects.
      if (
        before &&
        after &&
        before.CSIControllerPlugins === after.CSIControllerPlugins &&
        before.CSINodePlugins === after.CSINodePlugins
      ) {
        return;
      }
      if (!before?.CSIControllerPlugins && !before?.CSINodePlugins) {
        if (!after?.CSIControllerPlugins && !after?.CSINodePlugins) return;
      }
      updateNode(ctx, change.key, before, after);
    },
  };
  return { projection, plugins };
}

/**
 * `entries` with node `nodeID`'s entry replaced by `info`: kept when the
 * node already had one or the info is healthy (Nomad's AddPlugin), removed
 * when the node no longer fingerprints the plugin. Keys sorted, so a row is
 * the same whatever order nodes registered in.
 */
function nextEntries(
  entries: Readonly<Record<string, CSIInfo>> | undefined,
  nodeID: string,
  info: CSIInfo | undefined,
): Record<string, CSIInfo> {
  const map = new Map(Object.entries(entries ?? {}));
  const had = map.has(nodeID);
  map.delete(nodeID);
  if (info && (had || info.Healthy)) map.set(nodeID, info);
  const out: Record<string, CSIInfo> = {};
  for (const k of [...map.keys()].sort()) out[k] = map.get(k)!;
  return out;
}

function pluginRow(
  ID: string,
  Controllers: Record<string, CSIInfo>,
  Nodes: Record<string, CSIInfo>,
  latest: CSIInfo | undefined,
  row: CSIPluginRow | undefined,
  index: number,
): CSIPluginRow {
  const controllers = Object.values(Controllers);
  const nodes = Object.values(Nodes);
  // Nomad copies Provider and Version from the last fingerprint applied.
  const Provider = latest?.Provider ?? row?.Provider ?? "";
  const Version = latest?.ProviderVersion ?? row?.Version ?? "";
  return {
    ID,
    Provider,
    Version,
    ControllerRequired: [...controllers, ...nodes].some((i) => i.RequiresControllerPlugin),
    Controllers,
    Nodes,
    ControllersHealthy: controllers.filter((i) => i.Healthy).length,
    ControllersExpected: controllers.length,
    NodesHealthy: nodes.filter((i) => i.Healthy).length,
    NodesExpected: nodes.length,
    CreateIndex: row?.CreateIndex ?? index,
    ModifyIndex: index,
  };
}

function samePlugin(a: CSIPluginRow, b: CSIPluginRow): boolean {
  const { CreateIndex: _a, ModifyIndex: _b, ...x } = a;
  const { CreateIndex: _c, ModifyIndex: _d, ...y } = b;
  return JSON.stringify(x) === JSON.stringify(y);
}

/** Nomad's volume Schedulable from its plugin: a healthy node plugin, and a healthy controller when one is required. */
export function pluginSchedulable(plugin: CSIPluginRow | undefined): boolean {
  if (!plugin) return false;
  if (plugin.NodesHealthy <= 0) return false;
  return !plugin.ControllerRequired || plugin.ControllersHealthy > 0;
}
