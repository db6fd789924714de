import { newEvaluation } from "../../streams/evals.ts";
import type { JobSpec } from "../../streams/jobs.ts";
import { type PeriodicJobLaunched, periodicChildID } from "../../streams/periodic.ts";
import { CronSyntaxError, nextCron, parseCron } from "./cron-expr.ts";
import { formatRFC3339, isKnownZone, UTC } from "./go-time-zone.ts";

/** Go's zero time.Time as its JSON prints it: "no launch". */
const ZERO_TIME = "0001-01-01T00:00:00Z";

/**
 * When an enabled periodic job would next launch after `nowMs`, as
 * Nomad's Job.Plan answers it (PeriodicConfig.Next from now in the job's
 * time zone, printed with that zone's offset). Go's zero time when the job
 * is not periodic, not enabled, or its spec gives no next time; a spec or
 * zone Nomad's validation would refuse gives no time either.
 */
export function nextPeriodicLaunch(periodic: unknown, nowMs: number): string {
  if (typeof periodic !== "object" || periodic === null) return ZERO_TIME;
  const p = periodic as Record<string, unknown>;
  if (p.Enabled !== true) return ZERO_TIME;
  const next = nextLaunchMs(p, nowMs);
  if (next === null) return ZERO_TIME;
  const zone = specTypeOf(p) === "cron" ? zoneOf(p.TimeZone) : UTC;
  return formatRFC3339(next, zone ?? UTC);
}

/**
 * Nomad's PeriodicConfig.Next in Unix milliseconds: the first launch of the
 * spec strictly after `fromMs`, read in the job's time zone; null when the
 * spec gives none, or when Nomad's validation would refuse the spec or zone.
 * Enabled is not looked at: callers decide whether the job is tracked.
 */
export function nextLaunchMs(periodic: Readonly<Record<string, unknown>>, fromMs: number): number | null {
  const spec = typeof periodic.Spec === "string" ? periodic.Spec : "";
  const specType = specTypeOf(periodic);
  if (specType === "test" || specType === "_internal_test") return nextTestLaunch(spec, fromMs);
  if (specType !== "cron") return null;
  const zone = zoneOf(periodic.TimeZone);
  if (zone === null) return null;
  try {
    return nextCron(parseCron(spec), fromMs, zone);
  } catch (err) {
    if (err instanceof CronSyntaxError) return null;
    throw err;
  }
}

function specTypeOf(p: Readonly<Record<string, unknown>>): string {
  return typeof p.SpecType === "string" && p.SpecType !== "" ? p.SpecType : "cron";
}

/** Go's time.LoadLocation: "" and "UTC" are UTC, "Local" the server's zone. */
function zoneOf(timeZone: unknown): string | null {
  const name = typeof timeZone === "string" ? timeZone : "";
  if (name === "" || name === UTC) return UTC;
  if (name === "Local") return Intl.DateTimeFormat().resolvedOptions().timeZone ?? UTC;
  return isKnownZone(name) ? name : null;
}

/** Nomad's test spec type: a comma-separated list of Unix seconds, the first after `fromMs`. */
function nextTestLaunch(spec: string, fromMs: number): number | null {
  if (spec === "") return null;
  const parts = spec.split(",");
  if (!parts.every((s) => /^[+-]?\d+$/.test(s))) return null;
  return parts.map((s) => Number(s) * 1000).find((ms) => ms > fromMs) ?? null;
}

/**
 * The record of one launch of `parent` at `launchMs` (Nomad's createEval:
 * the derived job and its `periodic-job` evaluation). `nowMs` stamps the
 * evaluation; the IDs are the caller's (a UUID).
 */
export function periodicLaunch(
  parent: Pick<JobSpec, "ID" | "Namespace" | "Priority" | "Type">,
  launchMs: number,
  nowMs: number,
  evalID: string,
  forced: boolean,
): PeriodicJobLaunched {
  const childID = periodicChildID(parent.ID, launchMs);
  return {
    Namespace: parent.Namespace,
    ParentID: parent.ID,
    LaunchTime: launchMs,
    ChildID: childID,
    Eval: newEvaluation({
      ID: evalID,
      Namespace: parent.Namespace,
      Priority: parent.Priority,
      Type: parent.Type,
      TriggeredBy: "periodic-job",
      JobID: childID,
      CreateTime: nowMs * 1e6,
    }),
    Forced: forced,
  };
}
