/**
 * What a route asks of its caller before its handler runs: the first,
 * route-level ACL check, as Nomad's RPC handler for that route makes it. The
 * handler still makes the object-level checks (an allocation's own
 * namespace, rows filtered out of a list) from `request.identity`.
 *
 * Every route has a rule (src/acl/route-permissions.ts); a route registered
 * without one stops the server at start, so a new route cannot slip in
 * unguarded.
 */
export type RouteRule =
  /** No authentication at all (bootstrap, login, status, health, JWKS). */
  | { readonly kind: "public" }
  /** Any valid token, the anonymous one included (`/v1/acl/token/self`, whoami). */
  | { readonly kind: "any-token" }
  | { readonly kind: "management" }
  /**
   * One of `capabilities` in the request's namespace: `?namespace=` (Nomad's
   * default "default"); `*` passes when any namespace grants one.
   */
  | { readonly kind: "namespace"; readonly capabilities: readonly string[] }
  /** Nomad's agent, node, operator and plugin blocks. */
  | { readonly kind: "agent" | "node" | "operator"; readonly level: "read" | "write" }
  | { readonly kind: "plugin"; readonly level: "read" | "list" }
  /** Nomad 1.6's node_pool block; the pool is the `:name` path parameter, or any pool for lists. */
  | { readonly kind: "node-pool"; readonly level: "read" | "write" | "delete" }
  /** A client agent, by its node SecretID (client RPCs). */
  | { readonly kind: "client" }
  /**
   * The handler alone decides, from the identity, because the capability
   * depends on what the request names (each event-stream topic, each search
   * context). `anyOf` is what the gate still requires: at least one of them
   * (the same shapes as above); `why` says why the handler must finish it.
   */
  | { readonly kind: "handler"; readonly anyOf: readonly RouteRule[]; readonly why: string };

/** `METHOD /path` as fastify registers it (`:param` segments). */
export type RouteKey = `${"GET" | "HEAD" | "PUT" | "POST" | "DELETE" | "PATCH" | "OPTIONS"} /${string}`;
