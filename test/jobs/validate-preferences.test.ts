import { describe, expect, it } from "vitest";
import { canonicalizeJob } from "../../src/jobs/canonicalize.ts";
import { jobValidationErrors } from "../../src/jobs/validate.ts";

// biome-ignore-start lint/suspicious/noTemplateCurlyInString: Nomad's interpolation syntax
function errorsOf(
  job: Record<string, unknown>,
  group: Record<string, unknown> = {},
  task: Record<string, unknown> = {},
) {
  return jobValidationErrors(
    canonicalizeJob({
      ID: "j",
      Type: "service",
      Datacenters: ["dc1"],
      ...job,
      TaskGroups: [
        {
          Name: "g",
          Count: 1,
          Tasks: [{ Name: "t", Driver: "docker", Resources: { CPU: 100, MemoryMB: 64 }, ...task }],
          ...group,
        },
      ],
    }),
  );
}

const ok = { LTarget: "${node.class}", Operand: "=", RTarget: "large", Weight: 50 };

describe("affinity and spread canonicalization (Nomad's api Canonicalize)", () => {
  it("gives an affinity or a spread without a weight 50, at every level, and keeps the rest as sent", () => {
    const job = canonicalizeJob({
      ID: "j",
      Affinities: [{ LTarget: "${node.class}", Operand: "=", RTarget: "large" }],
      Spreads: [{ Attribute: "${node.datacenter}", SpreadTarget: [{ Value: "dc1", Percent: 70 }] }],
      TaskGroups: [
        {
          Name: "g",
          Spreads: [{ Attribute: "${meta.rack}", Weight: 20 }],
          Tasks: [{ Name: "t", Driver: "docker", Affinities: [{ ...ok, Weight: -10 }] }],
        },
      ],
    });
    expect(job.Affinities).toEqual([
      { LTarget: "${node.class}", RTarget: "large", Operand: "=", Weight: 50 },
    ]);
    expect(job.Spreads).toEqual([
      { Attribute: "${node.datacenter}", Weight: 50, SpreadTarget: [{ Value: "dc1", Percent: 70 }] },
    ]);
    expect(job.TaskGroups[0]!.Spreads).toEqual([
      { Attribute: "${meta.rack}", Weight: 20, SpreadTarget: null },
    ]);
    expect(job.TaskGroups[0]!.Tasks[0]!.Affinities).toEqual([{ ...ok, Weight: -10 }]);
    expect(() => canonicalizeJob({ ID: "j", Affinities: [{ Weight: "high" }], TaskGroups: [] })).toThrow(
      /Job\.Affinities\[0\]\.Weight/,
    );
  });
});

describe("affinity and spread validation (Nomad's Affinity.Validate, Spread.Validate)", () => {
  it("accepts Nomad's examples, a missing weight included (Nomad's api makes it 50)", () => {
    expect(
      errorsOf(
        {
          Affinities: [{ LTarget: "${node.datacenter}", Operand: "=", RTarget: "us-west1" }],
          Spreads: [
            {
              Attribute: "${node.datacenter}",
              Weight: 100,
              SpreadTarget: [
                { Value: "us-east1", Percent: 60 },
                { Value: "us-west1", Percent: 40 },
              ],
            },
          ],
        },
        { Affinities: [ok], Spreads: [{ Attribute: "${meta.rack}" }] },
        { Affinities: [{ ...ok, Weight: -100 }] },
      ),
    ).toEqual([]);
  });

  it("names a bad affinity at the job, group and task level", () => {
    const errors = errorsOf(
      { Affinities: [{ ...ok, Weight: 0 }] },
      { Affinities: [ok, { ...ok, Operand: "is_set", Weight: 101 }] },
      { Affinities: [{ ...ok, LTarget: "", RTarget: "" }] },
    );
    expect(errors[0]).toBe(
      "Affinity 1 validation failed: 1 error occurred:\n\t* Affinity weight cannot be zero\n\n",
    );
    const group = errors.find((e) => e.startsWith("Task group g validation failed"))!;
    expect(group).toContain(
      'Affinity 2 validation failed: 2 errors occurred:\n\t* Unknown affinity operator "is_set"\n\t* Affinity weight must be within the range [-100,100]',
    );
    expect(group).toContain('Operator "=" requires an RTarget');
    expect(group).toContain("No LTarget provided but is required");
  });

  it("refuses spreads whose targets repeat or exceed 100%, and a weight out of (0, 100]", () => {
    const errors = errorsOf({
      Spreads: [
        {
          Attribute: "",
          Weight: 0,
          SpreadTarget: [
            { Value: "a", Percent: 70 },
            { Value: "a", Percent: 101 },
          ],
        },
      ],
    });
    expect(errors[0]).toBe(
      "Spread 1 validation failed: 5 errors occurred:\n" +
        "\t* Missing spread attribute\n" +
        "\t* Spread block must have a positive weight from 0 to 100\n" +
        '\t* Spread target value "a" already defined\n' +
        '\t* Spread target percentage for value "a" must be between 0 and 100\n' +
        "\t* Sum of spread target percentages must not be greater than 100%; got 171%\n\n",
    );
  });

  it("refuses affinities and spreads in a system job, and distinct_* constraints on a task", () => {
    const errors = errorsOf({ Type: "system", Affinities: [ok], Spreads: [{ Attribute: "${meta.rack}" }] });
    expect(errors).toContain("System jobs may not have an affinity block");
    expect(errors).toContain("System jobs may not have a spread block");
    const task = errorsOf(
      {},
      {},
      { Constraints: [{ LTarget: "${meta.rack}", Operand: "distinct_property", RTarget: "" }] },
    );
    expect(task.join("\n")).toContain("Constraint 1 has disallowed Operand at task level: distinct_property");
  });
});
// biome-ignore-end lint/suspicious/noTemplateCurlyInString: Nomad's interpolation syntax
