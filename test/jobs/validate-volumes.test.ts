import { afterAll, describe, expect, it } from "vitest";
import { canonicalizeJob } from "../../src/jobs/canonicalize.ts";
import { HclParser } from "../../src/jobs/hcl/hcl-parser.ts";
import { parseJobspec } from "../../src/jobs/hcl/parse-jobspec.ts";
import { jobValidationErrors } from "../../src/jobs/validate.ts";
import { requestedVolumeID } from "../../src/jobs/validate-volumes.ts";
import type { JobSpec } from "../../streams/jobs.ts";

const parser = new HclParser();
afterAll(() => parser.close());

function jsonJob(volumes: Record<string, unknown>, group: Record<string, unknown> = {}, type = "service") {
  return canonicalizeJob({
    ID: "web",
    Type: type,
    TaskGroups: [
      {
        Name: "g",
        Volumes: volumes,
        Tasks: [
          {
            Name: "t",
            Driver: "docker",
            VolumeMounts: [{ Volume: "data", Destination: "/srv" }],
          },
        ],
        ...group,
      },
    ],
  });
}

const csi = (extra: Record<string, unknown> = {}) => ({
  Name: "data",
  Type: "csi",
  Source: "pg",
  AccessMode: "single-node-writer",
  AttachmentMode: "file-system",
  ...extra,
});

/** The group's volume errors, as Job.Validate words them. */
function volumeErrors(job: JobSpec): string[] {
  return jobValidationErrors(job).filter((e) => e.includes("olume"));
}

describe("CSI volumes in job specs", () => {
  it("parses a group's volume block and a task's volume_mount from HCL, as Nomad's jobspec2", async () => {
    const parsed = await parseJobspec(
      parser,
      `job "web" {
  group "g" {
    count = 2
    volume "data" {
      type            = "csi"
      source          = "pg"
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
      read_only       = false
      per_alloc       = true
      mount_options {
        fs_type     = "ext4"
        mount_flags = ["noatime"]
      }
    }
    task "t" {
      driver = "docker"
      volume_mount {
        volume      = "data"
        destination = "/srv"
      }
    }
  }
}`,
      "",
    );
    const job = canonicalizeJob(parsed);
    const tg = job.TaskGroups[0]!;
    expect(tg.Volumes).toEqual({
      data: {
        Name: "data",
        Type: "csi",
        Source: "pg",
        ReadOnly: false,
        AccessMode: "single-node-writer",
        AttachmentMode: "file-system",
        MountOptions: { FSType: "ext4", MountFlags: ["noatime"] },
        PerAlloc: true,
      },
    });
    // Nomad's api VolumeMount.Canonicalize.
    expect(tg.Tasks[0]!.VolumeMounts).toEqual([
      { Volume: "data", Destination: "/srv", ReadOnly: false, PropagationMode: "private" },
    ]);
    expect(jobValidationErrors(job)).toEqual([]);
  });

  it("takes the JSON form with Nomad's fields only, dropping requests of a type Nomad's agent drops", () => {
    const job = jsonJob({
      data: { ...csi(), Unknown: 1 },
      odd: { Name: "odd", Type: "nfs", Source: "x" },
      gone: null,
    });
    expect(job.TaskGroups[0]!.Volumes).toEqual({
      data: {
        Name: "data",
        Type: "csi",
        Source: "pg",
        ReadOnly: false,
        AccessMode: "single-node-writer",
        AttachmentMode: "file-system",
        MountOptions: null,
        PerAlloc: false,
      },
    });
    expect(() => jsonJob({ data: { ...csi(), ReadOnly: "yes" } })).toThrow(
      "Job.TaskGroups[0].Volumes.data.ReadOnly must be a boolean, not string",
    );
  });

  it("refuses a CSI request without a source, an access mode or an attachment mode, naming the volume", () => {
    const errors = volumeErrors(jsonJob({ data: csi({ Source: "", AccessMode: "", AttachmentMode: "" }) }));
    expect(errors).toEqual([
      "Task group g validation failed: 1 error occurred:\n\t* Task group volume validation for data failed: 3 errors occurred:\n\t* volume has an empty source\n\t* CSI volumes must have an attachment mode\n\t* CSI volumes must have an access mode\n\n\n\n",
    ]);
  });

  it("applies Nomad's rules on modes, counts, per_alloc and mount options", () => {
    const one = (v: Record<string, unknown>, group: Record<string, unknown> = {}, type = "service") =>
      volumeErrors(jsonJob({ data: csi(v) }, group, type)).join("\n");
    expect(one({ AccessMode: "single-node-reader-only" })).toContain(
      "single-node-reader-only volumes must be read-only",
    );
    expect(one({ AccessMode: "multi-node-reader-only" })).toContain(
      "multi-node-reader-only volumes must be read-only",
    );
    expect(one({}, { Count: 2 })).toContain(
      "volume with single-node-writer access mode allows only one reader or writer",
    );
    expect(one({ PerAlloc: true }, { Count: 2 })).toBe("");
    expect(one({ AccessMode: "multi-node-single-writer" }, { Count: 3 })).toContain(
      "volume with multi-node-single-writer access mode allows only one writer",
    );
    expect(one({ AccessMode: "multi-node-single-writer", ReadOnly: true }, { Count: 3 })).toBe("");
    expect(one({ AccessMode: "multi-node-multi-writer" }, { Count: 3 })).toBe("");
    expect(one({ PerAlloc: true }, { Update: { Canary: 1 } })).toContain(
      "volume cannot be per_alloc when canaries are in use",
    );
    expect(one({ PerAlloc: true }, {}, "system")).toContain(
      "volume cannot be per_alloc for system or sysbatch jobs",
    );
    expect(one({ AttachmentMode: "block-device", MountOptions: { FSType: "ext4" } })).toContain(
      "block devices cannot have mount options",
    );
    expect(
      volumeErrors(
        jsonJob({ data: { Name: "data", Type: "host", Source: "d", AccessMode: "single-node-writer" } }),
      ).join(""),
    ).toContain("host volumes cannot have an access mode");
  });

  it("refuses a volume_mount of a volume the group does not define, or with an unknown propagation mode", () => {
    const job = canonicalizeJob({
      ID: "web",
      TaskGroups: [
        {
          Name: "g",
          Volumes: { data: csi() },
          Tasks: [
            {
              Name: "t",
              Driver: "docker",
              VolumeMounts: [
                { Volume: "nope", Destination: "/a" },
                { Volume: "data", Destination: "/b", PropagationMode: "sideways" },
                { Destination: "/c" },
              ],
            },
          ],
        },
      ],
    });
    // A mount that names no volume is dropped, as Nomad's agent drops it.
    expect(job.TaskGroups[0]!.Tasks[0]!.VolumeMounts).toHaveLength(2);
    expect(volumeErrors(job).join("")).toContain(
      'Task t validation failed: 2 errors occurred:\n\t* Volume Mount (0) references undefined volume nope\n\t* Volume Mount (1) has an invalid propagation mode: "sideways"',
    );
  });

  it("names a per_alloc volume after the allocation's index", () => {
    const v = jsonJob({ data: csi({ PerAlloc: true }) }).TaskGroups[0]!.Volumes!.data!;
    expect(requestedVolumeID(v, "web.g[3]")).toBe("pg[3]");
    expect(requestedVolumeID({ ...v, PerAlloc: false }, "web.g[3]")).toBe("pg");
  });
});
