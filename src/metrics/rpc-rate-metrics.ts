import type { onResponseHookHandler, RouteOptions } from "fastify";
import type { AuthenticatedIdentity } from "../auth/authenticate.ts";
import type { Metrics } from "./metrics.ts";

/** Nomad's RateMetricRead/List/Write. */
export type RpcOperation = "read" | "list" | "write";

/**
 * Nomad's RPC endpoint names (nomad/rpc_rate_metrics.go callers), from the
 * route's first path segments: the HTTP route stands for the RPC it calls.
 * Longest prefix first.
 */
const ENDPOINTS: readonly (readonly [string, string])[] = [
  ["/v1/operator/keyring", "keyring"],
  ["/v1/node/pool", "node_pool"],
  ["/v1/client/allocation", "client_allocations"],
  ["/v1/client/fs", "file_system"],
  ["/v1/client/stats", "client_stats"],
  ["/v1/client/metadata", "node_meta"],
  ["/v1/rpc/Node.", "node"],
  ["/v1/rpc/Alloc.", "alloc"],
  ["/v1/rpc/ServiceRegistration.", "service_registration"],
  ["/v1/service", "service_registration"],
  ["/v1/acl", "acl"],
  ["/v1/agent", "agent"],
  ["/v1/allocation", "alloc"],
  ["/v1/deployment", "deployment"],
  ["/v1/evaluation", "eval"],
  ["/v1/event", "event"],
  ["/v1/job", "job"],
  ["/v1/validate/job", "job"],
  ["/v1/namespace", "namespace"],
  ["/v1/node", "node"],
  ["/v1/operator", "operator"],
  ["/v1/plugin", "csi_plugin"],
  ["/v1/regions", "region"],
  ["/v1/scaling", "scaling"],
  ["/v1/search", "search"],
  ["/v1/status", "status"],
  ["/v1/system", "system"],
  ["/v1/var", "variables"],
  ["/v1/volume", "csi_volume"],
];

/** The RPC endpoint a route stands for, or undefined for routes that are no RPC (metrics, openapi, well-known). */
export function rpcEndpoint(url: string): string | undefined {
  return ENDPOINTS.find(([prefix]) => url.startsWith(prefix))?.[1];
}

/**
 * read, list or write: a GET whose last path segment is a plural noun (not a
 * parameter) lists, any other GET reads, every other method writes — Nomad
 * classifies each RPC the same way by hand.
 */
export function rpcOperation(method: string, url: string): RpcOperation {
  if (method !== "GET" && method !== "HEAD") return "write";
  const last = url.split("/").pop() ?? "";
  return !last.startsWith(":") && /[a-z]s$/.test(last) ? "list" : "read";
}

/**
 * The metric's name for a route (null: no RPC), worked out once per method
 * and route pattern: routes are a fixed set, and every request asked it
 * again (a prefix search, a split and a regular expression).
 */
const namesByRoute = new Map<string, Map<string, string | null>>();

function rpcRateName(method: string, url: string): string | null {
  // Route patterns, not paths, and the few methods each serves: bounded.
  let byMethod = namesByRoute.get(url);
  if (byMethod === undefined) {
    byMethod = new Map();
    namesByRoute.set(url, byMethod);
  }
  let name = byMethod.get(method);
  if (name === undefined) {
    const endpoint = rpcEndpoint(url);
    name = endpoint ? `nomad.rpc.${endpoint}.${rpcOperation(method, url)}` : null;
    byMethod.set(method, name);
  }
  return name;
}

/**
 * Nomad's MeasureRPCRate, `nomad.rpc.<endpoint>.<op>`, as one route's own
 * `onResponse` hook, its metric's name worked out when the route is added;
 * undefined for a route that is no RPC. Labelled with the caller's identity
 * (`token:<accessor>`, `client:<node>`) when ACLs are on and labels are not
 * turned off (telemetry disable_rpc_rate_metrics_labels); a caller refused
 * at authentication is counted by the remote address, as Nomad counts it.
 * A global hook had to ask each request for its route (fastify's
 * `routeOptions`, a new object of a dozen fields each time) and look the
 * name up again.
 */
export function rpcRateMeter(
  metrics: Metrics,
  options: { readonly aclEnabled: boolean; readonly disableLabels: boolean },
  route: Pick<RouteOptions, "method" | "url">,
): onResponseHookHandler | undefined {
  const methods = Array.isArray(route.method) ? route.method : [route.method];
  const names = new Map<string, string>();
  for (const method of methods) {
    const name = rpcRateName(method, route.url);
    if (name !== null) names.set(method, name);
  }
  if (names.size === 0) return undefined;
  const labelled = options.aclEnabled && !options.disableLabels;
  return (request, _reply, done) => {
    const name = names.get(request.method);
    if (name !== undefined) {
      const identity = request.identity as AuthenticatedIdentity | undefined;
      if (!labelled || !identity) metrics.incr(name);
      else metrics.incr(name, 1, { identity: identity.label || request.ip });
    }
    done();
  };
}
