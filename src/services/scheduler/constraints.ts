import type { NodeRow } from "../../../projections/nodes.ts";
import type { Constraint } from "../../../streams/jobs.ts";
import { compileRegexp } from "../../jobs/regexp.ts";

/**
 * Nomad's constraint checker (scheduler/feasible.go): resolving
 * `${node.*}`, `${attr.*}` and `${meta.*}` targets against a node and
 * comparing them with Nomad's operators.
 */

/** Nomad's resolveTarget: the value a target names on the node, or undefined when the node has none. */
export function resolveTarget(target: string, node: NodeRow): string | undefined {
  if (!target.startsWith("${")) return target;
  // biome-ignore-start lint/suspicious/noTemplateCurlyInString: Nomad's interpolation targets, matched literally
  switch (target) {
    case "${node.unique.id}":
      return node.ID;
    case "${node.datacenter}":
      return node.Datacenter;
    case "${node.unique.name}":
      return node.Name;
    case "${node.class}":
      return node.NodeClass;
    case "${node.pool}":
      return typeof (node as { NodePool?: unknown }).NodePool === "string"
        ? ((node as { NodePool?: string }).NodePool ?? "default")
        : "default";
  }
  // biome-ignore-end lint/suspicious/noTemplateCurlyInString: Nomad's interpolation targets, matched literally
  if (target.startsWith("${attr.") && target.endsWith("}")) return node.Attributes[target.slice(7, -1)];
  if (target.startsWith("${meta.") && target.endsWith("}")) return node.Meta?.[target.slice(7, -1)];
  return undefined;
}

/** Whether a constraint's targets name a property unique to one node: then per-class caching does not apply. */
export function escapes(c: Constraint): boolean {
  return c.LTarget.includes("unique.") || c.RTarget.includes("unique.");
}

/** Nomad's meetsConstraint for one node; distinct_* operators are decided elsewhere (they need the plan). */
export function meetsConstraint(c: Constraint, node: NodeRow): boolean {
  if (c.Operand === "distinct_hosts" || c.Operand === "distinct_property") return true;
  const l = resolveTarget(c.LTarget, node);
  const r = resolveTarget(c.RTarget, node);
  return checkConstraint(c.Operand, l, r);
}

/** Go's strconv.ParseBool; undefined for anything else. */
export function parseGoBool(s: string): boolean | undefined {
  if (["1", "t", "T", "true", "TRUE", "True"].includes(s)) return true;
  if (["0", "f", "F", "false", "FALSE", "False"].includes(s)) return false;
  return undefined;
}

/**
 * Nomad's hasDistinctHostsConstraint: the first distinct_hosts constraint
 * decides; an empty or unparsable RTarget means true.
 */
export function hasDistinctHostsConstraint(constraints: readonly Constraint[] | null): boolean {
  const c = (constraints ?? []).find((x) => x.Operand === "distinct_hosts");
  if (!c) return false;
  return c.RTarget === "" || parseGoBool(c.RTarget) !== false;
}

export function checkConstraint(operand: string, l: string | undefined, r: string | undefined): boolean {
  const found = l !== undefined && r !== undefined;
  switch (operand) {
    case "=":
    case "==":
    case "is":
      return found && l === r;
    case "!=":
    case "not":
      // Nomad compares a missing target as "".
      return (l ?? "") !== (r ?? "");
    case "<":
    case "<=":
    case ">":
    case ">=":
      return found && checkOrder(operand, l, r);
    case "is_set":
      return l !== undefined;
    case "is_not_set":
      return l === undefined;
    case "version":
      return found && versionMatches(l, r, false);
    case "semver":
      return found && versionMatches(l, r, true);
    case "regexp":
      if (!found) return false;
      try {
        return compileRegexp(r).test(l);
      } catch {
        return false;
      }
    case "set_contains":
    case "set_contains_all": {
      if (!found) return false;
      const have = new Set(splitSet(l));
      return splitSet(r).every((x) => have.has(x));
    }
    case "set_contains_any": {
      if (!found) return false;
      const have = new Set(splitSet(l));
      return splitSet(r).some((x) => have.has(x));
    }
    default:
      return false;
  }
}

function splitSet(s: string): string[] {
  return s.split(",").map((x) => x.trim());
}

/** Nomad's checkOrder: numerically when both sides are numbers, else lexically. */
function checkOrder(op: string, l: string, r: string): boolean {
  const ln = Number(l);
  const rn = Number(r);
  const numeric = l.trim() !== "" && r.trim() !== "" && Number.isFinite(ln) && Number.isFinite(rn);
  const cmp = numeric ? Math.sign(ln - rn) : l < r ? -1 : l > r ? 1 : 0;
  switch (op) {
    case "<":
      return cmp < 0;
    case "<=":
      return cmp <= 0;
    case ">":
      return cmp > 0;
    default:
      return cmp >= 0;
  }
}

interface Version {
  readonly segments: readonly number[];
  readonly pre: string;
}

function parseVersion(text: string): Version | undefined {
  const m = /^v?([0-9]+(?:\.[0-9]+)*)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$/.exec(text.trim());
  if (!m) return undefined;
  return { segments: m[1]!.split(".").map(Number), pre: m[2] ?? "" };
}

function compareVersions(a: Version, b: Version): number {
  const n = Math.max(a.segments.length, b.segments.length, 3);
  for (let i = 0; i < n; i++) {
    const d = (a.segments[i] ?? 0) - (b.segments[i] ?? 0);
    if (d !== 0) return Math.sign(d);
  }
  if (a.pre === b.pre) return 0;
  if (a.pre === "") return 1;
  if (b.pre === "") return -1;
  return a.pre < b.pre ? -1 : 1;
}

/**
 * hashicorp/go-version constraints (`>= 1.2, < 2.0`, `~> 1.4`), as Nomad's
 * `version` and `semver` operators use them; semver refuses prereleases
 * unless the constraint names one.
 */
export function versionMatches(value: string, constraint: string, semver: boolean): boolean {
  const v = parseVersion(value);
  if (!v) return false;
  for (const clause of constraint.split(",")) {
    const m = /^\s*(=|!=|>=|<=|>|<|~>)?\s*(\S+)\s*$/.exec(clause);
    if (!m) return false;
    const op = m[1] ?? "=";
    const c = parseVersion(m[2]!);
    if (!c) return false;
    if (semver && v.pre !== "" && c.pre === "") return false;
    const cmp = compareVersions(v, c);
    let ok: boolean;
    switch (op) {
      case "=":
        ok = cmp === 0;
        break;
      case "!=":
        ok = cmp !== 0;
        break;
      case ">":
        ok = cmp > 0;
        break;
      case "<":
        ok = cmp < 0;
        break;
      case ">=":
        ok = cmp >= 0;
        break;
      case "<=":
        ok = cmp <= 0;
        break;
      default: {
        // ~> 1.4.2 means >= 1.4.2, < 1.5; ~> 1.4 means >= 1.4, < 2.
        const keep = Math.max(1, c.segments.length - 1);
        const upper = [...c.segments.slice(0, keep)];
        upper[keep - 1] = upper[keep - 1]! + 1;
        ok = cmp >= 0 && compareVersions(v, { segments: upper, pre: "" }) < 0;
      }
    }
    if (!ok) return false;
  }
  return true;
}
