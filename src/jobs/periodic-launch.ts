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
  const spec = typeof p.Spec === "string" ? p.Spec : "";
  const specType = typeof p.SpecType === "string" && p.SpecType !== "" ? p.SpecType : "cron";
  if (specType === "test") return nextTestLaunch(spec, nowMs);
  if (specType !== "cron") return ZERO_TIME;
  const zone = zoneOf(p.TimeZone);
  if (zone === null) return ZERO_TIME;
  try {
    const next = nextCron(parseCron(spec), nowMs, zone);
    return next === null ? ZERO_TIME : formatRFC3339(next, zone);
  } catch (err) {
    if (err instanceof CronSyntaxError) return ZERO_TIME;
    throw err;
  }
}

/** Go's time.LoadLocation: "" and "UTC" are UTC, "Local" the server's zone. */
function zoneOf(timeZone: unknown): string | null {
  const name = typeof timeZone === "string" ? timeZone : "";
  if (name === "" || name === UTC) return UTC;
  if (name === "Local") return Intl.DateTimeFormat().resolvedOptions().timeZone ?? UTC;
  return isKnownZone(name) ? name : null;
}

/** Nomad's "test" spec type: a comma-separated list of Unix seconds, the first after now. */
function nextTestLaunch(spec: string, nowMs: number): string {
  if (spec === "") return ZERO_TIME;
  const parts = spec.split(",");
  if (!parts.every((s) => /^[+-]?\d+$/.test(s))) return ZERO_TIME;
  const next = parts.map((s) => Number(s) * 1000).find((ms) => ms > nowMs);
  return next === undefined ? ZERO_TIME : formatRFC3339(next, UTC);
}
