import type { AuthenticatedIdentity } from "../../auth/authenticate.ts";
import { ApiError } from "../api-error.ts";
import { ALL_NAMESPACES } from "../list-pages.ts";

/**
 * Whether the caller may list the variable at `path` in `namespace` (its
 * `variables` rules, or a workload's own paths): a search names only the
 * variables a `GET /v1/vars` would show it.
 */
export type ListsVariable = (namespace: string, path: string) => boolean;

/** Nomad's searchable contexts (structs.Context), in Nomad's order (ossContexts). */
export const SEARCH_CONTEXTS = [
  "allocs",
  "jobs",
  "nodes",
  "node_pools",
  "evals",
  "deployment",
  "plugins",
  "volumes",
  "scaling_policy",
  "vars",
  "namespaces",
] as const;

export type SearchContext = (typeof SEARCH_CONTEXTS)[number];

/** Where fuzzy matches inside a job are filed, beside `jobs` itself. */
export type JobPartContext = "groups" | "services" | "tasks" | "images" | "commands" | "classes";

export type MatchContext = SearchContext | JobPartContext;

/** Nomad's prefix search answers at most this many IDs per context (truncateLimit). */
export const TRUNCATE_LIMIT = 20;

/** Contexts whose IDs are UUIDs: Nomad looks them up in a UUID index, by whole bytes. */
const UUID_CONTEXTS: ReadonlySet<SearchContext> = new Set(["allocs", "nodes", "evals", "deployment"]);

/** Contexts the fuzzy search matches by ID prefix only. */
export const PREFIX_ONLY_CONTEXTS: ReadonlySet<SearchContext> = new Set([
  "evals",
  "deployment",
  "scaling_policy",
  "volumes",
]);

export function isSearchContext(context: string): context is SearchContext {
  return (SEARCH_CONTEXTS as readonly string[]).includes(context);
}

/** Nomad's expandContext, refusing a context it does not know with its error text. */
export function expandContext(context: string): SearchContext[] {
  if (context === "all") return [...SEARCH_CONTEXTS];
  if (isSearchContext(context)) return [context];
  throw ApiError.badRequest(
    `context must be one of [${SEARCH_CONTEXTS.join(" ")}] or 'all' for all contexts; got ${JSON.stringify(context)}`,
  );
}

/** What a caller needs to read a context's objects in `namespace` (Nomad's search permission checks). */
export function allowsContext(
  identity: AuthenticatedIdentity,
  namespace: string,
  context: SearchContext,
): boolean {
  switch (context) {
    case "nodes":
      return identity.allows("", "node:read");
    case "node_pools":
      return identity.allows("", "node_pool:read");
    case "plugins":
      return identity.allows("", "plugin:list");
    case "vars":
      return identity.allows(namespace, "variables:list");
    case "volumes":
      return identity.allows(namespace, "csi-list-volume") || identity.allows(namespace, "read-job");
    case "scaling_policy":
      return identity.allows(namespace, "list-scaling-policies") || identity.allows(namespace, "read-job");
    default:
      return identity.allows(namespace, "read-job");
  }
}

/**
 * Nomad's sufficientSearchPerms then filteredSearchContexts: naming one
 * context the caller may not read is refused outright (403); `all` keeps the
 * contexts it may.
 */
export function permittedContexts(
  identity: AuthenticatedIdentity,
  namespace: string,
  context: string,
): SearchContext[] {
  const wanted = expandContext(context);
  if (context !== "all" && !allowsContext(identity, namespace, wanted[0]!)) throw ApiError.forbidden();
  return wanted.filter((c) => allowsContext(identity, namespace, c));
}

/** The namespace a search reads: `?namespace=`, else the body's, else `default` (Nomad's parseNamespace). */
export function searchNamespace(query: string | undefined, body: string | undefined): string {
  return query || body || "default";
}

export const isWildcard = (namespace: string) => namespace === ALL_NAMESPACES;

/**
 * Nomad's roundUUIDDownIfOdd: a UUID index is searched by whole bytes, so an
 * odd number of hex digits (hyphens not counted) drops its last character.
 * Job IDs are not UUIDs: a search of the `jobs` context keeps its prefix.
 */
export function roundUUIDDownIfOdd(prefix: string, context: string): string {
  if (context === "jobs") return prefix;
  const digits = prefix.length - countHyphens(prefix);
  return digits % 2 === 0 ? prefix : prefix.slice(0, -1);
}

/**
 * Where a prefix lookup of `context` starts in key order: UUID contexts are
 * searched by the prefix's bytes (Nomad's UUIDFieldIndex), so hyphens may sit
 * anywhere and hex digits in either case; undefined when the prefix is no
 * UUID prefix (Nomad then leaves the context out of the answer).
 */
export function lookupPrefix(context: SearchContext, prefix: string): string | undefined {
  if (!UUID_CONTEXTS.has(context)) return prefix;
  if (prefix.length > 36 || countHyphens(prefix) > 4) return undefined;
  const hex = prefix.replaceAll("-", "");
  if (hex.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(hex)) return undefined;
  // Back in the 8-4-4-4-12 form the stored IDs have.
  const lower = hex.toLowerCase();
  const parts: string[] = [];
  for (let i = 0; i + 1 < UUID_GROUP_BOUNDS.length && lower.length > UUID_GROUP_BOUNDS[i]!; i++) {
    parts.push(lower.slice(UUID_GROUP_BOUNDS[i], UUID_GROUP_BOUNDS[i + 1]));
  }
  return parts.join("-");
}

/** Where the hex digits of a UUID's groups start and end. */
const UUID_GROUP_BOUNDS = [0, 8, 12, 16, 20, 32] as const;

function countHyphens(s: string): number {
  let n = 0;
  for (const ch of s) if (ch === "-") n++;
  return n;
}
