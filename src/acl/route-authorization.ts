import type { FastifyRequest, RouteOptions } from "fastify";
import { ApiError } from "../api/api-error.ts";
import type { ApiContext } from "../api/context.ts";
import { ACL_DISABLED, enforceRouteRule } from "./route-gate.ts";
import { ROUTE_RULES } from "./route-permissions.ts";
import type { RouteKey, RouteRule } from "./route-rule.ts";

/** Routes that only answer 405 (src/api/refuse-other-methods.ts) carry this in their config. */
interface RouteConfig {
  readonly methodRefusal?: boolean;
}

const ruleKey = (method: string, url: string) => `${method === "HEAD" ? "GET" : method} ${url}` as RouteKey;

/** The rule of `METHOD url`, or undefined for a route nobody has ruled on. */
export function routeRule(method: string, url: string): RouteRule | undefined {
  return ROUTE_RULES[ruleKey(method, url)];
}

/**
 * At registration: every route has an ACL rule in src/acl/route-permissions.ts,
 * or the server does not start. A new route cannot go unguarded.
 */
export function requireRouteRules(route: RouteOptions): void {
  if ((route.config as RouteConfig | undefined)?.methodRefusal) return;
  const methods = Array.isArray(route.method) ? route.method : [route.method];
  for (const method of methods) {
    if (!routeRule(method, route.url)) {
      throw new Error(`route ${method} ${route.url} has no ACL rule in src/acl/route-permissions.ts`);
    }
  }
}

/**
 * Per request, right after authentication: with ACLs off the ACL routes
 * answer Nomad's 400 and everything else is open; with ACLs on the route's
 * rule decides (src/acl/route-gate.ts).
 */
export function authorizeRoute(ctx: ApiContext, request: FastifyRequest): void {
  // One read: fastify makes the object anew on each.
  const route = request.routeOptions;
  const url = route.url;
  if (url === undefined || (route.config as RouteConfig | undefined)?.methodRefusal) return;
  if (!ctx.config.aclEnabled) {
    if (url.startsWith("/v1/acl/")) throw ApiError.badRequest(ACL_DISABLED);
    return;
  }
  const rule = routeRule(request.method, url);
  // requireRouteRules made sure there is one; a route without is refused rather than left open.
  if (!rule) throw ApiError.forbidden();
  enforceRouteRule(rule, request.identity, request);
}
