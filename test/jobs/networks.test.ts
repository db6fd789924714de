import { describe, expect, it } from "vitest";
import { canonicalizeJob, JobShapeError } from "../../src/jobs/canonicalize.ts";
import { jobValidationErrors } from "../../src/jobs/validate.ts";

const job = (group: Record<string, unknown>, resources: Record<string, unknown> = {}) => ({
  ID: "web",
  Datacenters: ["dc1"],
  TaskGroups: [
    {
      Name: "g",
      ...group,
      Tasks: [{ Name: "t", Driver: "docker", Resources: { CPU: 100, MemoryMB: 64, ...resources } }],
    },
  ],
});

describe("group and task networks as Nomad's agent converts and canonicalizes them", () => {
  it("fills Nomad's fields: no Device, MBits 0, empty port lists null, HostNetwork `default`", () => {
    const spec = canonicalizeJob(
      job({
        Networks: [
          {
            Mode: "bridge",
            Device: "eth9",
            ReservedPorts: [{ Label: "http", Value: 8080 }],
            DynamicPorts: [{ Label: "m", To: -1, HostNetwork: "public" }],
            DNS: { Servers: ["1.1.1.1"] },
          },
        ],
      }),
    );
    expect(spec.TaskGroups[0]!.Networks).toEqual([
      {
        Mode: "bridge",
        Device: "",
        CIDR: "",
        IP: "",
        Hostname: "",
        MBits: 0,
        DNS: { Servers: ["1.1.1.1"], Searches: null, Options: null },
        ReservedPorts: [{ Label: "http", Value: 8080, To: 0, HostNetwork: "default" }],
        DynamicPorts: [{ Label: "m", Value: 0, To: -1, HostNetwork: "public" }],
      },
    ]);
    const legacy = canonicalizeJob(job({}, { Networks: [{ MBits: 10, DynamicPorts: [{ Label: "x" }] }] }));
    expect(legacy.TaskGroups[0]!.Tasks[0]!.Resources.Networks).toEqual([
      {
        Mode: "",
        Device: "",
        CIDR: "",
        IP: "",
        Hostname: "",
        MBits: 10,
        DNS: null,
        ReservedPorts: null,
        DynamicPorts: [{ Label: "x", Value: 0, To: 0, HostNetwork: "default" }],
      },
    ]);
  });

  it("a port of the wrong type is a 400 naming the field", () => {
    expect(() =>
      canonicalizeJob(job({ Networks: [{ ReservedPorts: [{ Label: "a", Value: "80" }] }] })),
    ).toThrow(
      new JobShapeError(
        "Job.TaskGroups[0].Networks[0].ReservedPorts[0].Value must be an integer, not string",
      ),
    );
  });
});

describe("Nomad's TaskGroup.validateNetworks", () => {
  const errors = (group: Record<string, unknown>, resources: Record<string, unknown> = {}) =>
    jobValidationErrors(canonicalizeJob(job(group, resources)));

  it("refuses duplicate labels, a static port twice on a host network, ports and mappings out of range", () => {
    const out = errors(
      {
        Networks: [
          {
            ReservedPorts: [
              { Label: "http", Value: 8080 },
              { Label: "admin", Value: 8080 },
              { Label: "big", Value: 70_000 },
            ],
            DynamicPorts: [{ Label: "http" }, { Label: "neg", To: -2 }],
          },
        ],
      },
      {
        Networks: [
          {
            ReservedPorts: [
              { Label: "http", Value: 9000 },
              { Label: "t2", Value: 8080 },
            ],
          },
        ],
      },
    );
    expect(out).toEqual([
      "Task group g validation failed: 1 error occurred:\n" +
        "\t* Task group network validation failed: 6 errors occurred:\n" +
        "\t* Static port 8080 already reserved by taskgroup network:http\n" +
        "\t* Port big (70000) cannot be greater than 65535\n" +
        "\t* Port label http already in use by taskgroup network\n" +
        '\t* Port "neg" cannot be mapped to negative value -2\n' +
        "\t* Port label http already in use by taskgroup network\n" +
        "\t* Static port 8080 already reserved by taskgroup network:http\n\n\n\n",
    ]);
  });

  it("the same static port on two host networks is allowed", () => {
    expect(
      errors({
        Networks: [
          {
            ReservedPorts: [
              { Label: "a", Value: 80, HostNetwork: "public" },
              { Label: "b", Value: 80, HostNetwork: "private" },
            ],
          },
        ],
      }),
    ).toEqual([]);
  });
});
