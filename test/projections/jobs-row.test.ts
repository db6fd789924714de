import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { type JobServerFields, jobRowOf } from "../../projections/jobs.ts";
import type { JobSpec } from "../../streams/jobs.ts";

const server: JobServerFields = {
  NodePool: "pool-a",
  Status: "pending",
  StatusDescription: "",
  Stable: false,
  Version: 3,
  SubmitTime: 1_700_000_000_000_000_000,
  CreateIndex: 7,
  ModifyIndex: 9,
  JobModifyIndex: 9,
};

describe("a stored job row", () => {
  it("lists the spec's fields in the spec's order, then the server's, as a spread would", () => {
    const spec = {
      Type: "batch",
      ID: "j",
      Name: "j",
      Namespace: "default",
      Priority: 50,
    } as unknown as JobSpec;
    const row = jobRowOf(spec, server);
    expect(Object.keys(row)).toEqual(Object.keys({ ...spec, ...server }));
    expect(JSON.stringify(row)).toBe(JSON.stringify({ ...spec, ...server }));
    expect(spec).not.toHaveProperty("Version");
  });

  it("keeps a field the spec already has in its place, with the server's value", () => {
    const spec = { ID: "j", NodePool: "", Name: "j", Version: 0 } as unknown as JobSpec;
    const row = jobRowOf(spec, server);
    expect(Object.keys(row).slice(0, 4)).toEqual(["ID", "NodePool", "Name", "Version"]);
    expect(row.NodePool).toBe("pool-a");
    expect(row.Version).toBe(3);
  });

  // `{ ...spec, NodePool, Status, ... }` gave each row a hidden class of its
  // own (nine new ones per registration): slow to build, and every access to
  // job rows polymorphic. Checked in a child with V8's natives syntax.
  it("is built so that rows of jobs of one shape share a hidden class", () => {
    const script = fileURLToPath(new URL("./fixtures/job-row-maps.ts", import.meta.url));
    const out = execFileSync(process.execPath, ["--allow-natives-syntax", "--import", "tsx", script], {
      encoding: "utf8",
      env: { ...process.env, MSGPACKR_NATIVE_ACCELERATION_DISABLED: "true" },
    });
    expect(JSON.parse(out)).toEqual({ stored: true, shared: true });
  }, 60_000);
});
