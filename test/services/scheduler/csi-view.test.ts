import { describe, expect, it } from "vitest";
import type { AllocRow } from "../../../projections/allocs.ts";
import type { CsiVolumeView } from "../../../src/services/scheduler/csi-feasibility.ts";
import { type CsiTables, csiViewOf } from "../../../src/services/scheduler/csi-view.ts";

/** Tables with only what the view reads, backed by maps the test changes. */
function tables(): { tables: CsiTables; allocs: Map<string, AllocRow> } {
  const allocs = new Map<string, AllocRow>();
  const volumes = new Map<string, CsiVolumeView>();
  const t = {
    allocs: {
      get: (id: string) => allocs.get(id),
      by: (index: string, value: string) =>
        index === "node" ? [...allocs.values()].filter((a) => a.NodeID === value) : [],
    },
    csiVolumes: { get: (key: string) => volumes.get(key) },
  } as unknown as CsiTables;
  return { tables: t, allocs };
}

describe("csiViewOf", () => {
  it("gives one view per tables object, made once rather than per scheduling pass", () => {
    const a = tables();
    const b = tables();
    expect(csiViewOf(a.tables)).toBe(csiViewOf(a.tables));
    expect(csiViewOf(b.tables)).not.toBe(csiViewOf(a.tables));
  });

  it("reads the tables as they are at each call, not as they were when the view was made", () => {
    const { tables: t, allocs } = tables();
    const view = csiViewOf(t);
    expect(view.alloc("a1")).toBeUndefined();
    allocs.set("a1", { ID: "a1", NodeID: "n1" } as AllocRow);
    expect(csiViewOf(t).alloc("a1")?.ID).toBe("a1");
    expect([...csiViewOf(t).allocsOnNode("n1")].map((a) => a.ID)).toEqual(["a1"]);
    expect(csiViewOf(t).volume("default", "v1")).toBeUndefined();
    expect(csiViewOf(t).plugin("p1")).toBeUndefined();
  });
});
