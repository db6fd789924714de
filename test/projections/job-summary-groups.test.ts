import { describe, expect, it } from "vitest";
import { jobKey } from "../../projections/evals.ts";
import { canonicalizeJob } from "../../src/jobs/canonicalize.ts";
import type { Draft } from "../../src/store/writer.ts";
import { JOB_REGISTERED_VERSION, type JobSpec } from "../../streams/jobs.ts";
import { AT, memoryStore } from "./memory-store.ts";

const group = (Name: string) => ({
  Name,
  Tasks: [{ Name: "t", Driver: "raw_exec", Config: { command: "/bin/true" } }],
});
const spec = (...groups: string[]): JobSpec =>
  canonicalizeJob({ Namespace: "default", ID: "j", Type: "batch", TaskGroups: groups.map(group) });
const register = (job: JobSpec): Draft => ({
  type: "JobRegistered",
  v: JOB_REGISTERED_VERSION,
  data: { Job: job, Eval: null, EnforceIndex: false, JobModifyIndex: 0, Submission: null },
});

describe("a job summary's task groups", () => {
  it("gain an empty entry for each group a new version adds, and keep the others", async () => {
    const m = await memoryStore();
    await m.write({
      type: "ClusterBootstrapped",
      v: 1,
      data: { ClusterID: "c1", CreateTime: AT, ServerName: "s1" },
    });
    await m.write(register(spec("a")));
    const first = m.tables.jobSummaries.get(jobKey("default", "j"))!;
    expect(Object.keys(first.Summary)).toEqual(["a"]);

    // The same groups again: the summary row is the one stored, not a copy.
    await m.write(register(spec("a")));
    expect(m.tables.jobSummaries.get(jobKey("default", "j"))!.Summary).toBe(first.Summary);

    await m.write(register(spec("b", "a", "c")));
    const summary = m.tables.jobSummaries.get(jobKey("default", "j"))!;
    expect(Object.keys(summary.Summary)).toEqual(["a", "b", "c"]);
    expect(summary.Summary.a).toEqual(first.Summary.a);
    expect(summary.Summary.b).toEqual(summary.Summary.c);
    expect(Object.values(summary.Summary.b!).every((n) => n === 0)).toBe(true);
    await m.store.stop();
  });
});
