import { afterEach, describe, expect, it } from "vitest";
import { Scenario, serviceJob } from "../../services/scheduler/scenario.ts";

const scenarios: Scenario[] = [];
async function start() {
  const s = await Scenario.start();
  scenarios.push(s);
  return s;
}
afterEach(async () => {
  for (const s of scenarios.splice(0)) await s.stop();
});

interface Stub {
  ID: string;
  Enabled: boolean;
  Type: string;
  Target: Record<string, string>;
  CreateIndex: number;
  ModifyIndex: number;
}

const list = async (s: Scenario, query = "") => {
  const res = await s.call(`/v1/scaling/policies${query}`);
  expect(res.status, res.text).toBe(200);
  return res.body as Stub[];
};

describe("scaling policies", () => {
  it("come from the groups' scaling blocks with Nomad's defaults, listed and read by ID", async () => {
    const s = await start();
    expect(await list(s)).toEqual([]);
    const reg = await s.register(
      serviceJob("web", 2, {}, { Scaling: { Max: 10, Policy: { key: "value" } } }),
    );
    const [stub, ...rest] = await list(s);
    expect(rest).toEqual([]);
    expect(stub).toEqual({
      ID: expect.stringMatching(/^[0-9a-f-]{36}$/),
      Enabled: true,
      Type: "horizontal",
      Target: { Namespace: "default", Job: "web", Group: "web" },
      CreateIndex: reg.JobModifyIndex,
      ModifyIndex: reg.JobModifyIndex,
    });
    const res = await s.call(`/v1/scaling/policy/${stub!.ID}`);
    expect(res.status).toBe(200);
    expect(res.index).toBe(reg.JobModifyIndex);
    expect(res.body).toEqual({
      ID: stub!.ID,
      Type: "horizontal",
      Target: { Namespace: "default", Job: "web", Group: "web" },
      Policy: { key: "value" },
      // Min defaults to the group's count.
      Min: 2,
      Max: 10,
      Enabled: true,
      CreateIndex: reg.JobModifyIndex,
      ModifyIndex: reg.JobModifyIndex,
    });
    const job = (await s.call("/v1/job/web")).body as { TaskGroups: { Scaling: { ID: string } }[] };
    expect(job.TaskGroups[0]!.Scaling.ID).toBe(stub!.ID);
    for (const path of ["/v1/scaling/policy/nope", "/v1/scaling/policy/"]) {
      expect((await s.call(path)).status).toBe(404);
    }
    expect((await s.call("/v1/scaling/policy/nope")).text).toBe("policy not found");
  });

  it("keep their ID across versions, change when the block does, and go with their group or job", async () => {
    const s = await start();
    const job = (scaling: unknown, extraGroup = false) => {
      const j = serviceJob("web", 2, {}, { Scaling: scaling });
      if (extraGroup) {
        j.TaskGroups.push({
          ...j.TaskGroups[0]!,
          Name: "db",
          Scaling: { Max: 3 },
        } as (typeof j.TaskGroups)[0]);
      }
      return j;
    };
    const first = await s.register(job({ Max: 10 }, true));
    const [db, web] = (await list(s)).sort((a, b) => (a.Target.Group! < b.Target.Group! ? -1 : 1));
    // A change elsewhere in the job: the policies stay as they are.
    await s.register({ ...job({ Max: 10 }, true), Meta: { v: "2" } });
    expect((await list(s)).map((p) => [p.ID, p.ModifyIndex]).sort()).toEqual(
      [
        [db!.ID, first.JobModifyIndex],
        [web!.ID, first.JobModifyIndex],
      ].sort(),
    );
    // The web block changes, the db group goes.
    const third = await s.register(job({ Max: 20 }));
    const now = await list(s);
    expect(now).toEqual([{ ...web!, ModifyIndex: third.JobModifyIndex }]);
    expect((await s.call(`/v1/scaling/policy/${db!.ID}`)).status).toBe(404);
    // A stop keeps them; a purge removes them.
    expect((await s.call("/v1/job/web", "DELETE")).status).toBe(200);
    expect(await list(s)).toHaveLength(1);
    expect((await s.call("/v1/job/web?purge=true", "DELETE")).status).toBe(200);
    expect(await list(s)).toEqual([]);
  });

  it("list by job, type, ID prefix and namespace", async () => {
    const s = await start();
    expect((await s.call("/v1/namespace/other", "PUT", { Name: "other" })).status).toBe(200);
    await s.register(serviceJob("a", 1, {}, { Scaling: { Max: 2 } }));
    await s.register(serviceJob("b", 1, {}, { Scaling: { Max: 2 } }));
    await s.register(serviceJob("c", 1, { Namespace: "other" }, { Scaling: { Max: 2 } }));
    expect((await list(s)).map((p) => p.Target.Job)).toEqual(["a", "b"]);
    expect((await list(s, "?job=b")).map((p) => p.Target.Job)).toEqual(["b"]);
    expect(await list(s, "?type=vertical")).toEqual([]);
    expect(await list(s, "?job=a&type=horizontal")).toHaveLength(1);
    expect((await list(s, "?namespace=other")).map((p) => p.Target.Job)).toEqual(["c"]);
    const all = await list(s, "?namespace=*");
    expect(all.map((p) => p.Target.Job).sort()).toEqual(["a", "b", "c"]);
    const one = all[0]!;
    expect((await list(s, `?namespace=*&prefix=${one.ID.slice(0, 8)}`)).map((p) => p.ID)).toEqual([one.ID]);
  });

  it("are validated as Nomad validates them, and refused in system jobs", async () => {
    const s = await start();
    const before = s.server.log.lastIndex();
    const cases: [unknown, RegExp][] = [
      [{ Min: 1 }, /Scaling policy invalid: maximum count must be specified and non-negative/],
      [{ Min: 5, Max: 3 }, /Scaling policy invalid: maximum count must not be less than minimum count/],
      [
        { Min: 1, Max: 1 },
        /Scaling policy invalid: task group count must not be greater than maximum count in scaling policy/,
      ],
      [{ Max: 5, Type: "vertical_cpu" }, /scaling policy type "vertical_cpu" is not valid/],
      [{ Max: "5" }, /Job\.TaskGroups\[0\]\.Scaling\.Max must be an integer, not string/],
    ];
    for (const [scaling, message] of cases) {
      const res = await s.call("/v1/jobs", "PUT", { Job: serviceJob("web", 2, {}, { Scaling: scaling }) });
      expect(res.status, JSON.stringify(scaling)).toBe(400);
      expect(res.text).toMatch(message);
    }
    const sys = await s.call("/v1/jobs", "PUT", {
      Job: { ...serviceJob("sys", 1, {}, { Scaling: { Max: 1 } }), Type: "system" },
    });
    expect([sys.status, sys.text]).toEqual([
      400,
      "Task groups with job type system do not support scaling blocks",
    ]);
    expect(s.server.log.lastIndex()).toBe(before);
  });
});
