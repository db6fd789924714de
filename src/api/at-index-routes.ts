import type { RouteOptions } from "fastify";

/**
 * What each read route does with `?at_index=N` (src/api/view.ts): answer
 * from the tables as of index N, or refuse with 400 and the reason. Never
 * ignore it: an answer from the present to a question about the past is a
 * wrong answer that looks right.
 *
 * A route is "honoured" when every table its answer reads is
 * `request.view.tables` (or, for the state hash, `request.view.store`).
 * The answer's authorization is still decided now, by the caller's current
 * token. A route is "refused" when its answer is not state in the log: this
 * agent's configuration, process or connections, the election as it stands,
 * a live stream.
 *
 * Every GET route has an entry, or the server does not start (as every route
 * has an ACL rule in src/acl/route-permissions.ts); a new read cannot ignore
 * at_index by being forgotten. Other methods are writes, which at_index
 * never reaches (view.ts refuses it for them).
 */
export type AtIndexSupport =
  | { readonly kind: "honoured" }
  | { readonly kind: "refused"; readonly why: string };

export type ReadRouteKey = `GET /${string}`;

const HONOURED: AtIndexSupport = { kind: "honoured" };
const refused = (why: string): AtIndexSupport => ({ kind: "refused", why });

const NOT_IN_THE_LOG = "it describes this agent, not state the log holds";
const THE_ELECTION_NOW =
  "the servers are those taking part in the leader election now, not state the log holds";
const CONFIGURATION = "it answers the server's configuration, not state the log holds";
const FROM_THE_CLIENT = "it is answered by a client agent now, not state the log holds";

export const AT_INDEX_ROUTES: Readonly<Record<ReadRouteKey, AtIndexSupport>> = {
  // ---- no log state: this agent, its configuration, the election now, live streams ----
  "GET /v1/openapi.json": refused("it describes the API's routes, not state the log holds"),
  "GET /": refused("it redirects to the history explorer's page, not state the log holds"),
  "GET /ui": refused("it redirects to the history explorer's page, not state the log holds"),
  "GET /ui/*": refused("it serves the history explorer's files, not state the log holds"),
  "GET /v1/status/leader": refused(
    "it answers the leader this server sees now; the state hash at an index names that index's leader",
  ),
  "GET /v1/status/peers": refused(THE_ELECTION_NOW),
  "GET /v1/agent/health": refused("it reports this agent's health now"),
  "GET /v1/agent/self": refused(NOT_IN_THE_LOG),
  "GET /v1/agent/members": refused(THE_ELECTION_NOW),
  "GET /v1/agent/schedulers": refused("the scheduler workers are this agent's own, not state the log holds"),
  "GET /v1/agent/schedulers/config": refused(
    "the scheduler workers are this agent's own, not state the log holds",
  ),
  "GET /v1/agent/monitor": refused("it streams this agent's logs as they are written"),
  "GET /v1/agent/pprof/:profile": refused("it profiles this agent's process now"),
  "GET /v1/agent/host": refused("it reads this agent's host as it is now"),
  "GET /v1/regions": refused(CONFIGURATION),
  "GET /v1/metrics": refused("the metrics are this agent's counters now, not state the log holds"),
  "GET /v1/operator/raft/configuration": refused(THE_ELECTION_NOW),
  "GET /v1/operator/autopilot/configuration": refused(CONFIGURATION),
  "GET /v1/operator/autopilot/health": refused("it reports the servers' health now"),
  "GET /.well-known/openid-configuration": refused(CONFIGURATION),
  "GET /v1/acl/whoami": refused("it answers the identity this request was authenticated as, now"),
  "GET /v1/client/allocation/:id/exec": refused("a command runs in an allocation now, not in the past"),
  "GET /v1/client/fs/ls/:id": refused(FROM_THE_CLIENT),
  "GET /v1/client/fs/stat/:id": refused(FROM_THE_CLIENT),
  "GET /v1/client/fs/readat/:id": refused(FROM_THE_CLIENT),
  "GET /v1/client/fs/cat/:id": refused(FROM_THE_CLIENT),
  "GET /v1/client/fs/stream/:id": refused(FROM_THE_CLIENT),
  "GET /v1/client/fs/logs/:id": refused(FROM_THE_CLIENT),
  "GET /v1/client/allocation/:id/stats": refused(FROM_THE_CLIENT),
  "GET /v1/client/allocation/:id/checks": refused(FROM_THE_CLIENT),
  "GET /v1/client/allocation/:id/gc": refused("it collects an allocation on its client agent now"),
  "GET /v1/client/gc": refused("it collects allocations on a client agent now"),
  "GET /v1/client/stats": refused(FROM_THE_CLIENT),
  "GET /v1/client/metadata": refused(FROM_THE_CLIENT),
  // The same words as src/api/plugins/events.ts, whichever of the two answers first.
  "GET /v1/event/stream": refused("the stream starts after `index` (frames with a greater Index)"),

  // ---- answered from the tables as of the index ----
  "GET /.well-known/jwks.json": HONOURED,
  "GET /v1/operator/state-hash": HONOURED,
  "GET /v1/operator/scheduler/configuration": HONOURED,
  "GET /v1/operator/keyring/keys": HONOURED,
  "GET /v1/vars": HONOURED,
  // Opened with the keys this server holds now: the sealed data is the index's.
  "GET /v1/var/*": HONOURED,
  "GET /v1/namespaces": HONOURED,
  "GET /v1/namespace/:name": HONOURED,
  "GET /v1/evaluations": HONOURED,
  "GET /v1/evaluations/count": HONOURED,
  "GET /v1/evaluation/:id": HONOURED,
  "GET /v1/evaluation/:id/allocations": HONOURED,
  "GET /v1/nodes": HONOURED,
  "GET /v1/node/:id": HONOURED,
  "GET /v1/node/:id/allocations": HONOURED,
  "GET /v1/node/pools": HONOURED,
  "GET /v1/node/pool/:name": HONOURED,
  "GET /v1/node/pool/:name/jobs": HONOURED,
  "GET /v1/node/pool/:name/nodes": HONOURED,
  "GET /v1/allocations": HONOURED,
  "GET /v1/allocation/:id": HONOURED,
  "GET /v1/jobs": HONOURED,
  "GET /v1/job/:id": HONOURED,
  "GET /v1/job/:id/allocations": HONOURED,
  "GET /v1/job/:id/evaluations": HONOURED,
  "GET /v1/job/:id/versions": HONOURED,
  "GET /v1/job/:id/summary": HONOURED,
  "GET /v1/job/:id/deployments": HONOURED,
  "GET /v1/job/:id/deployment": HONOURED,
  "GET /v1/job/:id/submission": HONOURED,
  "GET /v1/job/:id/scale": HONOURED,
  "GET /v1/deployments": HONOURED,
  "GET /v1/deployment/:id": HONOURED,
  "GET /v1/deployment/allocations/:id": HONOURED,
  "GET /v1/services": HONOURED,
  "GET /v1/service/:name": HONOURED,
  "GET /v1/job/:id/services": HONOURED,
  "GET /v1/allocation/:id/services": HONOURED,
  "GET /v1/volumes": HONOURED,
  "GET /v1/volume/csi/:id": HONOURED,
  "GET /v1/volume/csi/:id/history": HONOURED,
  "GET /v1/plugins": HONOURED,
  "GET /v1/plugin/csi/:id": HONOURED,
  "GET /v1/scaling/policies": HONOURED,
  "GET /v1/scaling/policy/:id": HONOURED,
  "GET /v1/acl/policies": HONOURED,
  "GET /v1/acl/policy/:name": HONOURED,
  "GET /v1/acl/tokens": HONOURED,
  "GET /v1/acl/token/self": HONOURED,
  "GET /v1/acl/token/:accessor": HONOURED,
  "GET /v1/acl/roles": HONOURED,
  "GET /v1/acl/role/:id": HONOURED,
  "GET /v1/acl/role/name/:name": HONOURED,
  "GET /v1/acl/auth-methods": HONOURED,
  "GET /v1/acl/auth-method/:name": HONOURED,
  "GET /v1/acl/binding-rules": HONOURED,
  "GET /v1/acl/binding-rule/:id": HONOURED,
  // The audit trail as of the index: the entries with Index <= N.
  "GET /v1/allocation/:id/history": HONOURED,
  "GET /v1/node/:id/history": HONOURED,
  "GET /v1/job/:id/history": HONOURED,
  "GET /v1/evaluation/:id/history": HONOURED,
  "GET /v1/acl/token/:accessor/history": HONOURED,
  "GET /v1/acl/policy/:name/history": HONOURED,
  "GET /v1/acl/role/:id/history": HONOURED,
  "GET /v1/acl/auth-method/:name/history": HONOURED,
  "GET /v1/acl/binding-rule/:id/history": HONOURED,
};

/** Routes that only answer 405 (src/api/refuse-other-methods.ts) carry this in their config. */
interface RouteConfig {
  readonly methodRefusal?: boolean;
}

/** HEAD is GET without the body (fastify adds one beside each GET): it reads as GET does. */
const isRead = (method: string) => method === "GET" || method === "HEAD";

/** What `METHOD url` does with at_index; undefined for writes and for routes that answer only 405. */
export function atIndexSupport(method: string, url: string): AtIndexSupport | undefined {
  if (!isRead(method)) return undefined;
  return (AT_INDEX_ROUTES as Readonly<Record<string, AtIndexSupport>>)[`GET ${url}`];
}

/** The 400 text of a refused route (a GET: only reads are declared). */
export function atIndexRefusal(url: string, why: string): string {
  return `at_index is not supported by ${url}: ${why}`;
}

/**
 * At registration: every read route says what it does with at_index in
 * AT_INDEX_ROUTES, or the server does not start.
 */
export function requireAtIndexSupport(route: RouteOptions): void {
  if ((route.config as RouteConfig | undefined)?.methodRefusal) return;
  const methods = Array.isArray(route.method) ? route.method : [route.method];
  for (const method of methods) {
    if (isRead(method) && atIndexSupport(method, route.url) === undefined) {
      throw new Error(
        `route ${method} ${route.url} does not say whether it honours ?at_index: add it to src/api/at-index-routes.ts`,
      );
    }
  }
}
