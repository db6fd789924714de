import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROUTE_RULES } from "../../src/acl/route-permissions.ts";
import type { RouteKey, RouteRule } from "../../src/acl/route-rule.ts";
import type { TestServer } from "../server-harness.ts";

/** Nomad's namespace capabilities (acl/policy.go NamespaceCapability*; reference §1.3), `deny` aside. */
const NAMESPACE_CAPABILITIES = new Set([
  "list-jobs",
  "parse-job",
  "read-job",
  "submit-job",
  "dispatch-job",
  "read-logs",
  "read-fs",
  "alloc-exec",
  "alloc-node-exec",
  "alloc-lifecycle",
  "sentinel-override",
  "csi-register-plugin",
  "csi-write-volume",
  "csi-read-volume",
  "csi-list-volume",
  "csi-mount-volume",
  "list-scaling-policies",
  "read-scaling-policy",
  "read-job-scaling",
  "scale-job",
  "submit-recommendation",
]);

const LEVELS: Record<string, readonly string[]> = {
  agent: ["read", "write"],
  node: ["read", "write"],
  operator: ["read", "write"],
  plugin: ["read", "list"],
  "node-pool": ["read", "write", "delete"],
};

/** What is wrong with `rule` (empty when nothing is); `nested` inside a handler's anyOf. */
function problems(rule: RouteRule, nested = false): string[] {
  switch (rule.kind) {
    case "public":
    case "client":
      // The gate lets these through untouched: inside anyOf they would void the gate.
      return nested ? [`${rule.kind} inside a handler's anyOf`] : [];
    case "any-token":
    case "management":
      return [];
    case "namespace": {
      const out = rule.capabilities.length === 0 ? ["a namespace rule without capabilities"] : [];
      for (const c of rule.capabilities) {
        if (!NAMESPACE_CAPABILITIES.has(c)) out.push(`unknown namespace capability ${JSON.stringify(c)}`);
      }
      if (new Set(rule.capabilities).size !== rule.capabilities.length) out.push("a capability named twice");
      return out;
    }
    case "agent":
    case "node":
    case "operator":
    case "plugin":
    case "node-pool":
      return LEVELS[rule.kind]!.includes(rule.level) ? [] : [`${rule.kind} level ${rule.level}`];
    case "handler": {
      if (nested) return ["a handler inside a handler's anyOf"];
      const out: string[] = [];
      if (rule.why.trim().length < 10) out.push("a handler rule without a why");
      if (rule.anyOf.length === 0) out.push("a handler rule with an empty anyOf");
      for (const r of rule.anyOf) out.push(...problems(r, true));
      return out;
    }
    default:
      return [`unknown kind ${JSON.stringify((rule as { kind: unknown }).kind)}`];
  }
}

const entries = Object.entries(ROUTE_RULES) as [RouteKey, RouteRule][];

/**
 * `/v1/job/:id` as the OpenAPI document writes it: `/v1/job/{id}`; and a
 * trailing wildcard, `/v1/var/*`, as the `{path}` parameter that stands for
 * the rest of the URL there (src/api/plugins/openapi.ts).
 */
const openApiPath = (path: string) => path.replace(/:([A-Za-z]+)/g, "{$1}").replace(/\/\*$/, "/{path}");

/**
 * A URL of a documented path: `x` for each parameter, and a variable path
 * of two segments for the wildcard, which the router must match across "/".
 */
const probeUrl = (path: string) => path.replace(/\/\{path\}$/, "/matrix/var").replace(/\{[^}]+\}/g, "x");

function splitKey(key: string): { method: string; path: string } {
  const space = key.indexOf(" ");
  return { method: key.slice(0, space), path: key.slice(space + 1) };
}

describe("ROUTE_RULES", () => {
  it("has a rule for each of Nomad's route families", () => {
    // A table that lost a block of entries fails here before anything else.
    expect(entries.length).toBeGreaterThan(150);
    for (const key of [
      "GET /v1/jobs",
      "PUT /v1/acl/bootstrap",
      "PUT /v1/rpc/Node.Register",
      "GET /v1/status/leader",
    ]) {
      expect(ROUTE_RULES[key as RouteKey], key).toBeDefined();
    }
  });

  it("keys every rule by METHOD and a fastify path, without HEAD (the gate reads HEAD as GET)", () => {
    const segment = /^(:[A-Za-z]+|[A-Za-z0-9._-]+)$/;
    // A fastify wildcard, the rest of the URL "/" included, as a last segment only.
    const wildcard = (s: string, i: number, all: string[]) => s === "*" && i === all.length - 1;
    for (const [key] of entries) {
      const { method, path } = splitKey(key);
      expect(["GET", "PUT", "POST", "DELETE", "PATCH", "OPTIONS"], key).toContain(method);
      // Besides the API, the history explorer's page: `/` (a redirect), `/ui` and its files.
      const page = path === "/" || path === "/ui" || path === "/ui/*";
      expect(path.startsWith("/v1/") || path.startsWith("/.well-known/") || page, key).toBe(true);
      if (path === "/") continue;
      const segments = path.slice(1).split("/");
      expect(
        segments.every((s, i, all) => segment.test(s) || wildcard(s, i, all)),
        `${key}: every segment a name or a :param, the last one maybe a *`,
      ).toBe(true);
      const params = segments.filter((s) => s.startsWith(":"));
      expect(new Set(params).size, `${key}: a param named twice`).toBe(params.length);
      // The document names a wildcard {path}: a :path of its own would read as one there.
      expect(params, `${key}: :path is the wildcard's name in the document`).not.toContain(":path");
    }
  });

  it("gives every route a valid rule: known capabilities and levels, handlers with a why and a gate", () => {
    const wrong = entries.flatMap(([key, rule]) => problems(rule).map((p) => `${key}: ${p}`));
    expect(wrong).toEqual([]);
  });

  it("checks a problem the validator is meant to catch (the checks can fail)", () => {
    expect(problems({ kind: "namespace", capabilities: ["read-jobs"] })).toEqual([
      'unknown namespace capability "read-jobs"',
    ]);
    expect(problems({ kind: "namespace", capabilities: ["deny"] })).toHaveLength(1);
    expect(problems({ kind: "handler", anyOf: [], why: "" })).toHaveLength(2);
    expect(problems({ kind: "handler", anyOf: [{ kind: "public" }], why: "the body decides" })).toHaveLength(
      1,
    );
    expect(problems({ kind: "plugin", level: "write" } as unknown as RouteRule)).toHaveLength(1);
  });

  it("rules PUT and POST alike, as Nomad's handlers take either, except where Nomad takes PUT or POST alone", () => {
    // Nomad's GarbageCollectRequest, ReconcileJobSummaries and AutopilotSetConfiguration accept PUT only.
    const putOnly = new Set([
      "/v1/system/gc",
      "/v1/system/reconcile/summaries",
      "/v1/operator/autopilot/configuration",
    ]);
    // Nomad's NodeMetaRequest accepts GET and POST only (command/agent/meta_endpoint.go): a PUT is 405.
    const postOnly = new Set(["/v1/client/metadata"]);
    for (const [key, rule] of entries) {
      const { method, path } = splitKey(key);
      if (method !== "PUT" && method !== "POST") continue;
      const other = ROUTE_RULES[`${method === "PUT" ? "POST" : "PUT"} ${path}` as RouteKey];
      if (putOnly.has(path)) {
        expect(method, `${path} takes PUT alone`).toBe("PUT");
        expect(other, `${path} takes PUT alone`).toBeUndefined();
        continue;
      }
      if (postOnly.has(path)) {
        expect(method, `${path} takes POST alone`).toBe("POST");
        expect(other, `${path} takes POST alone`).toBeUndefined();
        continue;
      }
      expect(other, `${key} without its ${method === "PUT" ? "POST" : "PUT"}`).toEqual(rule);
    }
  });

  it("keeps every rule immutable", () => {
    expect(Object.isFrozen(ROUTE_RULES)).toBe(true);
    for (const [, rule] of entries) expect(Object.isFrozen(rule)).toBe(true);
  });
});

describe("ROUTE_RULES against the routes a server registers", () => {
  let server: TestServer;
  /** The OpenAPI document's paths: every route, each with its methods (405 answers included). */
  let paths: Record<string, Record<string, unknown>>;
  beforeAll(async () => {
    // Loaded here, so that the table's own checks above run even while the server does not build.
    const { startTestServer } = await import("../server-harness.ts");
    server = await startTestServer();
    paths = ((await (await server.call("/v1/openapi.json")).json()) as { paths: typeof paths }).paths;
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("rules every route in the OpenAPI document; every other method there answers 405", async () => {
    const ruled = new Set(
      entries.map(([key]) => `${splitKey(key).method} ${openApiPath(splitKey(key).path)}`),
    );
    const unruled: string[] = [];
    for (const [path, operations] of Object.entries(paths)) {
      for (const method of Object.keys(operations).map((m) => m.toUpperCase())) {
        if (method === "HEAD" || ruled.has(`${method} ${path}`)) continue;
        // Not in the table: it must be one of refuseOtherMethods' answers.
        // Bounded: a real route without a rule might stream (an event or log stream) and never end.
        const answer = await server
          .call(probeUrl(path), { method, signal: AbortSignal.timeout(5_000) })
          .then(async (res) => ({ status: res.status, text: await res.text() }))
          .catch((err: Error) => ({ status: 0, text: err.message }));
        if (answer.status !== 405 || answer.text !== "Invalid method") {
          unruled.push(`${method} ${path} (${answer.status || answer.text})`);
        }
      }
    }
    expect(unruled).toEqual([]);
  });

  it("rules only routes the server has, with the server's own param names", () => {
    // The document, not fastify's hasRoute, which takes /v1/job/:name for /v1/job/:id.
    const stale = entries
      .map(([key]) => key)
      .filter((key) => {
        const { method, path } = splitKey(key);
        return paths[openApiPath(path)]?.[method.toLowerCase()] === undefined;
      });
    expect(stale).toEqual([]);
  });
});
