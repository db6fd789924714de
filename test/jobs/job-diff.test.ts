import { describe, expect, it } from "vitest";
import { canonicalizeJob } from "../../src/jobs/canonicalize.ts";
import { toGo } from "../../src/jobs/go-values.ts";
import {
  type DiffType,
  diffJobs,
  type FieldDiff,
  JobDiffError,
  type ObjectDiff,
  taskDiff,
  taskGroupDiff,
} from "../../src/jobs/job-diff.ts";
import { SERVICE, TASK, TASK_GROUP } from "../../src/jobs/job-diff-types.ts";
import { serviceDiffs } from "../../src/jobs/service-diff.ts";

/**
 * The expected outputs below are Nomad v1.6.1's (nomad/structs/diff_test.go
 * cases, given here as JSON jobs), field for field and in Nomad's order.
 */

const f = (Type: DiffType, Name: string, Old: string, New: string): FieldDiff => ({
  Type,
  Name,
  Old,
  New,
  Annotations: null,
});
const o = (
  Type: DiffType,
  Name: string,
  Fields: FieldDiff[] | null,
  Objects: ObjectDiff[] | null = null,
): ObjectDiff => ({ Type, Name, Fields, Objects });
const group = (v: unknown) => (v === null ? null : toGo(v, TASK_GROUP));
const task = (v: unknown) => (v === null ? null : toGo(v, TASK));

describe("diffJobs: the job's own fields", () => {
  const before = {
    Region: "foo",
    ID: "foo",
    Name: "foo",
    Type: "batch",
    Priority: 10,
    AllAtOnce: true,
    Meta: { foo: "bar" },
  };

  it("is None, with nothing listed, for two absent jobs and for equal jobs", () => {
    expect(diffJobs(null, null, false)).toEqual({
      Type: "None",
      ID: "",
      Fields: null,
      Objects: null,
      TaskGroups: null,
    });
    expect(diffJobs(before, { ...before }, true)).toEqual({
      Type: "None",
      ID: "foo",
      Fields: null,
      Objects: null,
      TaskGroups: null,
    });
  });

  it("refuses two different jobs with Nomad's error", () => {
    expect(() => diffJobs({ ID: "foo" }, { ID: "bar" }, false)).toThrow(JobDiffError);
    expect(() => diffJobs({ ID: "foo" }, { ID: "bar" }, false)).toThrow(
      'can not diff jobs with different IDs: "foo" and "bar"',
    );
  });

  it("lists each edited field, sorted by name, Meta entries as Meta[key]", () => {
    const after = {
      ...before,
      Region: "bar",
      Name: "bar",
      Type: "system",
      Priority: 100,
      AllAtOnce: false,
      Meta: { foo: "baz" },
    };
    expect(diffJobs(before, after, false)).toEqual({
      Type: "Edited",
      ID: "foo",
      Fields: [
        f("Edited", "AllAtOnce", "true", "false"),
        f("Edited", "Meta[foo]", "bar", "baz"),
        f("Edited", "Name", "foo", "bar"),
        f("Edited", "Priority", "10", "100"),
        f("Edited", "Region", "foo", "bar"),
        f("Edited", "Type", "batch", "system"),
      ],
      Objects: null,
      TaskGroups: null,
    });
  });

  it("shows an added job's every non-empty field (zero numbers and false included)", () => {
    expect(diffJobs(null, before, false).Fields).toEqual([
      f("Added", "AllAtOnce", "", "true"),
      f("Added", "Dispatched", "", "false"),
      f("Added", "Meta[foo]", "", "bar"),
      f("Added", "Name", "", "foo"),
      f("Added", "Priority", "", "10"),
      f("Added", "Region", "", "foo"),
      f("Added", "Stop", "", "false"),
      f("Added", "Type", "", "batch"),
    ]);
    const deleted = diffJobs(before, null, false);
    expect(deleted.Type).toBe("Deleted");
    expect(deleted.Fields?.map((x) => [x.Type, x.Name, x.Old, x.New])).toContainEqual([
      "Deleted",
      "Priority",
      "10",
      "",
    ]);
  });

  it("ignores what the server decides and the secrets (Version, Status, indexes, tokens...)", () => {
    const stored = {
      ...before,
      Version: 3,
      Stable: true,
      Status: "running",
      StatusDescription: "x",
      SubmitTime: 123,
      CreateIndex: 5,
      ModifyIndex: 9,
      JobModifyIndex: 9,
      VaultToken: "s.secret",
      NomadTokenID: "abc",
    };
    expect(diffJobs(stored, before, true).Type).toBe("None");
  });

  it("diffs Meta as a map: entries added and deleted", () => {
    expect(
      diffJobs({ Meta: { foo: "foo", bar: "bar" } }, { Meta: { bar: "bar", baz: "baz" } }, false),
    ).toEqual({
      Type: "Edited",
      ID: "",
      Fields: [f("Added", "Meta[baz]", "", "baz"), f("Deleted", "Meta[foo]", "foo", "")],
      Objects: null,
      TaskGroups: null,
    });
  });
});

describe("diffJobs: sets and nested objects", () => {
  it("diffs datacenters as a set, with the unchanged ones in context", () => {
    expect(
      diffJobs({ Datacenters: ["foo", "bar"] }, { Datacenters: ["foo", "bar", "baz"] }, true).Objects,
    ).toEqual([
      o("Added", "Datacenters", [
        f("Added", "Datacenters", "", "baz"),
        f("None", "Datacenters", "bar", "bar"),
        f("None", "Datacenters", "foo", "foo"),
      ]),
    ]);
    expect(diffJobs({ Datacenters: ["foo", "bar"] }, { Datacenters: ["bar", "foo"] }, true).Type).toBe(
      "None",
    );
    expect(diffJobs({ Datacenters: ["foo", "bar"] }, { Datacenters: ["baz", "bar"] }, false).Objects).toEqual(
      [
        o("Edited", "Datacenters", [
          f("Added", "Datacenters", "", "baz"),
          f("Deleted", "Datacenters", "foo", ""),
        ]),
      ],
    );
  });

  it("shows an edited periodic block with its unchanged fields in context", () => {
    const periodic = {
      Enabled: false,
      Spec: "*/15 * * * * *",
      SpecType: "foo",
      ProhibitOverlap: false,
      TimeZone: "Europe/Minsk",
    };
    const diff = diffJobs(
      { Periodic: periodic },
      { Periodic: { ...periodic, Enabled: true, Spec: "* * * * * *" } },
      true,
    );
    expect(diff.Objects).toEqual([
      o("Edited", "Periodic", [
        f("Edited", "Enabled", "false", "true"),
        f("None", "ProhibitOverlap", "false", "false"),
        f("Edited", "Spec", "*/15 * * * * *", "* * * * * *"),
        f("None", "SpecType", "foo", "foo"),
        f("None", "TimeZone", "Europe/Minsk", "Europe/Minsk"),
      ]),
    ]);
    // Added, a nil block's fields count as "": false is shown as added.
    expect(diffJobs({}, { Periodic: periodic }, false).Objects?.[0]?.Fields?.[0]).toEqual(
      f("Added", "Enabled", "", "false"),
    );
  });

  it("diffs constraints as a set: an edited constraint is one added and one deleted (Added first)", () => {
    const c = (x: string) => ({ LTarget: x, RTarget: x, Operand: x });
    expect(
      diffJobs({ Constraints: [c("foo"), c("bar")] }, { Constraints: [c("foo"), c("baz")] }, false).Objects,
    ).toEqual([
      o("Added", "Constraint", [
        f("Added", "LTarget", "", "baz"),
        f("Added", "Operand", "", "baz"),
        f("Added", "RTarget", "", "baz"),
      ]),
      o("Deleted", "Constraint", [
        f("Deleted", "LTarget", "bar", ""),
        f("Deleted", "Operand", "bar", ""),
        f("Deleted", "RTarget", "bar", ""),
      ]),
    ]);
  });

  it("matches groups by name and sorts them by name", () => {
    const g = (Name: string, Count: number) => ({ Name, Count });
    const diff = diffJobs(
      { TaskGroups: [g("foo", 1), g("bar", 1), g("baz", 1)] },
      { TaskGroups: [g("bar", 1), g("baz", 2), g("bam", 1)] },
      false,
    );
    const empty = { Objects: null, Tasks: null, Updates: null };
    expect(diff).toEqual({
      Type: "Edited",
      ID: "",
      Fields: null,
      Objects: null,
      TaskGroups: [
        { Type: "Added", Name: "bam", Fields: [f("Added", "Count", "", "1")], ...empty },
        { Type: "None", Name: "bar", Fields: null, ...empty },
        { Type: "Edited", Name: "baz", Fields: [f("Edited", "Count", "1", "2")], ...empty },
        { Type: "Deleted", Name: "foo", Fields: [f("Deleted", "Count", "1", "")], ...empty },
      ],
    });
  });
});

describe("taskGroupDiff", () => {
  it("shows duration pointers (shutdown delay, client disconnect) in nanoseconds when both groups exist", () => {
    expect(
      taskGroupDiff(group({ ShutdownDelay: 30e9 }), group({ ShutdownDelay: 5e9 }), false).Fields,
    ).toEqual([f("Edited", "ShutdownDelay", "30000000000", "5000000000")]);
    expect(
      taskGroupDiff(group({ Name: "foo" }), group({ Name: "foo", MaxClientDisconnect: 20e9 }), false).Fields,
    ).toEqual([f("Added", "MaxClientDisconnect", "", "20000000000")]);
  });

  it("diffs the update block without Stagger, and marks an edited group Edited even for fields it does not list", () => {
    const update = { MaxParallel: 1, Stagger: 1e9, HealthCheck: "checks" };
    const diff = taskGroupDiff(
      group({ Name: "g", Update: update, Spreads: [{ Attribute: "a" }] }),
      group({
        Name: "g",
        Update: { ...update, Stagger: 2e9, MaxParallel: 2 },
        Spreads: [{ Attribute: "b" }],
      }),
      false,
    );
    expect(diff.Type).toBe("Edited");
    expect(diff.Objects).toEqual([o("Edited", "Update", [f("Edited", "MaxParallel", "1", "2")])]);
  });

  it("refuses two groups with different names", () => {
    expect(() => taskGroupDiff(group({ Name: "a" }), group({ Name: "b" }), false)).toThrow(
      'can not diff task groups with different names: "a" and "b"',
    );
  });

  it("diffs volumes by name with their mount options", () => {
    const diff = taskGroupDiff(
      group({ Name: "g", Volumes: { data: { Name: "data", Type: "csi", Source: "a" } } }),
      group({
        Name: "g",
        Volumes: { data: { Name: "data", Type: "csi", Source: "b", MountOptions: { FSType: "ext4" } } },
      }),
      false,
    );
    expect(diff.Objects).toEqual([
      o(
        "Edited",
        "Volume",
        [f("Edited", "Source", "a", "b")],
        [o("Added", "MountOptions", [f("Added", "FSType", "", "ext4")])],
      ),
    ]);
  });
});

describe("taskDiff", () => {
  it("diffs networks as a set by value, ports by label (a dynamic port's Value left out)", () => {
    const net = (x: string, mbits: number, value: number, dyn: string, to: number) => ({
      Device: x,
      CIDR: x,
      IP: x,
      MBits: mbits,
      ReservedPorts: [{ Label: "foo", Value: value }],
      DynamicPorts: [{ Label: dyn, To: to, Value: 12345 }],
    });
    const diff = taskDiff(
      task({ Resources: { Networks: [net("foo", 100, 80, "bar", 8080)] } }),
      task({ Resources: { Networks: [net("bar", 200, 81, "baz", 8081)] } }),
      false,
    );
    expect(diff.Objects).toEqual([
      o("Edited", "Resources", null, [
        o(
          "Added",
          "Network",
          [f("Added", "MBits", "", "200")],
          [
            o("Added", "Static Port", [
              f("Added", "Label", "", "foo"),
              f("Added", "To", "", "0"),
              f("Added", "Value", "", "81"),
            ]),
            o("Added", "Dynamic Port", [f("Added", "Label", "", "baz"), f("Added", "To", "", "8081")]),
          ],
        ),
        o(
          "Deleted",
          "Network",
          [f("Deleted", "MBits", "100", "")],
          [
            o("Deleted", "Static Port", [
              f("Deleted", "Label", "foo", ""),
              f("Deleted", "To", "0", ""),
              f("Deleted", "Value", "80", ""),
            ]),
            o("Deleted", "Dynamic Port", [f("Deleted", "Label", "bar", ""), f("Deleted", "To", "8080", "")]),
          ],
        ),
      ]),
    ]);
  });

  it("diffs the driver config as its own object, flattened whole, numbers as Go prints float64", () => {
    const diff = taskDiff(
      task({ Name: "t", Config: { foo: 1, bar: "baz", bam: ["a", "b"], baz: { a: 1, b: 2 }, big: 1e6 } }),
      task({
        Name: "t",
        Config: { foo: 2, bar: "baz", bam: ["a", "c", "d"], baz: { a: 1, b: 2 }, big: 2e6 },
      }),
      true,
    );
    expect(diff).toEqual({
      Type: "Edited",
      Name: "t",
      Fields: null,
      Objects: [
        o("Edited", "Config", [
          f("None", "bam[0]", "a", "a"),
          f("Edited", "bam[1]", "b", "c"),
          f("Added", "bam[2]", "", "d"),
          f("None", "bar", "baz", "baz"),
          f("None", "baz[a]", "1", "1"),
          f("None", "baz[b]", "2", "2"),
          f("Edited", "big", "1e+06", "2e+06"),
          f("Edited", "foo", "1", "2"),
        ]),
      ],
      Annotations: null,
    });
  });

  it("matches templates by destination, with Uid/Gid and the wait block (named Template, as Nomad)", () => {
    const tmpl = {
      SourcePath: "foo",
      DestPath: "bar",
      EmbeddedTmpl: "baz",
      ChangeMode: "bam",
      ChangeSignal: "SIGHUP",
      Splay: 1,
      Perms: "0644",
      Uid: 1001,
      Gid: 21,
      Wait: { Min: 5e9, Max: 5e9 },
    };
    const other = { SourcePath: "foo2", DestPath: "bar2", Uid: 1000, Wait: { Min: 5e9 } };
    const diff = taskDiff(
      task({ Templates: [tmpl, other] }),
      task({
        Templates: [{ ...tmpl, EmbeddedTmpl: "baz new", ErrMissingKey: true, Wait: { Min: 5e9, Max: 10e9 } }],
      }),
      false,
    );
    expect(diff.Objects).toEqual([
      o(
        "Edited",
        "Template",
        [f("Edited", "EmbeddedTmpl", "baz", "baz new"), f("Edited", "ErrMissingKey", "false", "true")],
        [o("Edited", "Template", [f("Edited", "Max", "5000000000", "10000000000")])],
      ),
      o(
        "Deleted",
        "Template",
        [
          f("Deleted", "DestPath", "bar2", ""),
          f("Deleted", "Envvars", "false", ""),
          f("Deleted", "ErrMissingKey", "false", ""),
          f("Deleted", "SourcePath", "foo2", ""),
          f("Deleted", "Splay", "0", ""),
          f("Deleted", "Uid", "1000", ""),
          f("Deleted", "VaultGrace", "0", ""),
        ],
        // The wait block is flattened whole: its unset Max prints "nil".
        [o("Deleted", "Template", [f("Deleted", "Max", "nil", ""), f("Deleted", "Min", "5000000000", "")])],
      ),
    ]);
  });

  it("lists its own primitive fields and Env/Meta entries, but not Name, Config or the lifecycle", () => {
    const diff = taskDiff(
      task({
        Name: "t",
        Driver: "docker",
        KillTimeout: 5e9,
        Env: { A: "1" },
        Lifecycle: { Hook: "prestart" },
      }),
      task({ Name: "t", Driver: "exec", KillTimeout: 10e9, Env: { A: "2" } }),
      false,
    );
    expect(diff.Type).toBe("Edited");
    expect(diff.Fields).toEqual([
      f("Edited", "Driver", "docker", "exec"),
      f("Edited", "Env[A]", "1", "2"),
      f("Edited", "KillTimeout", "5000000000", "10000000000"),
    ]);
  });
});

describe("serviceDiffs", () => {
  const svc = (v: unknown) => toGo(v, SERVICE);

  it("matches a service by name and port label, so a renamed port is an edit", () => {
    const diff = serviceDiffs(
      [svc({ Name: "webapp", PortLabel: "http" }), svc({ Name: "api", PortLabel: "grpc" })],
      [svc({ Name: "api", PortLabel: "grpc" }), svc({ Name: "webapp", PortLabel: "https" })],
      false,
    );
    expect(diff).toEqual([o("Edited", "Service", [f("Edited", "PortLabel", "http", "https")])]);
  });

  it("diffs checks by name with their headers, and tags as sets", () => {
    const diff = serviceDiffs(
      [svc({ Name: "web", Tags: ["a"], Checks: [{ Name: "alive", Type: "http", Interval: 1e9 }] })],
      [
        svc({
          Name: "web",
          Tags: ["a", "b"],
          Checks: [{ Name: "alive", Type: "http", Interval: 2e9, Header: { Foo: ["bar"] } }],
        }),
      ],
      false,
    );
    expect(diff).toEqual([
      o("Edited", "Service", null, [
        o("Added", "Tags", [f("Added", "Tags", "", "b")]),
        o(
          "Edited",
          "Check",
          [f("Edited", "Interval", "1000000000", "2000000000")],
          [o("Added", "Header", [f("Added", "Foo[0]", "", "bar")])],
        ),
      ]),
    ]);
  });

  it("shows a gateway proxy's connect timeout as Go prints a duration", () => {
    const gw = (timeout: number) =>
      svc({ Name: "gw", Connect: { Gateway: { Proxy: { ConnectTimeout: timeout } } } });
    const diff = serviceDiffs([gw(1e9)], [gw(1.5e9)], false);
    expect(diff?.[0]?.Objects?.[0]?.Objects?.[0]?.Objects?.[0]).toEqual(
      o("Edited", "Proxy", [f("Edited", "ConnectTimeout", "1s", "1.5s")]),
    );
  });
});

describe("diffJobs on canonicalized jobs (what the plan and versions endpoints diff)", () => {
  const spec = (count: number, image: string) =>
    canonicalizeJob({
      ID: "web",
      Datacenters: ["dc1"],
      TaskGroups: [
        {
          Name: "web",
          Count: count,
          Tasks: [
            { Name: "server", Driver: "docker", Config: { image }, Resources: { CPU: 500, MemoryMB: 256 } },
          ],
        },
      ],
    });

  it("finds only the count and the image", () => {
    const diff = diffJobs(spec(2, "nginx:1"), spec(3, "nginx:2"), true);
    expect(diff).toEqual({
      Type: "Edited",
      ID: "web",
      Fields: null,
      Objects: null,
      TaskGroups: [
        {
          Type: "Edited",
          Name: "web",
          Fields: [f("Edited", "Count", "2", "3")],
          Objects: null,
          Tasks: [
            {
              Type: "Edited",
              Name: "server",
              Fields: null,
              Objects: [o("Edited", "Config", [f("Edited", "image", "nginx:1", "nginx:2")])],
              Annotations: null,
            },
          ],
          Updates: null,
        },
      ],
    });
  });

  it("shows a new job as Added, down to its tasks' resources", () => {
    const diff = diffJobs(null, spec(1, "nginx"), true);
    expect(diff.Type).toBe("Added");
    expect(diff.Fields).toContainEqual(f("Added", "Priority", "", "50"));
    const tg = diff.TaskGroups?.[0];
    expect(tg).toMatchObject({ Type: "Added", Name: "web" });
    expect(tg?.Tasks?.[0]?.Objects?.find((x) => x.Name === "Resources")?.Fields).toContainEqual(
      f("Added", "CPU", "", "500"),
    );
  });
});
