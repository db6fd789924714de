import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROUTE_RULES } from "../../src/acl/route-permissions.ts";
import type { RouteKey, RouteRule } from "../../src/acl/route-rule.ts";
import { placeAlloc, TestNode } from "../api/node-fixtures.ts";
import { type AclServer, type AclToken, startAclServer } from "./acl-fixtures.ts";

/**
 * The ACL matrix, generated from the route table (src/acl/route-permissions.ts,
 * which the server refuses to start without an entry for every route): each
 * route is called with no token, with a token lacking what the route needs,
 * and with one holding it. Without a capability Nomad answers 403; with it,
 * anything but 401/403 (a 404 for an object the fixtures do not have, a 400
 * for a body the matrix does not send) and never a 5xx. The calls passed on
 * to a client agent answer exactly what they answer without one connected
 * (CLIENT_AGENT_CALL_SERVED), and four of them refuse as Nomad 1.6.1 does,
 * not with a 403 (CLIENT_AGENT_CALL_REFUSAL).
 */

/** Routes whose answer to a caller without capabilities is a filtered or self-describing answer, not a 403. */
const OPEN_TO_ANY_TOKEN: ReadonlySet<string> = new Set([
  "GET /v1/acl/whoami", // the caller's own identity
  "GET /v1/acl/policies", // only the policies linked to the caller's token
  "GET /v1/acl/roles", // only the roles linked to the caller's token
  "GET /v1/namespaces", // only the namespaces the caller holds a capability in
  "GET /v1/node/pools", // only the pools the caller may read
  "GET /v1/vars", // only the variables the caller may list (Variables.List filters, never refuses)
]);

/** Routes any real token may use for itself; the anonymous caller has none. */
const ANY_REAL_TOKEN: ReadonlySet<string> = new Set([
  "PUT /v1/acl/token/onetime",
  "POST /v1/acl/token/onetime",
]);

/**
 * Nomad answers these 400 to a request that is no WebSocket upgrade, before
 * any ACL check: the matrix cannot reach their ACL check over plain HTTP
 * (test/api/plugins/alloc-exec.test.ts covers it).
 */
const WEBSOCKET_ONLY = new Set(["GET /v1/client/allocation/:id/exec"]);

/**
 * Bodies for the routes that take the namespace (or all they need) from the
 * body: Nomad validates a body's shape before it authorizes, so an empty one
 * is a 400 whoever asks.
 */
function bodyFor(method: string, path: string): string | undefined {
  if (method === "GET" || method === "DELETE") return undefined;
  const job = {
    ID: "matrix",
    Name: "matrix",
    Type: "batch",
    Datacenters: ["dc1"],
    TaskGroups: [{ Name: "g", Tasks: [{ Name: "t", Driver: "exec", Config: { command: "true" } }] }],
  };
  if (
    path === "/v1/jobs" ||
    path === "/v1/job/:id" ||
    path === "/v1/job/:id/plan" ||
    path === "/v1/validate/job"
  ) {
    return JSON.stringify({ Job: job });
  }
  if (path === "/v1/job/:id/revert") return JSON.stringify({ JobID: "matrix", JobVersion: 0 });
  if (path === "/v1/job/:id/stable") return JSON.stringify({ JobID: "matrix", JobVersion: 0, Stable: true });
  if (path.startsWith("/v1/search")) return JSON.stringify({ Prefix: "m", Text: "m", Context: "jobs" });
  // Nomad's variableUpsert refuses a write without Items before the RPC checks the ACL.
  if (path === "/v1/var/*") return JSON.stringify({ Items: { k: "v" } });
  return "{}";
}

/**
 * The calls the server passes on to the client agent that runs an
 * allocation, or to the node named (src/api/plugins/client-fs.ts,
 * client-allocations.ts, client-stats.ts, node-meta.ts). The exec WebSocket
 * aside, which WEBSOCKET_ONLY covers.
 */
const isClientAgentCall = (key: string, path: string) =>
  path.startsWith("/v1/client/") && !WEBSOCKET_ONLY.has(key);

interface Answer {
  readonly status: number;
  readonly text: string;
}

/**
 * A client agent call's answer to a caller past the ACL gate. The matrix
 * connects no client agent, so with the capability a call gets as far as
 * looking for a session to the node, and no server has one: Nomad's 404
 * "No path to node" (src/api/forward-to-peers.ts). Any other answer means
 * the call stopped before it (a parameter check, an unknown node, the ACL
 * check).
 */
const NO_SESSION_TO_NODE: Answer = { status: 404, text: "No path to node" };

/**
 * Nomad writes the contents of cat and readat through helper/noxssrw, which
 * commits its 200 before the handler's error is written: each error of
 * theirs, "Permission denied" and "No path to node" included, is a 200
 * whose body is the error's text. Deliberate: Nomad 1.6.1 answers so.
 */
const ERRORS_AS_200 = new Set(["GET /v1/client/fs/cat/:id", "GET /v1/client/fs/readat/:id"]);

/**
 * Where a client agent call refuses a caller otherwise than with a 403, as
 * Nomad 1.6.1 does: cat and readat with a 200 (ERRORS_AS_200); the
 * streaming calls (FileSystem.Stream, FileSystem.Logs) send their
 * "Permission denied" without a code, which Nomad's HTTP layer answers 500
 * (command/agent/fs_endpoint.go).
 */
const CLIENT_AGENT_CALL_REFUSAL: ReadonlyMap<string, Answer> = new Map([
  ["GET /v1/client/fs/cat/:id", { status: 200, text: "Permission denied" }],
  ["GET /v1/client/fs/readat/:id", { status: 200, text: "Permission denied" }],
  ["GET /v1/client/fs/stream/:id", { status: 500, text: "Permission denied" }],
  ["GET /v1/client/fs/logs/:id", { status: 500, text: "Permission denied" }],
]);

const CLIENT_AGENT_CALL_SERVED = (key: string): Answer =>
  ERRORS_AS_200.has(key) ? { ...NO_SESSION_TO_NODE, status: 200 } : NO_SESSION_TO_NODE;

/**
 * The query a client agent call needs to pass its own parameter checks
 * (Nomad's 400s, made in its HTTP handler before any ACL check) and reach
 * the ACL check.
 */
function queryFor(key: string): string {
  switch (key) {
    case "GET /v1/client/fs/ls/:id":
      return "?path=/";
    case "GET /v1/client/fs/stat/:id":
    case "GET /v1/client/fs/cat/:id":
      return "?path=x";
    case "GET /v1/client/fs/readat/:id":
    case "GET /v1/client/fs/stream/:id":
      return "?path=x&offset=0";
    case "GET /v1/client/fs/logs/:id":
      return "?task=t&type=stdout&offset=0";
    // A server without a client of its own: without node_id, 400 "No local Node and node_id not provided".
    case "GET /v1/client/gc":
    case "GET /v1/client/stats":
    case "GET /v1/client/metadata":
    case "POST /v1/client/metadata":
      return `?node_id=${fixtures.clientNode.id}`;
    // Without type=csi Nomad's handler answers [] before the RPC and its check.
    case "GET /v1/volumes":
    case "GET /v1/plugins":
      return "?type=csi";
    default:
      return "";
  }
}

const same = (a: Answer, b: Answer) => a.status === b.status && a.text === b.text;
const show = (a: Answer) => `${a.status} ${JSON.stringify(a.text)}`;

/** Streams answer headers, then never end: the matrix reads the status and hangs up. */
const STREAMING = new Set(["GET /v1/event/stream", "GET /v1/agent/monitor"]);

interface Fixtures {
  readonly node: TestNode;
  readonly allocID: string;
  /**
   * The client agent calls' own node and allocation, which no other route
   * of the matrix names: a purge of `node` (PUT /v1/node/:id/purge) comes
   * before the write calls, and then they would stop at Nomad's 500
   * "Unknown node".
   */
  readonly clientNode: TestNode;
  readonly clientAllocID: string;
  readonly victimToken: AclToken;
  readonly victimRoleID: string;
}

let acl: AclServer;
let fixtures: Fixtures;
/** Secrets: a token for another namespace only, and one per rule that holds it. */
let lacking: string;
const holding = new Map<string, string>();

function paramValue(name: string, path: string): string {
  switch (name) {
    case "accessor":
      return fixtures.victimToken.AccessorID;
    case "profile":
      return "heap";
    case "method":
      return "Node.NoSuchMethod";
    case "name":
      if (path.startsWith("/v1/acl/policy")) return "victim";
      if (path.startsWith("/v1/acl/auth-method")) return "victim";
      if (path.startsWith("/v1/acl/role/name")) return "victim-role";
      return "default";
    default:
      if (path.startsWith("/v1/job/")) return "matrix";
      if (path.startsWith("/v1/allocation/")) return fixtures.allocID;
      if (path.startsWith("/v1/client/allocation/") || path.startsWith("/v1/client/fs/"))
        return fixtures.clientAllocID;
      if (path.startsWith("/v1/node/")) return fixtures.node.id;
      if (path.startsWith("/v1/acl/token/")) return fixtures.victimToken.AccessorID;
      if (path.startsWith("/v1/acl/role/")) return fixtures.victimRoleID;
      return randomUUID();
  }
}

/** A variable path for a trailing wildcard (`/v1/var/*`): two segments, as the route must take "/". */
const WILDCARD_VALUE = "matrix/var";

function concrete(path: string): string {
  return path
    .replace(/:([A-Za-z]+)/g, (_, name: string) => encodeURIComponent(paramValue(name, path)))
    .replace(/\/\*$/, `/${WILDCARD_VALUE}`);
}

/** A policy that grants what `rule` asks for, or "management" where only a management token will do. */
function grantFor(rule: RouteRule): string | "management" {
  switch (rule.kind) {
    case "namespace":
      return `namespace "default" { capabilities = ["${rule.capabilities[0]}"] }`;
    case "agent":
    case "node":
    case "operator":
      return `${rule.kind} { policy = "${rule.level}" }`;
    case "plugin":
      return `plugin { policy = "${rule.level}" }`;
    case "node-pool":
      return `node_pool "*" { policy = "${rule.level === "read" ? "read" : "write"}" }`;
    default:
      // management, and the handler rules whose full need only the handler knows.
      return "management";
  }
}

async function send(
  method: string,
  path: string,
  secret: string | undefined,
  body?: string,
): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (secret !== undefined) headers["X-Nomad-Token"] = secret;
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), 20_000);
  try {
    const res = await acl.s.call(path, {
      method,
      headers,
      body,
      signal: abort.signal,
    });
    if (STREAMING.has(`${method} ${path}`) || res.headers.get("content-type")?.includes("ndjson")) {
      abort.abort();
      return { status: res.status, text: "" };
    }
    return { status: res.status, text: await res.text() };
  } finally {
    clearTimeout(timer);
    abort.abort();
  }
}

// Reads first, then client RPCs (before a purge takes their node), other writes, deletes last.
const ORDER: Record<string, number> = { GET: 0, PUT: 2, POST: 2, PATCH: 2, DELETE: 3 };
const rank = (method: string, rule: RouteRule) => (rule.kind === "client" ? 1 : (ORDER[method] ?? 2));
const ROUTES = (Object.entries(ROUTE_RULES) as [RouteKey, RouteRule][])
  .map(([key, rule]) => {
    const [method, path] = key.split(" ") as [string, string];
    return { key, method, path, rule };
  })
  .sort((a, b) => rank(a.method, a.rule) - rank(b.method, b.rule));

describe("every route under ACLs", () => {
  beforeAll(async () => {
    acl = await startAclServer();
    await acl.policy("elsewhere", `namespace "elsewhere" { policy = "write" }`);
    lacking = (await acl.token(["elsewhere"])).SecretID;
    await acl.policy("victim", `namespace "victim" { policy = "read" }`);
    const victimToken = await acl.token(["victim"]);
    const role = (await (
      await acl.write("/v1/acl/role", { Name: "victim-role", Policies: [{ Name: "victim" }] })
    ).json()) as { ID: string };
    await acl.write("/v1/acl/auth-method", {
      Name: "victim",
      Type: "JWT",
      TokenLocality: "local",
      MaxTokenTTL: "1h",
      Config: { JWTValidationPubKeys: [], BoundAudiences: ["x"] },
    });
    await acl.write("/v1/jobs", {
      Job: {
        ID: "matrix",
        Name: "matrix",
        Type: "batch",
        Datacenters: ["dc1"],
        TaskGroups: [{ Name: "g", Tasks: [{ Name: "t", Driver: "exec", Config: { command: "true" } }] }],
      },
    });
    const node = new TestNode(acl.s);
    expect((await node.register()).status).toBe(200);
    expect((await node.heartbeat()).status).toBe(200);
    const alloc = await placeAlloc(acl.s, { NodeID: node.id });
    const clientNode = new TestNode(acl.s);
    expect((await clientNode.register()).status).toBe(200);
    expect((await clientNode.heartbeat()).status).toBe(200);
    const clientAlloc = await placeAlloc(acl.s, { NodeID: clientNode.id });
    fixtures = {
      node,
      allocID: alloc.ID,
      clientNode,
      clientAllocID: clientAlloc.ID,
      victimToken,
      victimRoleID: role.ID,
    };

    const grants = new Map<string, string>();
    for (const { rule } of ROUTES) {
      const grant = grantFor(rule);
      if (grant === "management" || grants.has(grant)) continue;
      const name = `grant-${grants.size}`;
      await acl.policy(name, grant);
      grants.set(grant, (await acl.token([name])).SecretID);
    }
    const management = (await (await acl.write("/v1/acl/token", { Type: "management" })).json()) as AclToken;
    for (const { key, rule } of ROUTES) {
      const grant = grantFor(rule);
      if (rule.kind === "client") holding.set(key, node.secret);
      else holding.set(key, grant === "management" ? management.SecretID : grants.get(grant)!);
    }
  }, 120_000);

  afterAll(async () => {
    await acl?.s.stop();
  });

  it("has rules for a real set of routes", () => {
    expect(ROUTES.length).toBeGreaterThan(150);
  });

  it("answers 403 without a token, 403 with a token lacking the capability, and serves one holding it", async () => {
    const problems: string[] = [];
    for (const { key, method, path, rule } of ROUTES) {
      const url = concrete(path) + queryFor(key);
      const body = bodyFor(method, path);
      const noneAnswer = await send(method, url, undefined, body);
      const withoutAnswer = await send(method, url, lacking, body);
      const withItAnswer = await send(method, url, holding.get(key), body);
      const [none, without, withIt] = [noneAnswer.status, withoutAnswer.status, withItAnswer.status];
      const open = rule.kind === "public" || OPEN_TO_ANY_TOKEN.has(key);
      const refusal = CLIENT_AGENT_CALL_REFUSAL.get(key);
      if (refusal) {
        for (const [who, answer] of [
          ["no token", noneAnswer],
          ["lacking token", withoutAnswer],
        ] as const) {
          if (!same(answer, refusal))
            problems.push(`${key}: ${who} → ${show(answer)}, want ${show(refusal)}`);
        }
      } else if (rule.kind === "client") {
        // Client RPCs prove a node: an ACL token, or none, is never one.
        if (none < 400 || without < 400)
          problems.push(`${key}: ${none}/${without} for a caller that is no node`);
      } else if (WEBSOCKET_ONLY.has(key)) {
        if (none !== 400 || without !== 400)
          problems.push(`${key}: ${none}/${without}, want 400 (no upgrade)`);
      } else if (ANY_REAL_TOKEN.has(key)) {
        if (none !== 403 || without === 403) problems.push(`${key}: ${none}/${without}, want 403/served`);
      } else if (open) {
        if (none === 403 || without === 403) problems.push(`${key}: open route answered ${none}/${without}`);
      } else {
        if (none !== 403) problems.push(`${key}: no token → ${none}, want 403`);
        if (without !== 403) problems.push(`${key}: lacking token → ${without}, want 403`);
      }
      if (withIt === 401 || withIt === 403) {
        problems.push(`${key}: holding token → ${withIt}`);
      }
      if (isClientAgentCall(key, path)) {
        const served = CLIENT_AGENT_CALL_SERVED(key);
        if (!same(withItAnswer, served))
          problems.push(`${key}: holding token → ${show(withItAnswer)}, want ${show(served)}`);
      }
      for (const [who, status] of [
        ["no token", none],
        ["lacking", without],
        ["holding", withIt],
      ] as const) {
        // A listed refusal was checked whole above, its deliberate 500 included.
        if (who !== "holding" && refusal) continue;
        if (status >= 500 && status !== 501) problems.push(`${key}: ${who} → ${status}`);
      }
    }
    expect(problems).toEqual([]);
  }, 600_000);
});
