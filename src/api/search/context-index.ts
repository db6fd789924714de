import type { Projections } from "../../../projections/index.ts";
import type { SearchContext } from "./search-contexts.ts";

/**
 * The table index Nomad answers a search of `context` with (contextToIndex):
 * 0 for a table never written, as Nomad's state store answers.
 */
export function contextIndex(tables: Projections["tables"], context: SearchContext): number {
  switch (context) {
    case "jobs":
      return tables.jobs.index;
    case "evals":
      return tables.evals.index;
    case "allocs":
      return tables.allocs.index;
    case "nodes":
      return tables.nodes.index;
    case "node_pools":
      return tables.nodePools.index;
    case "deployment":
      return tables.deployments.index;
    case "namespaces":
      return tables.namespaces.index;
    case "scaling_policy":
      return tables.scalingPolicies.index;
    case "vars":
      return tables.variables.index;
    case "volumes":
      return tables.csiVolumes.index;
    case "plugins":
      return tables.csiPlugins.index;
    default:
      return 0;
  }
}

/** The highest index of the contexts searched (Nomad's reply index). */
export function searchIndex(tables: Projections["tables"], contexts: readonly SearchContext[]): number {
  let index = 0;
  for (const c of contexts) index = Math.max(index, contextIndex(tables, c));
  return index;
}
