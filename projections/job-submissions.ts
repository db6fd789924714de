import type { ApplyContext, Change, Projection } from "../src/store/projection.ts";
import { Table } from "../src/store/table.ts";
import type { Envelope } from "../streams/event-schema.ts";
import type { JobRegistered, JobSubmission } from "../streams/jobs.ts";
import { jobKey } from "./evals.ts";
import type { JobRow } from "./jobs.ts";

/** Nomad's JobSubmission as stored: the source, and the job version it belongs to. */
export type JobSubmissionRow = JobSubmission & {
  readonly Namespace: string;
  readonly JobID: string;
  readonly Version: number;
  /** The index of the register that created the version. */
  readonly JobModifyIndex: number;
  readonly CreateIndex: number;
  readonly ModifyIndex: number;
};

/** Nomad's JobTrackedVersions: the submissions kept per job (the newest by JobModifyIndex). */
export const JOB_TRACKED_SUBMISSIONS = 6;

export const submissionKey = (namespace: string, jobID: string, version: number) =>
  `${jobKey(namespace, jobID)}\u0000${String(version).padStart(10, "0")}`;

/**
 * The jobspec each job version was submitted with (Nomad's job_submission
 * table), following the jobs table: a new version gets the submission its
 * register carried; a version made from the current one without a register
 * (a scaling action, a stop) gets the current one's, as Nomad's
 * upsertJobImpl copies it. The newest six per job are kept; all go with the
 * job when it is purged or collected.
 */
export function jobSubmissionsProjection() {
  const submissions = new Table<JobSubmissionRow>({
    name: "job_submissions",
    key: (s) => submissionKey(s.Namespace, s.JobID, s.Version),
    indexes: { job: (s) => jobKey(s.Namespace, s.JobID) },
  });

  const jobChanged = (ctx: ApplyContext, change: Change, event: Envelope) => {
    const before = change.before as JobRow | undefined;
    const after = change.after as JobRow | undefined;
    if (!after) {
      for (const s of submissions.by("job", change.key)) {
        ctx.delete(submissions, submissionKey(s.Namespace, s.JobID, s.Version));
      }
      return;
    }
    if (before && before.Version === after.Version) return;
    // A register brings its own (a revert's handler passes the old version's);
    // a scaling action or a stop copies the job's current version.
    const source: JobSubmission | null | undefined =
      event.type === "JobRegistered"
        ? (event.data as JobRegistered).Submission
        : before && submissions.get(submissionKey(after.Namespace, after.ID, before.Version));
    if (!source) return;
    const key = submissionKey(after.Namespace, after.ID, after.Version);
    if (submissions.has(key)) return;
    ctx.put(submissions, {
      Source: source.Source,
      Format: source.Format,
      VariableFlags: source.VariableFlags,
      Variables: source.Variables,
      Namespace: after.Namespace,
      JobID: after.ID,
      Version: after.Version,
      JobModifyIndex: after.JobModifyIndex,
      CreateIndex: ctx.index,
      ModifyIndex: ctx.index,
    });
    prune(ctx, change.key);
  };

  const prune = (ctx: ApplyContext, key: string) => {
    const all = submissions.by("job", key);
    if (all.length <= JOB_TRACKED_SUBMISSIONS) return;
    all.sort((a, b) => b.JobModifyIndex - a.JobModifyIndex);
    for (const s of all.slice(JOB_TRACKED_SUBMISSIONS)) {
      ctx.delete(submissions, submissionKey(s.Namespace, s.JobID, s.Version));
    }
  };

  const projection: Projection = {
    name: "job-submissions",
    version: 1,
    tables: [submissions],
    handles: new Set(),
    observes: new Set(["jobs"]),
    evolve() {},
    observe: jobChanged,
  };
  return { projection, submissions };
}

/** The submission as Nomad's API shows it (without the row's own indexes). */
export function submissionView(s: JobSubmissionRow): Record<string, unknown> {
  return {
    Source: s.Source,
    Format: s.Format,
    VariableFlags: s.VariableFlags,
    Variables: s.Variables,
    Namespace: s.Namespace,
    JobID: s.JobID,
    Version: s.Version,
    JobModifyIndex: s.JobModifyIndex,
  };
}
