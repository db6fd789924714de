import { describe, expect, it } from "vitest";
import { allocsProjection } from "../../projections/allocs.ts";
import type { NodeRow } from "../../projections/nodes.ts";
import { Table } from "../../src/store/table.ts";

/**
 * The allocs table declares what each of its indexes reads
 * (TableSpec.indexedFields): refiling skips an index whose fields a change
 * keeps, so a field missing from its list would leave a row filed under a
 * stale value. Every other field of a row is changed in turn here: none
 * may move a row in an index that does not list it.
 */
describe("the allocs table's indexed fields", () => {
  const nodes = new Table<NodeRow>({ name: "nodes", key: (n) => n.ID });
  const { allocs } = allocsProjection(nodes);
  const row: Record<string, unknown> = {
    ID: "a1",
    Namespace: "default",
    JobID: "web",
    Name: "web.db[3]",
    TaskGroup: "db",
    NodeID: "n1",
    EvalID: "e1",
    DeploymentID: "d1",
    SigningKeyID: "k1",
    DesiredStatus: "run",
    ClientStatus: "running",
    Job: {
      TaskGroups: [
        {
          Name: "db",
          Volumes: {
            data: {
              Name: "data",
              Type: "csi",
              Source: "vol",
              ReadOnly: false,
              PerAlloc: true,
              AccessMode: "",
            },
          },
        },
      ],
    },
    AllocatedResources: null,
    TaskStates: null,
    CreateIndex: 1,
    ModifyIndex: 1,
  };
  // A value each field may take that changes what an index reading it gives.
  const other: Record<string, unknown> = {
    Namespace: "other",
    Name: "web.db[4]",
    TaskGroup: "web",
    DesiredStatus: "stop",
    ClientStatus: "complete",
    Job: null,
  };

  it("lists every field each index reads", () => {
    const indexes = allocs.spec.indexes!;
    const declared = allocs.spec.indexedFields!;
    expect(Object.keys(declared).sort()).toEqual(Object.keys(indexes).sort());
    // Stopped by the server too: then the client's status decides whether its key is still used.
    for (const base of [row, { ...row, DesiredStatus: "stop" }]) {
      for (const [name, fn] of Object.entries(indexes)) {
        const value = JSON.stringify(fn(base as never));
        for (const field of Object.keys(base)) {
          if ((declared[name] as readonly string[]).includes(field)) continue;
          const to = field === "DesiredStatus" && base.DesiredStatus === "stop" ? "run" : other[field];
          const changed = { ...base, [field]: field in other ? to : `${String(base[field])}-2` };
          expect(JSON.stringify(fn(changed as never)), `${name} reads ${field}`).toBe(value);
        }
      }
    }
  });
});
