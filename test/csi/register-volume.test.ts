import { describe, expect, it } from "vitest";
import type { CSIPluginRow } from "../../projections/csi-plugins.ts";
import type { CSIVolumeRow } from "../../projections/csi-volumes.ts";
import {
  asCreated,
  createRefusal,
  mergeVolume,
  pluginRefusal,
  type VolumeInput,
  volumeInput,
  volumeInvalid,
  withRequestedTopologies,
} from "../../src/csi/register-volume.ts";
import { csiInfo } from "../projections/csi-fixtures.ts";

const input = (fields: Record<string, unknown> = {}): VolumeInput =>
  volumeInput(
    {
      ID: "db",
      PluginID: "ebs",
      RequestedCapabilities: [{ AccessMode: "single-node-writer", AttachmentMode: "file-system" }],
      ...fields,
    },
    "default",
  );

function stored(fields: Partial<CSIVolumeRow> = {}): CSIVolumeRow {
  const { Secrets: _, ...v } = input({ ExternalID: "vol-1", Name: "db" });
  return {
    ...v,
    Provider: "ebs.csi",
    ProviderVersion: "1",
    SealedSecrets: null,
    AccessMode: "",
    AttachmentMode: "",
    ReadClaims: {},
    WriteClaims: {},
    PastClaims: {},
    CreateIndex: 5,
    ModifyIndex: 5,
    ...fields,
  };
}

function plugin(
  controller: Record<string, unknown> | null,
  fields: Partial<CSIPluginRow> = {},
): CSIPluginRow {
  const c = controller ? csiInfo("ebs", "controller", { ControllerInfo: controller }) : undefined;
  return {
    ID: "ebs",
    Provider: "ebs.csi",
    Version: "1",
    ControllerRequired: c !== undefined,
    Controllers: c ? { n1: c as never } : {},
    Nodes: { n1: csiInfo("ebs", "node") as never },
    ControllersHealthy: c ? 1 : 0,
    ControllersExpected: c ? 1 : 0,
    NodesHealthy: 1,
    NodesExpected: 1,
    CreateIndex: 1,
    ModifyIndex: 1,
    ...fields,
  };
}

describe("a volume in a register request", () => {
  it("takes the request's namespace when it names none, and ignores fields the server owns", () => {
    const v = input({ ReadAllocs: { a: null }, Schedulable: true, Namespace: "" });
    expect(v.Namespace).toBe("default");
    expect(v).not.toHaveProperty("ReadAllocs");
    expect(v).not.toHaveProperty("Schedulable");
  });

  it("is validated with Nomad's words", () => {
    expect(volumeInvalid(input())).toBeUndefined();
    expect(volumeInvalid(input({ ID: "", RequestedCapabilities: [] }))).toBe(
      "validation: missing volume id, must include at least one capability block",
    );
    expect(volumeInvalid(input({ SnapshotID: "s", CloneID: "c" }))).toContain(
      "only one of snapshot_id and clone_id is allowed",
    );
    expect(volumeInvalid(input({ RequestedTopologies: { Required: [{ Segments: {} }] } }))).toContain(
      "required topology is missing segments field",
    );
  });

  it("gets the required topologies it asked for when new, and as created", () => {
    const req = { Required: [{ Segments: { zone: "a" } }], Preferred: null };
    expect(withRequestedTopologies(input({ RequestedTopologies: req })).Topologies).toEqual(req.Required);
    const created = asCreated(
      input({ RequestedTopologies: req, RequestedCapacityMin: 10, RequestedCapacityMax: 20 }),
    );
    expect(created).toMatchObject({ ExternalID: "db", Capacity: 10, Topologies: req.Required });
  });
});

describe("mergeVolume (Nomad's CSIVolume.Merge)", () => {
  it("keeps the fields Nomad controls and takes the mutable ones", () => {
    const merged = mergeVolume(stored(), input({ Context: { k: "v" }, Secrets: { s: "1" } }));
    expect(merged).toMatchObject({
      ExternalID: "vol-1",
      Name: "db",
      Context: { k: "v" },
      Secrets: { s: "1" },
    });
  });

  it("refuses immutable changes, all of them named", () => {
    const merged = mergeVolume(stored(), input({ ExternalID: "vol-2", Name: "other", PluginID: "x" }));
    expect(merged).toBe(
      "3 errors occurred:\n\t* volume name cannot be updated\n\t* volume external ID cannot be updated\n\t* volume plugin ID cannot be updated\n\n",
    );
  });

  it("needs a capacity range that fits, capabilities that keep the mode in use, and unchanged parameters", () => {
    expect(
      mergeVolume(stored({ Capacity: 100 }), input({ RequestedCapacityMin: 200, RequestedCapacityMax: 300 })),
    ).toContain("volume requested capacity update was not compatible with existing capacity");
    const inUse = stored({ AccessMode: "single-node-writer", AttachmentMode: "file-system" });
    expect(
      mergeVolume(
        inUse,
        input({
          RequestedCapabilities: [{ AccessMode: "multi-node-reader-only", AttachmentMode: "file-system" }],
        }),
      ),
    ).toContain("volume requested capabilities update was not compatible with existing capability in use");
    expect(mergeVolume(stored({ Parameters: { a: "1" } }), input({ Parameters: { a: "2" } }))).toContain(
      "volume parameters cannot be updated",
    );
    expect(
      mergeVolume(
        stored({ Topologies: [{ Segments: { zone: "a" } }] }),
        input({ RequestedTopologies: { Required: [{ Segments: { zone: "b" } }] } }),
      ),
    ).toContain("volume topology requirement update was not compatible with existing topology");
  });
});

describe("the plugin checks", () => {
  it("need the plugin, a healthy controller when one is required, and read-only attach for reader-only modes", () => {
    expect(pluginRefusal(input(), undefined)).toBe("no CSI plugin named: ebs could be found");
    expect(pluginRefusal(input(), plugin({ SupportsReadOnlyAttach: true }, { ControllersHealthy: 0 }))).toBe(
      "no healthy controllers for CSI plugin: ebs",
    );
    const ro = input({
      RequestedCapabilities: [{ AccessMode: "single-node-reader-only", AttachmentMode: "file-system" }],
    });
    expect(pluginRefusal(ro, plugin({ SupportsReadOnlyAttach: false }))).toContain(
      "cannot serve access mode single-node-reader-only",
    );
    expect(pluginRefusal(ro, plugin({ SupportsReadOnlyAttach: true }))).toBeUndefined();
    // A node-only plugin: nothing to attach.
    expect(pluginRefusal(ro, plugin(null))).toBeUndefined();
  });

  it("need a controller that can create volumes for create", () => {
    expect(createRefusal(input(), plugin({ SupportsCreateDelete: true }))).toBeUndefined();
    expect(createRefusal(input(), plugin({ SupportsCreateDelete: false }))).toContain(
      "does not support creating volumes",
    );
    expect(createRefusal(input(), plugin(null))).toContain("does not support creating volumes");
  });
});
