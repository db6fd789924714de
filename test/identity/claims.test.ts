import { describe, expect, it } from "vitest";
import { identityClaims, identityJobID, issuedAtOf, taskNames } from "../../src/identity/claims.ts";
import { IdentityWorld, PLACED_NS } from "./identity-fixtures.ts";

describe("workload identity claims", () => {
  const world = new IdentityWorld();

  it("are Nomad's IdentityClaims, in Nomad's order, issued and valid from the allocation's creation", () => {
    const alloc = world.addAlloc();
    const claims = identityClaims(alloc, alloc.Job, "server", issuedAtOf(alloc));
    expect(claims).toEqual({
      nomad_namespace: "default",
      nomad_job_id: "web",
      nomad_allocation_id: alloc.ID,
      nomad_task: "server",
      nbf: PLACED_NS / 1e9,
      iat: PLACED_NS / 1e9,
    });
    expect(Object.keys(claims)).toEqual([
      "nomad_namespace",
      "nomad_job_id",
      "nomad_allocation_id",
      "nomad_task",
      "nbf",
      "iat",
    ]);
  });

  it("name the parent job for a periodic or dispatch child, so policies on the parent cover it", () => {
    const child = world.addAlloc(
      { JobID: "batch/dispatch-1700000000-3b7f1c2a" },
      { ID: "batch/dispatch-1700000000-3b7f1c2a", ParentID: "batch" },
    );
    expect(identityClaims(child, child.Job, "server", 1).nomad_job_id).toBe("batch");
    expect(identityJobID(child, child.Job)).toBe("batch");
    // An empty ParentID is no parent.
    const plain = world.addAlloc({}, { ParentID: "" });
    expect(identityJobID(plain, plain.Job)).toBe("web");
    expect(identityJobID(plain, null)).toBe("web");
  });

  it("issue time is whole seconds of CreateTime", () => {
    // CreateTime comes from the envelope's milliseconds.
    expect(issuedAtOf({ CreateTime: 1_700_000_000_999 * 1e6 })).toBe(1_700_000_000);
    expect(issuedAtOf({ CreateTime: 1_700_000_001_000 * 1e6 })).toBe(1_700_000_001);
  });

  it("are made for every task of the allocation's group, in the job's order", () => {
    const alloc = world.addAlloc();
    expect(taskNames(alloc)).toEqual(["server", "sidecar"]);
    expect(taskNames({ ...alloc, TaskGroup: "missing" })).toEqual([]);
    expect(taskNames({ ...alloc, Job: null })).toEqual([]);
  });
});
