import { describe, expect, it } from "vitest";
import { withFields } from "../../projections/jobs.ts";

describe("withFields", () => {
  it("gives the row a spread literal gives: same values, same key order, a new object", () => {
    const spec = { ID: "web", Name: "web", Type: "batch", Status: "pending", Meta: { a: "1" }, Stop: false };
    const fields = { NodePool: "default", Status: "running", Version: 3, ModifyIndex: 12 };
    const made = withFields(spec, fields);
    const spread = { ...spec, ...fields };
    expect(made).toEqual(spread);
    expect(Object.keys(made)).toEqual(Object.keys(spread));
    expect(Object.keys(made)).toEqual([
      "ID",
      "Name",
      "Type",
      "Status",
      "Meta",
      "Stop",
      "NodePool",
      "Version",
      "ModifyIndex",
    ]);
    expect(made).not.toBe(spec);
    expect(spec.Status).toBe("pending");
    expect(made.Meta).toBe(spec.Meta);
  });
});
