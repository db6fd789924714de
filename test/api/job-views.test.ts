import { afterEach, describe, expect, it } from "vitest";
import type { JobRow } from "../../projections/jobs.ts";
import { jobVersionsView } from "../../src/api/job-views.ts";
import { canonicalizeJob } from "../../src/jobs/canonicalize.ts";
import { Scenario, serviceJob } from "../services/scheduler/scenario.ts";

const row = (version: number, count: number, stable?: boolean): JobRow => {
  const spec = canonicalizeJob(serviceJob("web", count));
  const r: Record<string, unknown> = {
    ...spec,
    Status: "running",
    StatusDescription: "",
    Version: version,
    SubmitTime: version * 1000,
    CreateIndex: 1,
    ModifyIndex: 10 + version,
    JobModifyIndex: 10 + version,
  };
  if (stable !== undefined) r.Stable = stable;
  return r as JobRow;
};

describe("jobVersionsView", () => {
  it("lists versions newest first, each with its Stable flag (false when the row has none)", () => {
    const view = jobVersionsView([row(0, 1, true), row(2, 3), row(1, 2, false)], false);
    expect(view.Versions.map((v) => [v.Version, v.Stable])).toEqual([
      [2, false],
      [1, false],
      [0, true],
    ]);
    expect(view.Diffs).toBeNull();
  });

  it("with diffs, diffs each version against the one before it, newest first", () => {
    const view = jobVersionsView([row(0, 1), row(1, 2), row(2, 3)], true);
    expect(view.Diffs?.map((d) => d.TaskGroups?.[0]?.Fields)).toEqual([
      [{ Type: "Edited", Name: "Count", Old: "2", New: "3", Annotations: null }],
      [{ Type: "Edited", Name: "Count", Old: "1", New: "2", Annotations: null }],
    ]);
    expect(jobVersionsView([row(0, 1)], true).Diffs).toBeNull();
  });
});

const scenarios: Scenario[] = [];
afterEach(async () => {
  for (const s of scenarios.splice(0)) await s.stop();
});

describe("GET /v1/job/:id/versions?diffs=true", () => {
  it("answers Nomad's Diffs, one per version against the previous one, in context", async () => {
    const s = await Scenario.start();
    scenarios.push(s);
    await s.register(serviceJob("web", 1));
    await s.register(serviceJob("web", 2));
    const v2 = serviceJob("web", 2, { Meta: { owner: "ops" } });
    (v2.TaskGroups[0]!.Tasks[0]!.Config as Record<string, unknown>).image = "nginx:2";
    await s.register(v2);

    const res = await s.call("/v1/job/web/versions?diffs=true");
    expect(res.status, res.text).toBe(200);
    const body = res.body as {
      Versions: { Version: number; Stable: boolean }[];
      Diffs: Record<string, unknown>[];
    };
    expect(body.Versions.map((v) => [v.Version, v.Stable])).toEqual([
      [2, false],
      [1, false],
      [0, false],
    ]);
    expect(body.Diffs).toEqual([
      {
        Type: "Edited",
        ID: "web",
        Fields: [{ Type: "Added", Name: "Meta[owner]", Old: "", New: "ops", Annotations: null }],
        Objects: null,
        TaskGroups: [
          {
            Type: "Edited",
            Name: "web",
            Fields: null,
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
                Annotations: null,
              },
            ],
            Updates: null,
          },
        ],
      },
      {
        Type: "Edited",
        ID: "web",
        Fields: null,
        Objects: null,
        TaskGroups: [
          {
            Type: "Edited",
            Name: "web",
            Fields: [{ Type: "Edited", Name: "Count", Old: "1", New: "2", Annotations: null }],
            Objects: null,
            Tasks: [{ Type: "None", Name: "server", Fields: null, Objects: null, Annotations: null }],
            Updates: null,
          },
        ],
      },
    ]);

    // Go's ParseBool: T is true, 0 is false; anything else is refused naming the parameter.
    expect(((await s.call("/v1/job/web/versions?diffs=T")).body as { Diffs: unknown[] }).Diffs).toHaveLength(
      2,
    );
    expect(((await s.call("/v1/job/web/versions?diffs=0")).body as { Diffs: unknown }).Diffs).toBeNull();
    expect(((await s.call("/v1/job/web/versions")).body as { Diffs: unknown }).Diffs).toBeNull();
    const bad = await s.call("/v1/job/web/versions?diffs=maybe");
    expect(bad.status).toBe(400);
    expect(bad.text).toContain('Failed to parse value of "diffs" (maybe) as a bool');
  });
});
