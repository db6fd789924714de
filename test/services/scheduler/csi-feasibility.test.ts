import { describe, expect, it } from "vitest";
import type { AllocRow } from "../../../projections/allocs.ts";
import { volumeWriterKey, writtenVolumeKeys } from "../../../projections/csi-volume-writers.ts";
import type { NodeRow } from "../../../projections/nodes.ts";
import {
  CSI_PLUGIN_MAX_VOLUMES,
  CSI_PLUGIN_MISSING,
  CSI_PLUGIN_UNHEALTHY,
  CSI_TOPOLOGY,
  CSI_VOLUME_GCD_ALLOCATION,
  CSI_VOLUME_IN_USE,
  CSI_VOLUME_NO_READ,
  CSI_VOLUME_NO_WRITE,
  CSI_VOLUME_NOT_FOUND,
  CsiFeasibility,
  type CsiPluginView,
  type CsiView,
  type CsiVolumeView,
  wantedOf,
} from "../../../src/services/scheduler/csi-feasibility.ts";
import { AllocMetric } from "../../../src/services/scheduler/metrics.ts";
import type { TaskGroupSpec, VolumeRequest } from "../../../streams/jobs.ts";

/** Plain rows behind the checker's read interface, counting the reads it makes. */
class Rows implements CsiView {
  readonly volumes = new Map<string, CsiVolumeView>();
  readonly plugins = new Map<string, CsiPluginView>();
  readonly allocs = new Map<string, AllocRow>();
  reads = 0;

  volume(namespace: string, id: string) {
    this.reads++;
    return this.volumes.get(`${namespace}/${id}`);
  }
  plugin(id: string) {
    this.reads++;
    return this.plugins.get(id);
  }
  alloc(id: string) {
    this.reads++;
    return this.allocs.get(id);
  }
  allocsOnNode(nodeID: string) {
    return [...this.allocs.values()].filter((a) => a.NodeID === nodeID);
  }
  writers(namespace: string, id: string) {
    return [...this.allocs.values()].filter(
      (a) =>
        a.Namespace === namespace && (writtenVolumeKeys(a) ?? []).includes(volumeWriterKey(namespace, id)),
    );
  }
}

const healthyPlugin: CsiPluginView = { ControllerRequired: false, ControllersHealthy: 0, NodesHealthy: 2 };

function volume(id: string, extra: Partial<CsiVolumeView> = {}): CsiVolumeView {
  return {
    ID: id,
    Namespace: "default",
    PluginID: "ebs",
    AccessMode: "",
    RequestedCapabilities: [{ AccessMode: "single-node-writer" }],
    Topologies: null,
    WriteClaims: {},
    ...extra,
  };
}

function node(id: string, plugins: Record<string, unknown> | null, cls = "c1"): NodeRow {
  return { ID: id, NodeClass: cls, ComputedClass: cls, CSINodePlugins: plugins } as unknown as NodeRow;
}

const healthyOn = (extra: Record<string, unknown> = {}) => ({
  ebs: { PluginID: "ebs", Healthy: true, NodeInfo: { ID: "i-1", MaxVolumes: 8, ...extra } },
});

function group(volumes: Record<string, Partial<VolumeRequest>>, count = 1): TaskGroupSpec {
  const full: Record<string, VolumeRequest> = {};
  for (const [name, v] of Object.entries(volumes)) {
    full[name] = {
      Name: name,
      Type: "csi",
      Source: name,
      ReadOnly: false,
      AccessMode: "single-node-writer",
      AttachmentMode: "file-system",
      MountOptions: null,
      PerAlloc: false,
      ...v,
    };
  }
  return { Name: "g", Count: count, Tasks: [], Volumes: full } as unknown as TaskGroupSpec;
}

function alloc(id: string, jobID: string, extra: Partial<AllocRow> = {}): AllocRow {
  return {
    ID: id,
    Name: `${jobID}.g[0]`,
    Namespace: "default",
    JobID: jobID,
    NodeID: "n1",
    TaskGroup: "g",
    DesiredStatus: "run",
    ClientStatus: "running",
    Job: null,
    ...extra,
  } as unknown as AllocRow;
}

function verdict(rows: Rows, n: NodeRow, tg: TaskGroupSpec, allocName = "web.g[0]", jobID = "web") {
  const checker = new CsiFeasibility(rows, "default", jobID);
  const metric = new AllocMetric();
  const ok = checker.feasible(n, tg, allocName, metric);
  return { ok, reasons: metric.ConstraintFiltered };
}

describe("CSI volume feasibility (Nomad's CSIVolumeChecker)", () => {
  it("passes a node that runs the volume's node plugin healthy, and names why the others fail", () => {
    const rows = new Rows();
    rows.volumes.set("default/data", volume("data"));
    rows.plugins.set("ebs", healthyPlugin);
    const tg = group({ data: {} });
    expect(verdict(rows, node("n1", healthyOn()), tg).ok).toBe(true);
    expect(verdict(rows, node("n2", null), tg).reasons).toEqual({ [CSI_PLUGIN_MISSING("ebs", "n2")]: 1 });
    expect(
      verdict(rows, node("n3", { ebs: { Healthy: false, NodeInfo: { MaxVolumes: 8 } } }), tg).reasons,
    ).toEqual({ [CSI_PLUGIN_UNHEALTHY("ebs", "n3")]: 1 });
    expect(verdict(rows, node("n1", healthyOn()), group({ other: {} })).reasons).toEqual({
      [CSI_VOLUME_NOT_FOUND("other")]: 1,
    });
    expect(CSI_PLUGIN_MISSING("ebs", "n2")).toBe("CSI plugin ebs is missing from client n2");
  });

  it("looks the volume up in the job's namespace only", () => {
    const rows = new Rows();
    rows.volumes.set("other/data", { ...volume("data"), Namespace: "other" });
    rows.plugins.set("ebs", healthyPlugin);
    expect(verdict(rows, node("n1", healthyOn()), group({ data: {} })).reasons).toEqual({
      [CSI_VOLUME_NOT_FOUND("data")]: 1,
    });
  });

  it("asks for source[index] with per_alloc", () => {
    const rows = new Rows();
    rows.volumes.set("default/data[1]", volume("data[1]"));
    rows.plugins.set("ebs", healthyPlugin);
    const tg = group({ data: { PerAlloc: true } }, 2);
    expect(wantedOf(tg, "web.g[1]")).toEqual([
      {
        id: "data[1]",
        readOnly: false,
        accessMode: "single-node-writer",
        key: "w\u0000single-node-writer\u0000data[1]",
      },
    ]);
    expect(verdict(rows, node("n1", healthyOn()), tg, "web.g[1]").ok).toBe(true);
    expect(verdict(rows, node("n1", healthyOn()), tg, "web.g[0]").reasons).toEqual({
      [CSI_VOLUME_NOT_FOUND("data[0]")]: 1,
    });
  });

  it("refuses writes on a volume whose plugin is unschedulable, or that allows no writer", () => {
    const rows = new Rows();
    rows.volumes.set("default/data", volume("data"));
    rows.volumes.set(
      "default/ro",
      volume("ro", { RequestedCapabilities: [{ AccessMode: "multi-node-reader-only" }] }),
    );
    rows.plugins.set("ebs", { ControllerRequired: true, ControllersHealthy: 0, NodesHealthy: 1 });
    const n = node("n1", healthyOn());
    expect(verdict(rows, n, group({ data: {} })).reasons).toEqual({ [CSI_VOLUME_NO_WRITE("data")]: 1 });
    expect(verdict(rows, n, group({ data: { ReadOnly: true } })).reasons).toEqual({
      [CSI_VOLUME_NO_READ("data")]: 1,
    });
    rows.plugins.set("ebs", healthyPlugin);
    expect(verdict(rows, n, group({ ro: {} })).reasons).toEqual({ [CSI_VOLUME_NO_WRITE("ro")]: 1 });
    expect(verdict(rows, n, group({ ro: { ReadOnly: true, AccessMode: "multi-node-reader-only" } })).ok).toBe(
      true,
    );
  });

  it("a write claim held by a live allocation of another job blocks, with Nomad's reason", () => {
    const rows = new Rows();
    rows.volumes.set(
      "default/data",
      volume("data", { AccessMode: "single-node-writer", WriteClaims: { a1: {} } }),
    );
    rows.plugins.set("ebs", healthyPlugin);
    rows.allocs.set("a1", alloc("a1", "db"));
    const r = verdict(rows, node("n1", healthyOn()), group({ data: {} }));
    expect(r.reasons).toEqual({ [CSI_VOLUME_IN_USE("data")]: 1 });
    expect(CSI_VOLUME_IN_USE("data")).toBe("CSI volume data has exhausted its available writer claims");
  });

  it("a claim whose allocation was collected, or is terminal, gives the recoverable reason instead", () => {
    const rows = new Rows();
    rows.volumes.set(
      "default/data",
      volume("data", { AccessMode: "single-node-writer", WriteClaims: { gone: {} } }),
    );
    rows.plugins.set("ebs", healthyPlugin);
    const n = node("n1", healthyOn());
    expect(verdict(rows, n, group({ data: {} })).reasons).toEqual({
      [CSI_VOLUME_GCD_ALLOCATION("data", "gone")]: 1,
    });
    expect(CSI_VOLUME_GCD_ALLOCATION("data", "gone")).toBe(
      "CSI volume data has exhausted its available writer claims and is claimed by a garbage collected allocation gone; waiting for claim to be released",
    );
    rows.allocs.set("gone", alloc("gone", "db", { DesiredStatus: "stop", ClientStatus: "complete" }));
    expect(verdict(rows, n, group({ data: {} })).reasons).toEqual({
      [CSI_VOLUME_GCD_ALLOCATION("data", "gone")]: 1,
    });
  });

  it("a claim held by an earlier allocation of the same job does not block its replacement", () => {
    const rows = new Rows();
    rows.volumes.set(
      "default/data",
      volume("data", { AccessMode: "single-node-writer", WriteClaims: { old: {} } }),
    );
    rows.plugins.set("ebs", healthyPlugin);
    rows.allocs.set("old", alloc("old", "web", { DesiredStatus: "stop" }));
    expect(verdict(rows, node("n1", healthyOn()), group({ data: {} })).ok).toBe(true);
  });

  it("a live writer of another job blocks a single-writer volume before its client has claimed it", () => {
    const rows = new Rows();
    rows.volumes.set("default/data", volume("data"));
    rows.plugins.set("ebs", healthyPlugin);
    const writing = group({ data: {} });
    const asJob = { Job: { TaskGroups: [writing] } as unknown as AllocRow["Job"] };
    rows.allocs.set("a1", alloc("a1", "db", { ClientStatus: "pending", ...asJob }));
    const n = node("n1", healthyOn());
    expect(verdict(rows, n, writing).reasons).toEqual({ [CSI_VOLUME_IN_USE("data")]: 1 });
    // Its own job's writer (the allocation a replacement takes over from) does not.
    rows.allocs.set("a1", alloc("a1", "web", { ClientStatus: "pending", ...asJob }));
    expect(verdict(rows, n, writing).ok).toBe(true);
    // Nor does one that stopped, nor one of a multi-writer request.
    rows.allocs.set("a1", alloc("a1", "db", { DesiredStatus: "stop", ...asJob }));
    expect(verdict(rows, n, writing).ok).toBe(true);
    rows.allocs.set("a1", alloc("a1", "db", asJob));
    expect(verdict(rows, n, group({ data: { AccessMode: "multi-node-multi-writer" } })).ok).toBe(true);
  });

  it("multi-node-multi-writer volumes take any number of writers", () => {
    const rows = new Rows();
    rows.volumes.set(
      "default/data",
      volume("data", { AccessMode: "multi-node-multi-writer", WriteClaims: { a1: {}, a2: {} } }),
    );
    rows.plugins.set("ebs", healthyPlugin);
    rows.allocs.set("a1", alloc("a1", "db"));
    expect(verdict(rows, node("n1", healthyOn()), group({ data: {} })).ok).toBe(true);
  });

  it("respects the plugin's MaxVolumes on the node, counting the volumes its live allocations use", () => {
    const rows = new Rows();
    rows.volumes.set("default/data", volume("data"));
    rows.volumes.set("default/used", volume("used"));
    rows.plugins.set("ebs", healthyPlugin);
    const using = group({ used: {} });
    rows.allocs.set(
      "a1",
      alloc("a1", "db", { Job: { TaskGroups: [{ ...using, Name: "g" }] } as unknown as AllocRow["Job"] }),
    );
    const full = node("n1", healthyOn({ MaxVolumes: 1 }));
    expect(verdict(rows, full, group({ data: {} })).reasons).toEqual({
      [CSI_PLUGIN_MAX_VOLUMES("ebs", "n1")]: 1,
    });
    expect(verdict(rows, node("n1", healthyOn({ MaxVolumes: 2 })), group({ data: {} })).ok).toBe(true);
    // A finished allocation no longer counts.
    rows.allocs.set("a1", { ...rows.allocs.get("a1")!, DesiredStatus: "stop", ClientStatus: "complete" });
    expect(verdict(rows, full, group({ data: {} })).ok).toBe(true);
  });

  it("matches the volume's topologies against the node's", () => {
    const rows = new Rows();
    rows.volumes.set("default/data", volume("data", { Topologies: [{ Segments: { zone: "a" } }] }));
    rows.plugins.set("ebs", healthyPlugin);
    const tg = group({ data: {} });
    expect(
      verdict(rows, node("n1", healthyOn({ AccessibleTopology: { Segments: { zone: "a" } } })), tg).ok,
    ).toBe(true);
    expect(
      verdict(rows, node("n1", healthyOn({ AccessibleTopology: { Segments: { zone: "b" } } })), tg).reasons,
    ).toEqual({ [CSI_TOPOLOGY]: 1 });
    expect(verdict(rows, node("n1", healthyOn()), tg).reasons).toEqual({ [CSI_TOPOLOGY]: 1 });
  });

  it("looks each volume, plugin and claim up once per evaluation, however many nodes it checks", () => {
    const rows = new Rows();
    rows.volumes.set(
      "default/data",
      volume("data", { AccessMode: "single-node-writer", WriteClaims: { a1: {} } }),
    );
    rows.plugins.set("ebs", healthyPlugin);
    rows.allocs.set("a1", alloc("a1", "db", { NodeID: "elsewhere" }));
    const checker = new CsiFeasibility(rows, "default", "web");
    const metric = new AllocMetric();
    const tg = group({ data: {} });
    for (let i = 0; i < 100; i++) checker.feasible(node(`n${i}`, healthyOn()), tg, "web.g[0]", metric);
    expect(metric.NodesFiltered).toBe(100);
    // The volume, its plugin and the claiming allocation: once each.
    expect(rows.reads).toBe(3);
  });

  it("judges each of several volumes on its own: the first that fails is the reason", () => {
    const rows = new Rows();
    rows.volumes.set("default/a", volume("a"));
    rows.volumes.set("default/b", volume("b", { AccessMode: "single-node-writer", WriteClaims: { x: {} } }));
    rows.plugins.set("ebs", healthyPlugin);
    rows.allocs.set("x", alloc("x", "db"));
    const n = node("n1", healthyOn());
    expect(verdict(rows, n, group({ a: {}, b: {} })).reasons).toEqual({ [CSI_VOLUME_IN_USE("b")]: 1 });
    expect(verdict(rows, n, group({ a: {}, c: {} })).reasons).toEqual({ [CSI_VOLUME_NOT_FOUND("c")]: 1 });
    expect(verdict(rows, n, group({ a: {}, b: { ReadOnly: true } })).ok).toBe(true);
  });

  it("has nothing to check for a group without CSI volumes", () => {
    expect(CsiFeasibility.asksFor(group({}))).toBe(false);
    expect(CsiFeasibility.asksFor(group({ certs: { Type: "host" } }))).toBe(false);
    expect(CsiFeasibility.asksFor(group({ data: {} }))).toBe(true);
  });
});
