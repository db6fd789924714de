import { jobKey } from "../../projections/evals.ts";
import type { Projections } from "../../projections/index.ts";
import { submissionKey } from "../../projections/job-submissions.ts";
import type { JobRow } from "../../projections/jobs.ts";
import type { JobSpec, JobSubmission } from "../../streams/jobs.ts";
import { SERVER_FIELDS } from "./spec-changed.ts";

/** The spec of an earlier version, without what the server decides, to register again as a new version (Nomad's Job.Revert). */
export function revertSpecOf(version: JobRow): JobSpec {
  const spec: Record<string, unknown> = { ...version };
  for (const field of SERVER_FIELDS) delete spec[field];
  return spec as JobSpec;
}

/** The source a version was submitted with, which a revert to it keeps. */
export function revertSubmissionOf(
  tables: Pick<Projections["tables"], "jobSubmissions">,
  version: JobRow,
): JobSubmission | null {
  const s = tables.jobSubmissions.get(submissionKey(version.Namespace, version.ID, version.Version));
  return s
    ? { Source: s.Source, Format: s.Format, VariableFlags: s.VariableFlags, Variables: s.Variables }
    : null;
}

/** Nomad's deployment watcher latestStableJob: the highest version marked stable. */
export function latestStableVersion(
  tables: Pick<Projections["tables"], "jobVersions">,
  namespace: string,
  jobID: string,
): JobRow | undefined {
  let best: JobRow | undefined;
  for (const v of tables.jobVersions.by("job", jobKey(namespace, jobID))) {
    if (v.Stable && (!best || v.Version > best.Version)) best = v;
  }
  return best;
}
