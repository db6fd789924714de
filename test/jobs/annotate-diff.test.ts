import { describe, expect, it } from "vitest";
import { annotateJobDiff, type DesiredUpdateCounts } from "../../src/jobs/annotate-diff.ts";
import { diffJobs } from "../../src/jobs/job-diff.ts";

const counts = (c: Partial<DesiredUpdateCounts>): DesiredUpdateCounts => ({
  Ignore: 0,
  Place: 0,
  Migrate: 0,
  Stop: 0,
  InPlaceUpdate: 0,
  DestructiveUpdate: 0,
  Canary: 0,
  ...c,
});

const job = (count: number, task: Record<string, unknown>) => ({
  ID: "web",
  TaskGroups: [{ Name: "web", Count: count, Tasks: [{ Name: "server", Driver: "docker", ...task }] }],
});

describe("annotateJobDiff (Nomad's scheduler.Annotate)", () => {
  it("writes the plan's counts as Updates, by Nomad's names, leaving zero counts out", () => {
    const diff = diffJobs(job(1, {}), job(3, {}), true);
    annotateJobDiff(diff, { web: counts({ Place: 2, InPlaceUpdate: 1, Canary: 1, Ignore: 0 }) });
    expect(diff.TaskGroups?.[0]?.Updates).toEqual({ create: 2, canary: 1, "in-place update": 1 });
    // A group the scheduler saw, with nothing to do, still gets an (empty) Updates.
    const same = diffJobs(job(1, {}), job(1, {}), true);
    annotateJobDiff(same, { web: counts({}) });
    expect(same.TaskGroups?.[0]?.Updates).toEqual({});
    annotateJobDiff(same, null);
  });

  it("marks a count change as forcing creations or destructions", () => {
    const up = diffJobs(job(1, {}), job(3, {}), true);
    annotateJobDiff(up, null);
    expect(up.TaskGroups?.[0]?.Fields).toEqual([
      { Type: "Edited", Name: "Count", Old: "1", New: "3", Annotations: ["forces create"] },
    ]);
    const down = diffJobs(job(3, {}), job(1, {}), true);
    annotateJobDiff(down, null);
    expect(down.TaskGroups?.[0]?.Fields?.[0]?.Annotations).toEqual(["forces destroy"]);
  });

  it("marks task changes in place (kill timeout, services, constraints, log sizes) or destructive (the rest)", () => {
    const annotated = (
      before: Record<string, unknown>,
      after: Record<string, unknown>,
      contextual = true,
    ) => {
      const diff = diffJobs(job(1, before), job(1, after), contextual);
      annotateJobDiff(diff, null);
      return diff.TaskGroups?.[0]?.Tasks?.[0]?.Annotations;
    };
    expect(annotated({ KillTimeout: 5e9 }, { KillTimeout: 10e9 })).toEqual(["forces in-place update"]);
    expect(annotated({}, { Services: [{ Name: "web" }] })).toEqual(["forces in-place update"]);
    expect(annotated({}, { Constraints: [{ LTarget: "a", RTarget: "b", Operand: "=" }] })).toEqual([
      "forces in-place update",
    ]);
    const logs = [{ LogConfig: { MaxFiles: 1 } }, { LogConfig: { MaxFiles: 2 } }] as const;
    expect(annotated(logs[0], logs[1], false)).toEqual(["forces in-place update"]);
    // Nomad looks for a Disabled field whatever its type: in context (as plan diffs) it is always listed.
    expect(annotated(logs[0], logs[1], true)).toEqual(["forces create/destroy update"]);
    expect(annotated({ LogConfig: { MaxFiles: 1 } }, { LogConfig: { MaxFiles: 1, Disabled: true } })).toEqual(
      ["forces create/destroy update"],
    );
    expect(annotated({ Config: { image: "a" } }, { Config: { image: "b" } })).toEqual([
      "forces create/destroy update",
    ]);
    expect(annotated({ Env: { A: "1" } }, { Env: { A: "2" } })).toEqual(["forces create/destroy update"]);
    expect(annotated({}, {})).toBeNull();
  });

  it("marks the tasks of a new or removed group as forcing creation or destruction", () => {
    const added = diffJobs(null, job(1, {}), true);
    annotateJobDiff(added, { web: counts({ Place: 1 }) });
    expect(added.TaskGroups?.[0]).toMatchObject({
      Type: "Added",
      Updates: { create: 1 },
      Fields: [{ Name: "Count", Annotations: ["forces create"] }],
      Tasks: [{ Type: "Added", Annotations: ["forces create"] }],
    });
    const removed = diffJobs(job(1, {}), { ID: "web", TaskGroups: [] }, true);
    annotateJobDiff(removed, null);
    expect(removed.TaskGroups?.[0]?.Tasks?.[0]?.Annotations).toEqual(["forces destroy"]);
  });
});
