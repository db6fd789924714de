import type { JobRow } from "../../projections/jobs.ts";
import type { JobSpec } from "../../streams/jobs.ts";

/** Fields the server decides: a register that changes none of the others changes nothing (Nomad's SpecChanged). */
export const SERVER_FIELDS: ReadonlySet<string> = new Set([
  "Status",
  "StatusDescription",
  "Stable",
  "Version",
  "SubmitTime",
  "CreateIndex",
  "ModifyIndex",
  "JobModifyIndex",
]);

export function specChanged(existing: JobRow, next: JobSpec): boolean {
  return canonical(existing, SERVER_FIELDS) !== canonical(next, SERVER_FIELDS);
}

function canonical(value: Readonly<Record<string, unknown>>, skip: ReadonlySet<string>): string {
  return stable(Object.fromEntries(Object.entries(value).filter(([k]) => !skip.has(k))));
}

function stable(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stable).join(",")}]`;
  if (v !== null && typeof v === "object") {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .filter((k) => o[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stable(o[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(v) ?? "null";
}
