import type { JobSubmission } from "../../streams/jobs.ts";

/** Nomad's api.JobSubmission in a register body: wrong types are a 400 naming the field. */
export const submissionSchema = {
  type: ["object", "null"],
  additionalProperties: false,
  properties: {
    Source: { type: "string" },
    Format: { type: "string" },
    VariableFlags: { type: ["object", "null"], additionalProperties: { type: "string" } },
    Variables: { type: "string" },
  },
} as const;

/** Nomad's default job_max_source_size ("1M", in SI bytes). */
export const JOB_MAX_SOURCE_SIZE = 1_000_000;

/**
 * Nomad's submissionController: a source (with its variables) larger than
 * the limit is discarded with a warning, and the job is registered anyway.
 */
export function acceptedSubmission(
  raw: Partial<JobSubmission> | null | undefined,
  maxSize = JOB_MAX_SOURCE_SIZE,
): { readonly submission: JobSubmission | null; readonly warning?: string } {
  if (!raw) return { submission: null };
  const submission: JobSubmission = {
    Source: raw.Source ?? "",
    Format: raw.Format ?? "",
    VariableFlags: raw.VariableFlags ?? null,
    Variables: raw.Variables ?? "",
  };
  // Go's len() of a string: its UTF-8 bytes.
  let size = Buffer.byteLength(submission.Source) + Buffer.byteLength(submission.Variables);
  for (const [k, v] of Object.entries(submission.VariableFlags ?? {})) {
    size += Buffer.byteLength(k) + Buffer.byteLength(v);
  }
  if (size <= maxSize) return { submission };
  return {
    submission: null,
    warning: `job source size of ${humanizeBytes(size)} exceeds maximum of ${humanizeBytes(maxSize)} and will be discarded`,
  };
}

/** go-humanize's Bytes: SI units, one decimal below 10. */
export function humanizeBytes(n: number): string {
  const units = ["B", "kB", "MB", "GB", "TB", "PB", "EB"];
  if (n < 10) return `${n} B`;
  const e = Math.floor(Math.log(n) / Math.log(1000));
  const val = Math.floor((n / 1000 ** e) * 10 + 0.5) / 10;
  return `${val < 10 ? val.toFixed(1) : val.toFixed(0)} ${units[e]}`;
}

/** Nomad's MergeMultierrorWarnings: "" for none. */
export function mergeWarnings(warnings: readonly string[]): string {
  if (warnings.length === 0) return "";
  const head = warnings.length === 1 ? "1 warning:\n" : `${warnings.length} warnings:\n`;
  return head + warnings.map((w) => `\n* ${w.trim()}`).join("");
}
