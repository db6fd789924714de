import type { FastifyInstance, HTTPMethods } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../../server-harness.ts";

interface Operation {
  parameters?: { in: string; name: string }[];
  requestBody?: { content: Record<string, { schema: unknown }> };
}
interface OpenApiDocument {
  openapi: string;
  info: { title: string; version: string };
  paths: Record<string, Record<string, Operation>>;
}

/**
 * Every method and URL the server routes, read from fastify's printRoutes
 * tree (a child line's text continues its parent's path). The tree of
 * common prefixes, not `commonPrefix: false`: that flat form prints a
 * wildcard route as a bare `*`, its prefix lost (find-my-way's
 * buildObjectTree), whereas here `*` is a child of its prefix's node. Lines
 * without methods are prefixes no route ends at. The server's routes are
 * added inside startServer, too early for an onRoute hook of the test's.
 * HEAD is left out: fastify adds it beside each GET on its own, and the
 * document has the GET.
 */
function registeredRoutes(app: FastifyInstance): { method: string; url: string }[] {
  const routes: { method: string; url: string }[] = [];
  const stack: string[] = [];
  for (const line of app.printRoutes().split("\n")) {
    const match = /^((?:│ {3}| {4})*)[├└]── (.*?)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (!match) continue;
    const depth = match[1]!.length / 4;
    stack.length = depth;
    const url = (stack[depth - 1] ?? "") + match[2]!;
    stack.push(url);
    for (const method of match[3]?.split(", ") ?? []) if (method !== "HEAD") routes.push({ method, url });
  }
  return routes;
}

/**
 * `/v1/node/:id` as OpenAPI writes it: `/v1/node/{id}`; a trailing wildcard,
 * `/v1/var/*`, as the `{path}` parameter that stands for the rest of the URL
 * (src/api/plugins/openapi.ts).
 */
const openApiPath = (url: string) => url.replace(/:([A-Za-z_]+)/g, "{$1}").replace(/\/\*$/, "/{path}");

describe("GET /v1/openapi.json", () => {
  let server: TestServer;
  let doc: OpenApiDocument;
  beforeAll(async () => {
    server = await startTestServer();
    const response = await server.call("/v1/openapi.json");
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^application\/json/);
    doc = (await response.json()) as OpenApiDocument;
  });
  afterAll(async () => server.stop());

  it("is an OpenAPI 3 document", () => {
    expect(doc.openapi).toMatch(/^3\.\d+\.\d+$/);
    expect(doc.info.title).toBe("chronomad HTTP API");
    expect(doc.info.version).toBe("v1");
    expect(Object.keys(doc.paths).length).toBeGreaterThan(0);
  });

  it("lists every route the server has, and only those", () => {
    const routes = registeredRoutes(server.http);
    // The parse above is checked against fastify's own lookup.
    for (const { method, url } of routes) {
      expect(server.http.hasRoute({ method: method as HTTPMethods, url }), `${method} ${url}`).toBe(true);
    }
    expect(routes.length).toBeGreaterThan(50);

    const documented = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.keys(ops).map((method) => `${method.toUpperCase()} ${path}`),
    );
    const served = routes.map(({ method, url }) => `${method} ${openApiPath(url)}`);
    expect(new Set(documented)).toEqual(new Set(served));
    // The parse reaches the wildcard routes, under their prefix.
    expect(served).toEqual(expect.arrayContaining(["GET /v1/var/{path}", "PATCH /v1/var/{path}"]));
  });

  it("names every path parameter, each declared by every operation of its path", () => {
    const wrong: string[] = [];
    for (const [path, ops] of Object.entries(doc.paths)) {
      const names = [...path.matchAll(/\{([^}]*)\}/g)].map((m) => m[1]!);
      for (const name of names) if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) wrong.push(`${path}: {${name}}`);
      for (const [method, op] of Object.entries(ops)) {
        const declared = (op.parameters ?? []).filter((p) => p.in === "path").map((p) => p.name);
        if (declared.sort().join() !== [...names].sort().join())
          wrong.push(`${method} ${path}: declares ${declared.join() || "none"}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it("documents a wildcard route as a path parameter that spans segments", async () => {
    expect(doc.paths["/v1/var/{path}"]?.get?.parameters).toContainEqual(
      expect.objectContaining({ in: "path", name: "path", required: true }),
    );
    // A value with "/" in it reaches the route as one without does.
    for (const path of ["matrix/var", "matrix"]) {
      const res = await server.call(`/v1/var/${path}`);
      expect(res.status, path).toBe(404);
      expect(await res.text()).toBe("variable not found");
    }
  });

  it("carries the routes' request schemas", () => {
    const nodes = doc.paths["/v1/nodes"]?.get;
    expect(nodes?.parameters?.map((p) => `${p.in}:${p.name}`)).toEqual(
      expect.arrayContaining(["query:per_page", "query:filter", "query:index", "query:at_index"]),
    );
    const upsert = doc.paths["/v1/namespace/{name}"]?.put;
    expect(upsert?.parameters).toEqual([expect.objectContaining({ in: "path", name: "name" })]);
    const body = upsert?.requestBody?.content["application/json"]?.schema as {
      properties: Record<string, unknown>;
      additionalProperties?: unknown;
    };
    expect(Object.keys(body.properties)).toEqual(expect.arrayContaining(["Name", "Description", "Meta"]));
    // Unknown body fields are the validator's business, not the document's.
    expect(body.additionalProperties).toBeUndefined();
  });
});
