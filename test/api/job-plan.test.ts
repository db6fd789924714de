import { afterEach, describe, expect, it } from "vitest";
import { Scenario, serviceJob } from "../services/scheduler/scenario.ts";

const scenarios: Scenario[] = [];
async function start(nodes: number) {
  const s = await Scenario.start();
  scenarios.push(s);
  for (let i = 0; i < nodes; i++) await s.addNode();
  return s;
}
afterEach(async () => {
  for (const s of scenarios.splice(0)) await s.stop();
});

interface PlanAnswer {
  Diff: {
    Type: string;
    ID: string;
    Fields: unknown[] | null;
    TaskGroups: {
      Type: string;
      Name: string;
      Fields: { Name: string; Annotations: string[] | null }[] | null;
      Tasks: { Type: string; Annotations: string[] | null; Objects: unknown[] | null }[] | null;
      Updates: Record<string, number> | null;
    }[];
  } | null;
  CreatedEvals: Record<string, unknown>[] | null;
  FailedTGAllocs: Record<string, unknown> | null;
  JobModifyIndex: number;
  Annotations: { DesiredTGUpdates: Record<string, unknown> };
  NextPeriodicLaunch: string;
  Warnings: string;
}

const noUpdates = { Update: { MaxParallel: 0 } };

describe("PUT /v1/job/:id/plan with Diff", () => {
  it("answers Nomad's field-level diff of the stored job, annotated with what the plan would do", async () => {
    const s = await start(2);
    const registered = await s.register(serviceJob("web", 2, noUpdates));
    await s.idle();
    const before = s.server.log.lastIndex();
    const next = serviceJob("web", 3, noUpdates);
    (next.TaskGroups[0]!.Tasks[0]!.Config as Record<string, unknown>).image = "nginx:2";
    const res = await s.call("/v1/job/web/plan", "PUT", { Job: next, Diff: true });
    expect(res.status, res.text).toBe(200);
    const plan = res.body as PlanAnswer;
    expect(plan.JobModifyIndex).toBe(registered.JobModifyIndex);
    expect(plan.Diff).toEqual({
      Type: "Edited",
      ID: "web",
      Fields: null,
      Objects: null,
      TaskGroups: [
        {
          Type: "Edited",
          Name: "web",
          Fields: [{ Type: "Edited", Name: "Count", Old: "2", New: "3", Annotations: ["forces create"] }],
          Objects: null,
          Tasks: [
            {
              Type: "Edited",
              Name: "server",
              Fields: null,
              Objects: [
                {
                  Type: "Edited",
                  Name: "Config",
                  Fields: [
                    { Type: "Edited", Name: "image", Old: "nginx", New: "nginx:2", Annotations: null },
                  ],
                  Objects: null,
                },
              ],
              Annotations: ["forces create/destroy update"],
            },
          ],
          Updates: { create: 1, "create/destroy update": 2 },
        },
      ],
    });
    expect(plan.Annotations.DesiredTGUpdates.web).toMatchObject({ Place: 1, DestructiveUpdate: 2 });
    expect(plan.CreatedEvals).toBeNull();
    expect(plan.FailedTGAllocs).toBeNull();
    expect(plan.NextPeriodicLaunch).toBe("0001-01-01T00:00:00Z");
    expect(plan.Warnings).toBe("");

    const same = (
      await s.call("/v1/job/web/plan", "PUT", { Job: serviceJob("web", 2, noUpdates), Diff: true })
    ).body as PlanAnswer;
    expect(same.Diff).toMatchObject({ Type: "None", Fields: null, Objects: null });
    expect(same.Diff?.TaskGroups[0]).toMatchObject({ Type: "None", Updates: { ignore: 2 } });

    const withoutDiff = (await s.call("/v1/job/web/plan", "PUT", { Job: next })).body as PlanAnswer;
    expect(withoutDiff.Diff).toBeNull();
    expect(s.server.log.lastIndex()).toBe(before);
  });

  it("shows a new job as Added, and the blocked evaluation that its failed placements would create", async () => {
    const s = await start(0);
    const res = await s.call("/v1/job/api/plan", "PUT", { Job: serviceJob("api", 2), Diff: true });
    expect(res.status, res.text).toBe(200);
    const plan = res.body as PlanAnswer;
    expect(plan.JobModifyIndex).toBe(0);
    expect(plan.Diff?.Type).toBe("Added");
    expect(plan.Diff?.Fields).toContainEqual({
      Type: "Added",
      Name: "Type",
      Old: "",
      New: "service",
      Annotations: null,
    });
    expect(plan.Diff?.TaskGroups[0]).toMatchObject({
      Type: "Added",
      Name: "web",
      Fields: [{ Name: "Count", Annotations: ["forces create"] }],
      Tasks: [{ Type: "Added", Annotations: ["forces create"] }],
      Updates: { create: 2 },
    });
    expect(plan.FailedTGAllocs).toHaveProperty("web");
    expect(plan.CreatedEvals).toHaveLength(1);
    const blocked = plan.CreatedEvals![0]!;
    expect(blocked).toMatchObject({
      Namespace: "default",
      JobID: "api",
      Type: "service",
      TriggeredBy: "queued-allocs",
      Status: "blocked",
      StatusDescription: "created to place remaining allocations",
      FailedTGAllocs: { web: plan.FailedTGAllocs!.web },
      CreateIndex: 0,
      ModifyIndex: 0,
    });
    expect(blocked.ID).toMatch(/^[0-9a-f-]{36}$/);
    expect(blocked.PreviousEval).toMatch(/^[0-9a-f-]{36}$/);
    expect(blocked.PreviousEval).not.toBe(blocked.ID);
    // A dry run: neither the job nor the evaluation exists afterwards.
    expect((await s.call("/v1/job/api")).status).toBe(404);
    expect((await s.call(`/v1/evaluation/${blocked.ID}`)).status).toBe(404);
  });

  it("answers when an enabled periodic job would next launch, in its time zone", async () => {
    const s = await start(1);
    const periodic = {
      ...serviceJob("nightly", 1),
      Type: "batch",
      Periodic: { Enabled: true, SpecType: "cron", Spec: "0 3 * * *", TimeZone: "Europe/Berlin" },
    };
    // The scenario's clock stands at 2025-11-22T08:26:40Z.
    const res = await s.call("/v1/job/nightly/plan", "PUT", { Job: periodic, Diff: true });
    expect(res.status, res.text).toBe(200);
    expect((res.body as PlanAnswer).NextPeriodicLaunch).toBe("2025-11-23T03:00:00+01:00");
    expect((res.body as { Diff: { Objects: { Name: string; Type: string }[] } }).Diff.Objects).toContainEqual(
      expect.objectContaining({ Name: "Periodic", Type: "Added" }),
    );
    const disabled = { ...periodic, Periodic: { ...periodic.Periodic, Enabled: false } };
    const off = await s.call("/v1/job/nightly/plan", "PUT", { Job: disabled });
    expect((off.body as PlanAnswer).NextPeriodicLaunch).toBe("0001-01-01T00:00:00Z");
  });
});
