import type { AllocRow } from "../../../projections/allocs.ts";
import type { CSIPluginRow } from "../../../projections/csi-plugins.ts";
import type { Projections } from "../../../projections/index.ts";
import type { JobRow } from "../../../projections/jobs.ts";
import type { NamespaceRow } from "../../../projections/namespaces.ts";
import type { NodePoolRow } from "../../../projections/node-pools.ts";
import type { NodeRow } from "../../../projections/nodes.ts";
import { type VariableRow, variableKey } from "../../../projections/variables.ts";
import type { AuthenticatedIdentity } from "../../auth/authenticate.ts";
import { type Taken, takeByKey } from "../../query/walk-by-key.ts";
import { ApiError } from "../api-error.ts";
import { searchIndex } from "./context-index.ts";
import { idsByPrefix } from "./prefix-search.ts";
import {
  allowsContext,
  expandContext,
  isSearchContext,
  isWildcard,
  type ListsVariable,
  lookupPrefix,
  type MatchContext,
  PREFIX_ONLY_CONTEXTS,
  permittedContexts,
  roundUUIDDownIfOdd,
  type SearchContext,
  TRUNCATE_LIMIT,
} from "./search-contexts.ts";

/** Nomad's server `search` block, with its defaults. */
export interface SearchConfig {
  readonly fuzzyEnabled: boolean;
  /** Objects looked at per context. */
  readonly limitQuery: number;
  /** Matches answered per context. */
  readonly limitResults: number;
  readonly minTermLength: number;
}

export const DEFAULT_SEARCH_CONFIG: SearchConfig = {
  fuzzyEnabled: true,
  limitQuery: 20,
  limitResults: 100,
  minTermLength: 2,
};

export interface FuzzySearchRequest {
  readonly text: string;
  readonly context: string;
  readonly namespace: string;
  /** QueryOptions.Prefix (`?prefix=`): where the ID-prefix contexts are looked up. */
  readonly prefix: string;
  readonly listsVariable: ListsVariable;
}

/** Nomad's FuzzyMatch: Scope (namespace, job, group, task... above the match) is left out when empty. */
export interface FuzzyMatch {
  readonly ID: string;
  readonly Scope?: readonly string[];
}

export interface FuzzySearchAnswer {
  readonly Matches: Record<string, FuzzyMatch[]>;
  readonly Truncations: Record<string, boolean>;
  readonly index: number;
}

interface Scored {
  readonly id: string;
  readonly scope: readonly string[] | undefined;
  /** Where the text starts in the name, in bytes: earlier is better. */
  readonly score: number;
}

type Row = JobRow | AllocRow | NodeRow | NodePoolRow | NamespaceRow | VariableRow | CSIPluginRow;

/**
 * Nomad's Search.FuzzySearch: case-insensitive substring matches on the
 * names of jobs (and their groups, services, tasks, docker images, exec
 * commands and java classes), allocations, nodes, node pools, namespaces, CSI
 * plugins and the paths of the variables the caller may list, among the first `limitQuery` objects of each context; ID-prefix matches for
 * evaluations, deployments, scaling policies and volumes. Each context's
 * matches are sorted: earliest match first, then shortest name, then by name.
 */
export async function fuzzySearch(
  tables: Projections["tables"],
  identity: AuthenticatedIdentity,
  request: FuzzySearchRequest,
  config: SearchConfig = DEFAULT_SEARCH_CONFIG,
): Promise<FuzzySearchAnswer> {
  const { namespace, context } = request;
  // Nomad's order of refusals: permission, then the term, then the context.
  if (!isWildcard(namespace) && isSearchContext(context) && !allowsContext(identity, namespace, context)) {
    throw ApiError.forbidden();
  }
  if (!config.fuzzyEnabled) throw ApiError.notFound("fuzzy search is not enabled");
  const length = Buffer.byteLength(request.text);
  if (length < config.minTermLength) {
    throw ApiError.badRequest(
      `fuzzy search query must be at least ${config.minTermLength} characters, got ${length}`,
    );
  }
  // Across namespaces the caller's rights are checked object by object instead.
  const fuzzyContexts = isWildcard(namespace)
    ? expandContext(context)
    : permittedContexts(identity, namespace, context);
  const text = request.text.toLowerCase();
  const prefixContexts = fuzzyContexts.filter(
    (c) => PREFIX_ONLY_CONTEXTS.has(c) && allowsContext(identity, namespace, c),
  );
  const Matches: Record<string, FuzzyMatch[]> = {};
  const Truncations: Record<string, boolean> = {};

  const rounded = roundUUIDDownIfOdd(request.prefix, context);
  for (const c of prefixContexts) {
    const lookup = lookupPrefix(c, rounded);
    if (lookup === undefined) continue;
    const { rows, more } = await idsByPrefix(
      tables,
      identity,
      c,
      namespace,
      lookup,
      TRUNCATE_LIMIT,
      request.listsVariable,
    );
    // Nomad matches these by the text as given, case and all.
    Matches[c] = rows.filter((id) => id.startsWith(request.text)).map((id) => ({ ID: id }));
    Truncations[c] = more;
  }

  for (const c of fuzzyContexts) {
    if (PREFIX_ONLY_CONTEXTS.has(c)) continue;
    Truncations[c] = false;
    const taken = await firstObjects(
      tables,
      identity,
      c,
      namespace,
      config.limitQuery,
      request.listsVariable,
    );
    const { matches, truncated } = fuzzyMatches(c, taken, text, config);
    Object.assign(Matches, matches);
    for (const t of truncated) Truncations[t] = true;
  }
  return { Matches, Truncations, index: searchIndex(tables, fuzzyContexts) };
}

/** The first `limit` objects of a fuzzy-searched context, as Nomad's iterators give them. */
async function firstObjects(
  tables: Projections["tables"],
  identity: AuthenticatedIdentity,
  context: SearchContext,
  namespace: string,
  limit: number,
  listsVariable: ListsVariable,
): Promise<Taken<Row>> {
  const all = isWildcard(namespace);
  const readJob = (row: { readonly Namespace: string }) => identity.allows(row.Namespace, "read-job");
  switch (context) {
    case "jobs":
      return all
        ? takeByKey(tables.jobs, "", limit, readJob)
        : takeByKey(tables.jobs, `${namespace}\u0000`, limit, () => true);
    case "allocs":
      return takeByKey(tables.allocs, "", limit, all ? readJob : (a) => a.Namespace === namespace);
    case "nodes":
      return takeByKey(tables.nodes, "", limit, () => !all || identity.allows("", "node:read"));
    case "node_pools":
      return takeByKey(tables.nodePools, "", limit, (p) => identity.allows(p.Name, "node_pool:read"));
    case "namespaces":
      return takeByKey(tables.namespaces, "", limit, (n) => identity.allows(n.Name, "read-job"));
    case "vars":
      // Nomad filters by the namespace's variables rules only across
      // namespaces; here every path is one the caller may list.
      return takeByKey(tables.variables, all ? "" : variableKey(namespace, ""), limit, (v) =>
        listsVariable(v.Namespace, v.Path),
      );
    case "plugins":
      return takeByKey(tables.csiPlugins, "", limit, () => true);
    default:
      return { rows: [], more: false };
  }
}

/**
 * Nomad's getFuzzyMatches over the objects looked at: at most limitResults
 * matches per context; a context is truncated when it hit that limit, or
 * when more objects followed the last one looked at and it matched there.
 */
function fuzzyMatches(
  context: SearchContext,
  { rows, more }: Taken<Row>,
  text: string,
  config: SearchConfig,
): { matches: Record<string, FuzzyMatch[]>; truncated: Set<MatchContext> } {
  const unsorted = new Map<MatchContext, Scored[]>();
  const truncated = new Set<MatchContext>();
  // A faithful port: the first context over either limit ends the object's accumulation.
  const accumulate = (limited: boolean, set: ReadonlyMap<MatchContext, readonly Scored[]>) => {
    for (const [ctx, matches] of set) {
      for (const match of matches) {
        const list = unsorted.get(ctx) ?? [];
        if (list.length >= config.limitResults) {
          truncated.add(ctx);
          return;
        }
        list.push(match);
        unsorted.set(ctx, list);
        if (limited) {
          truncated.add(ctx);
          return;
        }
      }
    }
  };
  rows.forEach((row, i) => {
    const limited = i === config.limitQuery - 1 && more;
    accumulate(
      limited,
      context === "jobs" ? jobMatches(row as JobRow, text) : singleMatch(context, row, text),
    );
  });
  const matches: Record<string, FuzzyMatch[]> = {};
  for (const [ctx, list] of unsorted) {
    matches[ctx] = list
      .sort(byScore)
      .map((m) => (m.scope && m.scope.length > 0 ? { ID: m.id, Scope: m.scope } : { ID: m.id }));
  }
  return { matches, truncated };
}

/** Nomad's fuzzyMatchSingle: an allocation, node, node pool or namespace by its name, a variable by its path. */
function singleMatch(context: SearchContext, row: Row, text: string): Map<MatchContext, Scored[]> {
  if (context === "vars") {
    const v = row as VariableRow;
    const score = fuzzyIndex(v.Path, text);
    return score < 0
      ? new Map()
      : new Map([[context, [{ id: v.Path, scope: [v.Namespace, v.Path], score }]]]);
  }
  if (context === "plugins") {
    // Nomad's fuzzyMatchSingle names a plugin by its ID.
    const id = (row as CSIPluginRow).ID;
    const score = fuzzyIndex(id, text);
    return score < 0 ? new Map() : new Map([[context, [{ id, scope: undefined, score }]]]);
  }
  const named = row as Exclude<Row, VariableRow | CSIPluginRow>;
  const score = fuzzyIndex(named.Name, text);
  if (score < 0) return new Map();
  let scope: string[] | undefined;
  if (context === "allocs") scope = [(row as AllocRow).Namespace, (row as AllocRow).ID];
  else if (context === "nodes") scope = [(row as NodeRow).ID];
  else if (context === "node_pools") scope = [named.Name];
  return new Map([[context, [{ id: named.Name, scope, score }]]]);
}

/**
 * Nomad's fuzzyMatchesJob: the job's name, then per group its name, its
 * services, and per task its name, its services and its driver's image
 * (docker), command (exec, raw_exec) or class (java).
 */
function jobMatches(job: JobRow, text: string): Map<MatchContext, Scored[]> {
  const found = new Map<MatchContext, Scored[]>();
  const add = (ctx: MatchContext, name: string, ...scope: string[]) => {
    const score = fuzzyIndex(name, text);
    if (score < 0) return;
    const list = found.get(ctx) ?? [];
    list.push({ id: name, scope: [job.Namespace, ...scope], score });
    found.set(ctx, list);
  };
  add("jobs", job.Name, job.ID);
  for (const group of job.TaskGroups) {
    add("groups", group.Name, job.ID);
    for (const service of namedList(group.Services)) add("services", service, job.ID, group.Name);
    for (const task of group.Tasks) {
      add("tasks", task.Name, job.ID, group.Name);
      for (const service of namedList(task.Services)) add("services", service, job.ID, group.Name, task.Name);
      const part = DRIVER_PARTS[task.Driver];
      if (part) add(part.context, configString(task.Config, part.param), job.ID, group.Name, task.Name);
    }
  }
  return found;
}

/** The task config parameter Nomad matches per driver. */
const DRIVER_PARTS: Readonly<Record<string, { context: MatchContext; param: string }>> = {
  docker: { context: "images", param: "image" },
  exec: { context: "commands", param: "command" },
  raw_exec: { context: "commands", param: "command" },
  java: { context: "classes", param: "class" },
};

function namedList(list: unknown): string[] {
  if (!Array.isArray(list)) return [];
  return list
    .map((s) => (s && typeof s === "object" ? (s as { Name?: unknown }).Name : undefined))
    .map(asString);
}

function configString(config: Readonly<Record<string, unknown>> | null, param: string): string {
  return asString(config?.[param]);
}

const asString = (v: unknown) => (typeof v === "string" ? v : "");

/** Nomad's fuzzyIndex: where `text` (lower case) starts in `name`, ignoring case, in bytes; -1 if absent. */
function fuzzyIndex(name: string, text: string): number {
  const at = name.toLowerCase().indexOf(text);
  return at < 0 ? -1 : Buffer.byteLength(name.toLowerCase().slice(0, at));
}

/** Nomad's sortSet. */
function byScore(a: Scored, b: Scored): number {
  if (a.score !== b.score) return a.score - b.score;
  const la = Buffer.byteLength(a.id);
  const lb = Buffer.byteLength(b.id);
  if (la !== lb) return la - lb;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}
