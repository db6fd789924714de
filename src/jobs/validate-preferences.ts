import type { Constraint } from "../../streams/jobs.ts";
import { formatErrors } from "./multierror.ts";
import { compileRegexp } from "./regexp.ts";

/** Nomad's api Canonicalize gives an affinity or a spread without a weight this one. */
const DEFAULT_WEIGHT = 50;

type Carrier = { readonly [field: string]: unknown };

const listOf = (x: Carrier, field: string): readonly Record<string, unknown>[] =>
  Array.isArray(x[field]) ? (x[field] as Record<string, unknown>[]) : [];
const str = (v: unknown) => (typeof v === "string" ? v : "");
const weight = (v: unknown) => (typeof v === "number" ? v : DEFAULT_WEIGHT);

/** Nomad's Job/TaskGroup/Task validation of affinity blocks: none in a system job, each passing Affinity.Validate. */
export function affinityBlockErrors(jobType: string, x: Carrier): string[] {
  const affinities = listOf(x, "Affinities");
  if (jobType === "system")
    return affinities.length > 0 ? ["System jobs may not have an affinity block"] : [];
  const errors: string[] = [];
  affinities.forEach((a, i) => {
    const errs = affinityErrors(a);
    if (errs.length > 0) errors.push(`Affinity ${i + 1} validation failed: ${formatErrors(errs)}`);
  });
  return errors;
}

/** Nomad's Job/TaskGroup validation of spread blocks: none in a system job, each passing Spread.Validate. */
export function spreadBlockErrors(jobType: string, x: Carrier): string[] {
  const spreads = listOf(x, "Spreads");
  if (jobType === "system") return spreads.length > 0 ? ["System jobs may not have a spread block"] : [];
  const errors: string[] = [];
  spreads.forEach((s, i) => {
    const errs = spreadErrors(s);
    if (errs.length > 0) errors.push(`Spread ${i + 1} validation failed: ${formatErrors(errs)}`);
  });
  return errors;
}

/** Nomad's Affinity.Validate. */
function affinityErrors(a: Record<string, unknown>): string[] {
  const errors: string[] = [];
  const operand = str(a.Operand);
  const rTarget = str(a.RTarget);
  if (operand === "") errors.push("Missing affinity operand");
  switch (operand) {
    case "set_contains_all":
    case "set_contains_any":
    case "set_contains":
      if (rTarget === "") errors.push("Set contains operators require an RTarget");
      break;
    case "regexp":
      try {
        compileRegexp(rTarget);
      } catch (err) {
        errors.push(`Regular expression failed to compile: ${(err as Error).message}`);
      }
      break;
    case "version":
      if (rTarget === "") errors.push("Version affinity is invalid: Malformed constraint: ");
      break;
    case "semver":
      if (rTarget === "") errors.push("Semver affinity is invalid: Malformed constraint: ");
      break;
    case "=":
    case "==":
    case "is":
    case "!=":
    case "not":
    case "<":
    case "<=":
    case ">":
    case ">=":
      if (rTarget === "") errors.push(`Operator ${JSON.stringify(operand)} requires an RTarget`);
      break;
    default:
      errors.push(`Unknown affinity operator ${JSON.stringify(operand)}`);
  }
  if (str(a.LTarget) === "") errors.push("No LTarget provided but is required");
  const w = weight(a.Weight);
  if (w === 0) errors.push("Affinity weight cannot be zero");
  if (w > 100 || w < -100) errors.push("Affinity weight must be within the range [-100,100]");
  return errors;
}

/** Nomad's Spread.Validate. */
function spreadErrors(s: Record<string, unknown>): string[] {
  const errors: string[] = [];
  if (str(s.Attribute) === "") errors.push("Missing spread attribute");
  const w = weight(s.Weight);
  if (w <= 0 || w > 100) errors.push("Spread block must have a positive weight from 0 to 100");
  const seen = new Set<string>();
  let sum = 0;
  for (const t of listOf(s, "SpreadTarget")) {
    const value = str(t.Value);
    if (seen.has(value)) errors.push(`Spread target value ${JSON.stringify(value)} already defined`);
    else seen.add(value);
    const percent = typeof t.Percent === "number" ? t.Percent : 0;
    if (percent > 100)
      errors.push(`Spread target percentage for value ${JSON.stringify(value)} must be between 0 and 100`);
    sum += percent;
  }
  if (sum > 100) errors.push(`Sum of spread target percentages must not be greater than 100%; got ${sum}%`);
  return errors;
}

/** Nomad's Task.Validate: distinct_hosts and distinct_property belong to jobs and groups. */
export function taskConstraintOperandErrors(constraints: readonly Constraint[] | null): string[] {
  const errors: string[] = [];
  (constraints ?? []).forEach((c, i) => {
    if (c.Operand === "distinct_hosts" || c.Operand === "distinct_property")
      errors.push(`Constraint ${i + 1} has disallowed Operand at task level: ${c.Operand}`);
  });
  return errors;
}
