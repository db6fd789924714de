import { describe, expect, it } from "vitest";
import { canonicalizeJob, JobShapeError } from "../../src/jobs/canonicalize.ts";
import { jobValidationErrors } from "../../src/jobs/validate.ts";
import type { JobSpec } from "../../streams/jobs.ts";

const task = (fields: Record<string, unknown> = {}) => ({ Name: "t", Driver: "docker", ...fields });
const job = (fields: Record<string, unknown> = {}, group: Record<string, unknown> = {}, t = task()) => ({
  ID: "web",
  Datacenters: ["dc1"],
  TaskGroups: [{ Name: "g", Tasks: [t], ...group }],
  ...fields,
});

const shapeError = (input: unknown): string => {
  try {
    canonicalizeJob(input);
  } catch (err) {
    if (err instanceof JobShapeError) return err.message;
    throw err;
  }
  return "";
};

// Paths are joined only when a field is of the wrong kind: each level's
// path must still name the field as it did when built up front.
describe("the path a shape error names", () => {
  it.each([
    [job({ Priority: "high" }), "Job.Priority must be a number, not string"],
    [job({ Meta: { a: 1 } }), "Job.Meta.a must be a string, not number"],
    [job({ Constraints: [{ LTarget: 1 }] }), "Job.Constraints[0].LTarget must be a string, not number"],
    [job({ Affinities: [{ Weight: "x" }] }), "Job.Affinities[0].Weight must be an integer, not string"],
    [job({ SubmitTime: "x" }), "Job.SubmitTime must be a number, not string"],
    [job({ Update: { MaxParallel: true } }), "Job.Update.MaxParallel must be an integer, not boolean"],
    [job({}, { Count: "2" }), "Job.TaskGroups[0].Count must be an integer, not string"],
    [job({}, { Meta: { k: [] } }), "Job.TaskGroups[0].Meta.k must be a string, not an array"],
    [
      job({}, { RestartPolicy: { Mode: 3 } }),
      "Job.TaskGroups[0].RestartPolicy.Mode must be a string, not number",
    ],
    [
      job({}, { Constraints: [{ Operand: 1 }] }),
      "Job.TaskGroups[0].Constraints[0].Operand must be a string, not number",
    ],
    [
      job({}, { EphemeralDisk: { SizeMB: "big" } }),
      "Job.TaskGroups[0].EphemeralDisk.SizeMB must be an integer, not string",
    ],
    [
      job({}, {}, task({ Resources: { CPU: "x" } })),
      "Job.TaskGroups[0].Tasks[0].Resources.CPU must be a number, not string",
    ],
    [
      job({}, {}, task({ Resources: { Networks: [{ MBits: "x" }] } })),
      "Job.TaskGroups[0].Tasks[0].Resources.Networks[0].MBits must be an integer, not string",
    ],
    [
      job({}, {}, task({ RestartPolicy: { Attempts: "x" } })),
      "Job.TaskGroups[0].Tasks[0].RestartPolicy.Attempts must be an integer, not string",
    ],
    [
      job({}, {}, task({ Lifecycle: { Hook: 1 } })),
      "Job.TaskGroups[0].Tasks[0].Lifecycle.Hook must be a string, not number",
    ],
    [
      job({}, {}, task({ Identity: { Env: "yes" } })),
      "Job.TaskGroups[0].Tasks[0].Identity.Env must be a boolean, not string",
    ],
    [job({}, {}, task({ Config: [] })), "Job.TaskGroups[0].Tasks[0].Config must be an object, not an array"],
  ])("%#: %s", (input, message) => {
    expect(shapeError(input)).toBe(message);
  });

  it("names each unknown field dropped by its path", () => {
    const ignored: string[] = [];
    canonicalizeJob(job({ Shiny: 1 }, { Sparkle: true }, task({ Actions: [] })), ignored);
    expect(ignored).toEqual(["Job.Shiny", "Job.TaskGroups[0].Sparkle", "Job.TaskGroups[0].Tasks[0].Actions"]);
  });
});

describe("validation messages kept by the loops that replaced closures", () => {
  const errors = (input: unknown) => jobValidationErrors(canonicalizeJob(input) as JobSpec);

  it("numbers the constraints of a job, a group and a task from 1", () => {
    const bad = [
      { LTarget: "a", RTarget: "b", Operand: "=" },
      { Operand: "regexp", RTarget: "(" },
    ];
    const all = errors(job({ Constraints: bad }, { Constraints: bad }, task({ Constraints: bad }))).join(
      "\n",
    );
    expect(all).toMatch(/^Constraint 2 validation failed: [\s\S]*Regular expression failed to compile/m);
    expect(all).not.toMatch(/Constraint 1 validation failed/);
    expect(all).toMatch(/Task group g validation failed:[\s\S]*Constraint 2 validation failed/);
    expect(all).toMatch(/Task t validation failed:[\s\S]*Constraint 2 validation failed/);
  });

  it("finds an empty datacenter, a repeated group or task name, and a log config too large", () => {
    expect(errors(job({ Datacenters: ["dc1", ""] }))).toContain("Job datacenter must be non-empty string");
    const twice = { ...job(), TaskGroups: [job().TaskGroups[0], job().TaskGroups[0]] };
    expect(errors(twice)).toContain("Job task group 2 redefines 'g' from group 1");
    expect(errors(job({}, { Tasks: [task(), task()] })).join("\n")).toMatch(
      /Task 2 redefines 't' from task 1/,
    );
    const logs = errors(job({}, { EphemeralDisk: { SizeMB: 50 } }, task({ LogConfig: { MaxFiles: 10 } })));
    expect(logs.join("\n")).toMatch(/minimum file size is 1MB; got 0/);
  });

  it("checks a group network's hostname label by label", () => {
    const host = (Hostname: string) => errors(job({}, { Networks: [{ Hostname }] })).join("\n");
    expect(host("a.example.com")).not.toMatch(/Hostname is not a valid DNS name/);
    expect(host("a..example.com")).toMatch(/Hostname is not a valid DNS name/);
    expect(host(`${"x".repeat(64)}.com`)).toMatch(/Hostname is not a valid DNS name/);
    expect(host(".")).not.toMatch(/Hostname is not a valid DNS name/);
  });
});
