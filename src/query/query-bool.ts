import { parseGoBool } from "./filter/go-strconv.ts";
import { QueryError } from "./query-error.ts";

/** Go's url.Values.Get: the first value of a parameter, or "" when it is absent. */
function firstValue(raw: unknown): string {
  const value = Array.isArray(raw) ? raw[0] : raw;
  if (value === undefined || value === null) return "";
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  // A query string holds text only; any other value (an object from a
  // nested-query parser) is named, not converted: its toString may throw.
  return Object.prototype.toString.call(value);
}

/**
 * A boolean query parameter, read as Nomad reads its query booleans: Go's
 * strconv.ParseBool (1, t, T, TRUE, true, True and their false
 * counterparts), absent or empty = undefined, anything else a 400 naming
 * the parameter in Nomad's words (command/agent/http.go parseBool).
 */
export function queryBool(
  query: Readonly<Record<string, unknown>> | undefined,
  name: string,
): boolean | undefined {
  const text = firstValue(query?.[name]);
  if (text === "") return undefined;
  const parsed = parseGoBool(text);
  if (!parsed.ok)
    throw new QueryError(`Failed to parse value of "${name}" (${text}) as a bool: ${parsed.error}`);
  return parsed.value;
}

/**
 * `?stale`, as Nomad's parseConsistency reads it: present without a value
 * means true, and a value that is not a boolean is a 400 with Nomad's text.
 */
export function staleParam(query: Readonly<Record<string, unknown>> | undefined): boolean {
  if (query === undefined || !Object.hasOwn(query, "stale")) return false;
  const text = firstValue(query.stale);
  if (text === "") return true;
  const parsed = parseGoBool(text);
  if (!parsed.ok) {
    throw new QueryError(`Expect \`true\` or \`false\` for \`stale\` query string parameter, got ${text}`);
  }
  return parsed.value;
}
