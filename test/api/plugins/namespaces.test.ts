import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../../server-harness.ts";

const running: TestServer[] = [];
afterEach(async () => {
  for (const s of running.splice(0)) await s.stop();
});

async function start() {
  const s = await startTestServer();
  running.push(s);
  return s;
}

const send = (s: TestServer, path: string, method: string, body?: unknown) =>
  s.call(path, { method, body: body === undefined ? undefined : JSON.stringify(body) });

describe("/v1/namespace", () => {
  it("creates and updates a namespace named in the body, as Nomad's Namespaces().Register does", async () => {
    const s = await start();
    const put = await send(s, "/v1/namespace", "PUT", { Name: "web", Description: "front" });
    expect(put.status, await put.text()).toBe(200);
    const index = Number(put.headers.get("x-nomad-index"));
    expect(index).toBe(s.log.lastIndex());
    const post = await send(s, "/v1/namespace", "POST", { Name: "web", Description: "edge" });
    expect(post.status).toBe(200);
    const got = (await (await s.call("/v1/namespace/web")).json()) as Record<string, unknown>;
    expect(got).toMatchObject({ Name: "web", Description: "edge", CreateIndex: index });
    const list = (await (await s.call("/v1/namespaces")).json()) as { Name: string }[];
    expect(list.map((n) => n.Name)).toEqual(["default", "web"]);
  });

  it("refuses what Nomad refuses, with its words, and writes nothing", async () => {
    const s = await start();
    const before = s.log.lastIndex();
    const cases: [string, string, unknown, number, string][] = [
      [
        "/v1/namespace",
        "PUT",
        { Name: "*" },
        400,
        'Invalid namespace "*": 1 error occurred:\n\t* invalid name "*". Must match regex ^[a-zA-Z0-9-]{1,128}$\n\n',
      ],
      [
        "/v1/namespace",
        "PUT",
        {},
        400,
        'Invalid namespace "": 1 error occurred:\n\t* invalid name "". Must match regex ^[a-zA-Z0-9-]{1,128}$\n\n',
      ],
      ["/v1/namespace/web", "PUT", { Name: "other" }, 400, "Namespace name does not match request path"],
      ["/v1/namespace", "GET", undefined, 405, "Invalid method"],
      ["/v1/namespace", "DELETE", undefined, 405, "Invalid method"],
      ["/v1/namespace/ghost", "GET", undefined, 404, "Namespace not found"],
    ];
    for (const [path, method, body, status, text] of cases) {
      const res = await send(s, path, method, body);
      expect(res.status, `${method} ${path}`).toBe(status);
      expect(await res.text()).toBe(text);
    }
    expect(s.log.lastIndex()).toBe(before);
  });
});
