import { CronSyntaxError, parseCron } from "./cron-expr.ts";
import { isKnownZone } from "./go-time-zone.ts";

/** Nomad's PeriodicConfig.Validate (an enabled block): its spec, spec type and time zone. */
export function periodicConfigErrors(periodic: Readonly<Record<string, unknown>>): string[] {
  const errors: string[] = [];
  const spec = typeof periodic.Spec === "string" ? periodic.Spec : "";
  if (spec === "") errors.push("Must specify a spec");
  const zone = typeof periodic.TimeZone === "string" ? periodic.TimeZone : "";
  if (zone !== "" && zone !== "UTC" && zone !== "Local" && !isKnownZone(zone)) {
    errors.push(`Invalid time zone ${JSON.stringify(zone)}: unknown time zone ${zone}`);
  }
  const specType =
    typeof periodic.SpecType === "string" && periodic.SpecType !== "" ? periodic.SpecType : "cron";
  if (specType === "cron") {
    try {
      parseCron(spec);
    } catch (err) {
      if (!(err instanceof CronSyntaxError)) throw err;
      errors.push(`Invalid cron spec ${JSON.stringify(spec)}: ${err.message}`);
    }
  } else if (specType !== "test" && specType !== "_internal_test") {
    errors.push(`Unknown periodic specification type ${JSON.stringify(specType)}`);
  }
  return errors;
}

const PAYLOAD_REQUIREMENTS = ["optional", "required", "forbidden"];

/** Nomad's ParameterizedJobConfig.Validate: the payload requirement, and disjoint meta keys. */
export function parameterizedConfigErrors(config: Readonly<Record<string, unknown>>): string[] {
  const errors: string[] = [];
  const payload = typeof config.Payload === "string" ? config.Payload : "";
  if (!PAYLOAD_REQUIREMENTS.includes(payload)) {
    errors.push(`Unknown payload requirement: ${JSON.stringify(payload)}`);
  }
  const required = Array.isArray(config.MetaRequired) ? (config.MetaRequired as unknown[]) : [];
  const optional = new Set(Array.isArray(config.MetaOptional) ? (config.MetaOptional as unknown[]) : []);
  const both = required.filter((k) => optional.has(k));
  if (both.length > 0) {
    errors.push(
      `Required and optional meta keys should be disjoint. Following keys exist in both: [${both.join(" ")}]`,
    );
  }
  return errors;
}
