import type { Projections } from "../../../projections/index.ts";
import { variableKey } from "../../../projections/variables.ts";
import type { AuthenticatedIdentity } from "../../auth/authenticate.ts";
import { type Taken, takeByKey } from "../../query/walk-by-key.ts";
import { searchIndex } from "./context-index.ts";
import {
  isWildcard,
  type ListsVariable,
  lookupPrefix,
  permittedContexts,
  roundUUIDDownIfOdd,
  type SearchContext,
  TRUNCATE_LIMIT,
} from "./search-contexts.ts";

export interface PrefixSearchRequest {
  readonly prefix: string;
  readonly context: string;
  readonly namespace: string;
  readonly listsVariable: ListsVariable;
}

/** Nomad's SearchResponse without its QueryMeta. */
export interface PrefixSearchAnswer {
  /** null where nothing matched, as Nomad's nil slice encodes. */
  readonly Matches: Record<string, string[] | null>;
  readonly Truncations: Record<string, boolean>;
  readonly index: number;
}

const NOTHING: Taken<string> = { rows: [], more: false };

/**
 * The first `limit` IDs under `lookup` in `context`, as Nomad's state store
 * iterates them (key order; evaluations, allocations and deployments of the
 * namespace, or of all with `*`; scaling policies of the namespace;
 * variables' paths, of those the caller may list), and whether more follow.
 * Kinds of objects chronomad does not hold have none.
 */
export async function idsByPrefix(
  tables: Projections["tables"],
  identity: AuthenticatedIdentity,
  context: SearchContext,
  namespace: string,
  lookup: string,
  limit: number,
  listsVariable: ListsVariable,
): Promise<Taken<string>> {
  const inNamespace = (row: { readonly Namespace: string }) =>
    isWildcard(namespace) || row.Namespace === namespace;
  const ids = async <R extends { readonly CreateIndex: number; readonly ModifyIndex: number }>(
    taken: Promise<Taken<R>>,
    id: (row: R) => string,
  ): Promise<Taken<string>> => {
    const { rows, more } = await taken;
    return { rows: rows.map(id), more };
  };
  switch (context) {
    case "jobs":
      // Across namespaces Nomad walks every job, in (namespace, ID) order.
      return isWildcard(namespace)
        ? ids(
            takeByKey(tables.jobs, "", limit, (j) => j.ID.startsWith(lookup)),
            (j) => j.ID,
          )
        : ids(
            takeByKey(tables.jobs, `${namespace}\u0000${lookup}`, limit, () => true),
            (j) => j.ID,
          );
    case "evals":
      return ids(takeByKey(tables.evals, lookup, limit, inNamespace), (e) => e.ID);
    case "allocs":
      return ids(takeByKey(tables.allocs, lookup, limit, inNamespace), (a) => a.ID);
    case "deployment":
      return ids(takeByKey(tables.deployments, lookup, limit, inNamespace), (d) => d.ID);
    case "nodes":
      return ids(
        takeByKey(tables.nodes, lookup, limit, () => true),
        (n) => n.ID,
      );
    case "node_pools":
      return ids(
        takeByKey(tables.nodePools, lookup, limit, (p) => identity.allows(p.Name, "node_pool:read")),
        (p) => p.Name,
      );
    case "namespaces":
      return ids(
        takeByKey(tables.namespaces, lookup, limit, (n) => identity.allows(n.Name, "read-job")),
        (n) => n.Name,
      );
    case "scaling_policy":
      return ids(
        takeByKey(tables.scalingPolicies, lookup, limit, (p) => p.Target.Namespace === namespace),
        (p) => p.ID,
      );
    case "volumes":
      // Nomad's CSIVolumesByIDPrefix: the namespace's volumes (every one's with `*`).
      return isWildcard(namespace)
        ? ids(
            takeByKey(tables.csiVolumes, "", limit, (v) => v.ID.startsWith(lookup)),
            (v) => v.ID,
          )
        : ids(
            takeByKey(tables.csiVolumes, `${namespace}\u0000${lookup}`, limit, () => true),
            (v) => v.ID,
          );
    case "plugins":
      return ids(
        takeByKey(tables.csiPlugins, lookup, limit, () => true),
        (p) => p.ID,
      );
    case "vars":
      // Nomad 1.6 walks every namespace's paths here, filtered by whether the
      // token has any variables rule in each; this looks in the namespace
      // asked for (every one with `*`) and at the paths the caller may list.
      return isWildcard(namespace)
        ? ids(
            takeByKey(
              tables.variables,
              "",
              limit,
              (v) => v.Path.startsWith(lookup) && listsVariable(v.Namespace, v.Path),
            ),
            (v) => v.Path,
          )
        : ids(
            takeByKey(tables.variables, variableKey(namespace, lookup), limit, (v) =>
              listsVariable(v.Namespace, v.Path),
            ),
            (v) => v.Path,
          );
    default:
      return NOTHING;
  }
}

/**
 * Nomad's Search.PrefixSearch: per context, the IDs starting with the prefix
 * among the first 20 objects of its lookup, and whether more objects follow
 * (so an odd-length UUID prefix, looked up one character shorter, may answer
 * fewer than 20). A prefix that cannot be a UUID leaves the UUID contexts out.
 */
export async function prefixSearch(
  tables: Projections["tables"],
  identity: AuthenticatedIdentity,
  request: PrefixSearchRequest,
): Promise<PrefixSearchAnswer> {
  const contexts = permittedContexts(identity, request.namespace, request.context);
  const rounded = roundUUIDDownIfOdd(request.prefix, request.context);
  const Matches: Record<string, string[] | null> = {};
  const Truncations: Record<string, boolean> = {};
  for (const context of contexts) {
    const lookup = lookupPrefix(context, rounded);
    if (lookup === undefined) continue;
    const { rows, more } = await idsByPrefix(
      tables,
      identity,
      context,
      request.namespace,
      lookup,
      TRUNCATE_LIMIT,
      request.listsVariable,
    );
    const matches = rows.filter((id) => id.startsWith(request.prefix));
    Matches[context] = matches.length > 0 ? matches : null;
    Truncations[context] = more;
  }
  return { Matches, Truncations, index: searchIndex(tables, contexts) };
}
